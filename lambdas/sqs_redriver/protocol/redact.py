"""Text made safe to leave: secrets masked, length capped, or dropped. One redaction for the kit
and the re-driver alike.

Pure: text in, text out. Everything the kit writes from an exception (the mark's failure, its log
lines, the FAILURE# record, and so the re-driver's S3 archive, and the errors it lets out of a
record handler or a batch, ``errors``) goes through ``Redactor.redact``; the fingerprint hashes
``Redactor.mask``'s output, so a secret is neither shown nor hashed. The re-driver applies the
same built-in rules (``redact_untrusted``) where it reads text a sender could have written: the
error a dead letter of another service carries (``dead_letters``), the consumer failure a mark or a
FAILURE# record holds (``failure``), and every ``wire.Rejection``'s words, so no log line, reason,
record, archive field or parking-lot attribute shows what the rules mask.

The built-in rules mask what looks like an AWS access key id (``AKIA...``, ``ASIA...``), an AWS
secret access key (40 base64 characters after a key-ish label), a bearer token or an
``Authorization`` header's credentials, the password of a URL (``scheme://user:pass@host``, "/"
and "@" in it included), the value of a ``password=``/``pwd=``/``secret=``/``token=``/``api_key=``
-like pair (ODBC's ``{...}`` quoting included), a password in words (``PASSWORD hunter2``, ``the
password is hunter2``, ``IDENTIFIED BY hunter2``), a JSON Web Token's claims and signature, a PEM
private key, and GitHub, Slack (tokens and webhooks) and Stripe (secret and restricted) keys; the
kit's user adds patterns of their own. Only the secret part of a match is masked (a named group
``secret``, if the pattern has one, else the whole match), so the text still says what was wrong.
Built-in rules are matched at every start, overlapping matches included, so a value that swallows
the next label ("password password hunter2") does not hide the secret after it.

Every built-in pattern does work linear in the text whatever it holds: bounded quantifiers over
single characters only, each followed by what cannot start with a character it takes, or by a
fixed tail (the tests check these rules on every one); and only the first SCAN_LIMIT
characters are read: a message is capped far below that anyway.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MASK = "<redacted>"
ELLIPSIS = "…"
# Characters of exception text read at all; what follows is dropped before anything is matched.
SCAN_LIMIT = 8192
# Rounds of masking and capping until the text stops changing (two in practice: one that masks,
# one that finds nothing more); text that never settles is replaced by MASK.
MAX_PASSES = 4
SECRET_GROUP = "secret"
REPLACEMENT_CHARACTER = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_MASKS = re.compile(re.escape(MASK))


class RedactionPatternError(ValueError):
    """A user's redaction pattern is not a valid regular expression."""


