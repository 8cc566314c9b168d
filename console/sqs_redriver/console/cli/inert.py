"""Text from outside printed inertly: never read as rich markup (see shown.py for the characters)."""

from __future__ import annotations

from rich.text import Text

from sqs_redriver.console.shown import inert_str


def inert(text: object, *, multiline: bool = False, style: str = "") -> Text:
    """Text that came from a message, a consumer or a record, made safe to print: a rich ``Text``
    (never read as markup, so ``[link=...]`` or ``[/x]`` print as typed) of ``inert_str``."""
    return Text(inert_str(str(text), multiline=multiline), style=style)
