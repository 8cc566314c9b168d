"""Text from outside made safe to show: whatever a message, a consumer or a record says reaches a
terminal or a page as characters to read, never as escape sequences to act on (``inert_str``; as a
rich ``Text``, never read as markup: ``inert``). Pages escape HTML on top (their templates
autoescape). With the words the tool and its pages say times and lists in (``when``, ``duration``,
``age``, ``some``), and long text cut short (``clipped``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from rich.text import Text

# How many names an error lists (of the groups, fingerprints or messages there are).
NAMES_SHOWN = 10
# Shown as their escapes, as repr shows them; everything else (printable, by str.isprintable) as is.
SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def inert_str(text: str, *, multiline: bool = False) -> str:
    """``text`` with every character a terminal could act on or hide (C0 and C1 controls, escape
    sequences' ESC, bidi overrides, zero-width and other format characters, line separators,
    surrogates: whatever ``str.isprintable`` rejects) replaced by its visible escape (``\\x1b``,
    ``\\u202e``); ``multiline`` keeps newlines (a message body)."""
    if text.isprintable():
        return text
    if multiline:
        return "\n".join(inert_str(line) for line in text.split("\n"))
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    if char in SHORT_ESCAPES:
        return SHORT_ESCAPES[char]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def clipped(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars``, saying how much was left out (a payload may be a megabyte)."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n... ({len(text) - max_chars} more characters)"


def some(names: Sequence[str], shown: int = NAMES_SHOWN) -> str:
    """``a, b, c and 12 more``: the first ``shown`` of ``names``, inert, for a line of text."""
    listed = ", ".join(inert_str(name) for name in names[:shown])
    rest = len(names) - shown
    return f"{listed} and {rest} more" if rest > 0 else listed


def when(epoch: int, now: int) -> str:
    """``2026-11-23 19:40:05Z (3m ago)``."""
    if not epoch:
        return "-"
    stamp = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return f"{stamp} ({duration(now - epoch)} ago)"


def duration(seconds: int) -> str:
    """``45s``, ``12m``, ``3h20m``, ``2d4h``."""
    if seconds < 0:
        return f"-{duration(-seconds)}"
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86_400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86_400}d{seconds % 86_400 // 3600}h"


def age(epoch: int, now: int) -> str:
    """``3h20m ago``."""
    return f"{duration(now - epoch)} ago" if epoch else "-"


def inert(text: object, *, multiline: bool = False, style: str = "") -> Text:
    """Text that came from a message, a consumer or a record, made safe to print: a rich ``Text``
    (never read as markup, so ``[link=...]`` or ``[/x]`` print as typed) of ``inert_str``."""
    return Text(inert_str(str(text), multiline=multiline), style=style)