_PAIR_LABELS = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|auth[_-]?key|access[_-]?key"
    r"|private[_-]?key|credential"
)
# Words that, after "password", say something about it instead of being it ("password
# authentication failed for user", "password must be 8 characters", "the password is required").
_ABOUT_A_PASSWORD = (
    r"a|an|and|auth|authentication|can|cannot|change|changed|complexity|could|did|does|empty|expired"
    r"|field|for|from|had|has|hash|in|incorrect|invalid|is|length|mismatch|missing|must|no|not|of|on"
    r"|or|passphrase|passwd|password|policy|required|requirements|reset|should|the|to|too|was|will|with"
    r"|wrong"
)
# A value: quoted (spaces allowed), braced as ODBC quotes it ({...;...}), or up to a separator.
_VALUE = r"(?P<secret>\{[^}\n]{0,4096}\}?|\"[^\"\n]{0,4096}\"?|'[^'\n]{0,4096}'?|[^\s,;&'\"}\])]{1,4096})"
BUILTIN_PATTERNS: tuple[re.Pattern[str], ...] = (
    # AWS access key ids, wherever they stand.
    re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[A-Z0-9]{16}"),
    # AWS secret access keys: 40 base64 characters shortly after a label ending in "key" or "secret".
    re.compile(r"(?i)(?:key|secret)\W{1,6}(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"),
    # Authorization headers, whatever their scheme, and bearer tokens anywhere.
    re.compile(
        r"(?i)authorization[\"']?\s{0,8}[:=]\s{0,8}[\"']?(?:(?:bearer|basic|digest|token)\s{1,8})?"
        r"(?P<secret>[^\s,;'\"()\[\]{}]{1,4096})"
    ),
    re.compile(r"(?i)bearer\s{1,8}(?P<secret>[A-Za-z0-9\-._~+/]{1,4096}={0,2})"),
    # The password of a URL's user information: up to the last "@" before a space or a quote, so a
    # password holding "/", ":" or "@" (not percent-encoded, as people write them) is masked whole.
    re.compile(r"(?i)[a-z][a-z0-9+.\-]{0,31}://[^\s:/@]{0,256}:(?P<secret>[^\s\"'<>]{1,256})@"),
    # password=..., "api_key": "...", X-Auth-Token: ..., Pwd={...} (ODBC).
    re.compile(rf"(?i)(?:{_PAIR_LABELS})[\w.\-]{{0,64}}[\"']?\s{{0,8}}[:=]\s{{0,8}}{_VALUE}"),
    # "PASSWORD hunter2", "the password is hunter2", "IDENTIFIED BY 'hunter2'".
    re.compile(
        r"(?i)(?:password|passwd|passphrase|identified\s{1,8}by)\s{1,8}(?:(?:is|was):?\s{1,8})?"
        rf"(?!(?:{_ABOUT_A_PASSWORD})\b)"
        r"(?P<secret>\"[^\"\n]{1,256}\"?|'[^'\n]{1,256}'?|[^\s\"',;]{1,256})"
    ),
    # JSON Web Tokens: the header (it only names the algorithm) kept, the claims and signature masked.
    re.compile(r"eyJ[A-Za-z0-9_-]{4,4096}\.(?P<secret>ey[A-Za-z0-9_-]{4,4096}\.[A-Za-z0-9_-]{0,4096})"),
    # PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK): all up to the next five dashes
    # (the END line), or to the end of the text when the key was cut.
    re.compile(
        r"-----BEGIN(?: [A-Z0-9]{1,16})?(?: [A-Z0-9]{1,16})? PRIVATE KEY(?: BLOCK)?-----"
        r"(?P<secret>[\s\S]{1,8192}?)(?=-----|\Z)"
    ),
    # GitHub tokens: personal (classic and fine-grained), OAuth, user-to-server, server-to-server, refresh.
    re.compile(r"(?:gh[pousr]|github_pat)_(?P<secret>[A-Za-z0-9_]{16,255})"),
    # Slack tokens (bot, user, app, legacy, configuration) and incoming webhooks, with or without
    # their host (a requests error names the host and the path apart).
    re.compile(r"(?:xox[abeoprs](?:\.xox[bp])?|xapp)-(?P<secret>[A-Za-z0-9-]{8,256})"),
    re.compile(r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/+-]{8,256})"),
    re.compile(r"/services/T[A-Z0-9]{6,16}/B[A-Z0-9]{6,16}/(?P<secret>[A-Za-z0-9]{8,64})"),
    # Stripe secret and restricted keys, live and test (publishable pk_ keys are public).
    re.compile(r"[rs]k_(?:live|test)_(?P<secret>[A-Za-z0-9]{8,256})"),
)


# Words every match of a built-in rule holds, in lower case (its literal part: a key id's prefix,
# a label, "://", a token's prefix): on ASCII text a rule runs only when the text holds one, so
# text with nothing secret-like costs a few substring checks instead of a scan by every rule (the
# re-driver reads one per message). Other text (where re's case-insensitive matching reaches
# beyond lower(): "\u017f" is an "s" to it) goes through every rule. Tested on every rule.
TRIGGERS: dict[re.Pattern[str], tuple[str, ...]] = dict(
    zip(
        BUILTIN_PATTERNS,
        (
            ("akia", "asia", "abia", "acca", "aida", "aroa"),
            ("key", "secret"),
            ("authorization",),
            ("bearer",),
            ("://",),
            ("pass", "pwd", "secret", "token", "key", "credential"),
            ("pass", "identified"),
            ("eyj",),
            ("-----begin",),
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
            ("xox", "xapp-"),
            ("hooks.slack.com/",),
            ("/services/",),
            ("k_live_", "k_test_"),
        ),
        strict=True,
    )
)
_TRIGGER_WORDS = frozenset(word for words in TRIGGERS.values() for word in words)


def compile_patterns(patterns: Iterable[str | re.Pattern[str]]) -> tuple[re.Pattern[str], ...]:
    """The user's patterns compiled; RedactionPatternError names the first invalid one."""
    compiled = []
    for number, pattern in enumerate(patterns, start=1):
        if isinstance(pattern, re.Pattern):
            compiled.append(pattern)
            continue
        try:
            compiled.append(re.compile(pattern))
        except (re.error, TypeError) as exc:
            raise RedactionPatternError(
                f"pattern {number} ({pattern!r}) is not a valid regular expression: {exc}"
            ) from None
    return tuple(compiled)


@dataclass(frozen=True)
class Redactor:
    """How exception text leaves the consumer: masked by the built-in and ``extra_patterns``,
    capped at ``max_chars``, or dropped (``drop_text``: the kit keeps only the exception's class)."""

    max_chars: int = 240
    drop_text: bool = False
    extra_patterns: tuple[re.Pattern[str], ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.max_chars, bool) or not isinstance(self.max_chars, int) or self.max_chars < 1:
            raise ValueError(f"max_chars must be a positive integer, got {self.max_chars!r}")

    @property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        return BUILTIN_PATTERNS + self.extra_patterns

    def redact(self, text: str) -> str:
        """``text`` as it may leave the consumer: "" when dropped, else masked and capped, and
        stable (redacting it again changes nothing)."""
        if self.drop_text:
            return ""
        if len(text) <= self.max_chars and not self.extra_patterns and not _builtin_candidates(text):
            return text  # ASCII without a word any built-in rule needs: nothing to mask, nor to cut
        current = _head(text)
        for _ in range(MAX_PASSES):
            following = cap(self.mask(current), self.max_chars)
            if following == current:
                return current
            current = following
        return cap(MASK, self.max_chars)

    def mask(self, text: str) -> str:
        """``text`` (its first SCAN_LIMIT characters) with every secret replaced by MASK; not capped."""
        text = _head(text)
        masks = [match.span() for match in _MASKS.finditer(text)] if MASK in text else []
        spans = [_widen(span, masks) for span in self._secret_spans(text) if not _within(span, masks)]
        if not spans:
            return text
        pieces, position = [], 0
        for start, end in _merged(spans):
            pieces += [text[position:start], MASK]
            position = end
        return "".join([*pieces, text[position:]])

    def _secret_spans(self, text: str) -> Iterable[tuple[int, int]]:
        for pattern in _builtin_candidates(text):
            yield from _spans(_overlapping(pattern, text), pattern)
        for pattern in self.extra_patterns:
            yield from _spans(pattern.finditer(text), pattern)


def redact_untrusted(text: str, max_chars: int = SCAN_LIMIT) -> str:
    """Text the re-driver read from what a sender may write (a dead letter's error, a mark's or a
    FAILURE# record's failure, a rejected value), as it may be shown anywhere: masked by the
    built-in rules and capped at ``max_chars``; stable (redacting it again changes nothing)."""
    return _untrusted(max_chars).redact(text)


@functools.cache
def _untrusted(max_chars: int) -> Redactor:
    return Redactor(max_chars=max_chars)


def _builtin_candidates(text: str) -> Iterable[re.Pattern[str]]:
    """The built-in rules that may match ``text``: on ASCII text, those whose TRIGGERS it holds."""
    if not text.isascii():
        return BUILTIN_PATTERNS
    lowered = text.lower()
    found = {word for word in _TRIGGER_WORDS if word in lowered}
    if not found:
        return ()
    return [pattern for pattern, words in TRIGGERS.items() if not found.isdisjoint(words)]


def _overlapping(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """Every match of ``pattern``, one per start, overlapping ones included: a secret is found even
    right after a match that took its label as a value ("password PASSWORD hunter2"). As many
    attempts as ``finditer`` makes when nothing matches, so the work stays linear."""
    position = 0
    while (match := pattern.search(text, position)) is not None:
        yield match
        position = match.start() + 1


def _spans(matches: Iterable[re.Match[str]], pattern: re.Pattern[str]) -> Iterator[tuple[int, int]]:
    group = SECRET_GROUP if SECRET_GROUP in pattern.groupindex else 0
    for match in matches:
        start, end = match.span(group)
        if start < end:
            yield start, end


def cap(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` characters, the last one an ellipsis when it was cut."""
    if len(text) <= max_chars:
        return text
    return text[: max_chars - 1] + ELLIPSIS


def _head(text: str) -> str:
    """The first SCAN_LIMIT characters, without the word the limit cut through (no partial secret)
    and with lone surrogates (text no UTF-8 encoder takes) replaced by U+FFFD."""
    if len(text) > SCAN_LIMIT:
        end = SCAN_LIMIT - len(ELLIPSIS)
        while end and not text[end].isspace():
            end -= 1
        text = text[:end] + ELLIPSIS
    return text if text.isascii() else _SURROGATE.sub(REPLACEMENT_CHARACTER, text)


def _within(span: tuple[int, int], masks: list[tuple[int, int]]) -> bool:
    return any(start <= span[0] and span[1] <= end for start, end in masks)


def _widen(span: tuple[int, int], masks: list[tuple[int, int]]) -> tuple[int, int]:
    """``span`` grown over any mask it overlaps, so a mask is replaced whole or not at all."""
    start, end = span
    for mask_start, mask_end in masks:
        if mask_start < end and start < mask_end:
            start, end = min(start, mask_start), max(end, mask_end)
    return start, end


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
