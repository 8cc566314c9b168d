"""Checks of untrusted JSON at the boundary: a value of the expected type and range, or a
``Rejection`` that names the field and what was wrong. Nothing here raises anything else. A
rejection's words may quote what was rejected: they are redacted (``redact``) before anyone reads
them, so a secret written where a number belongs never reaches a log line or a reason."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sqs_redriver.protocol.redact import redact_untrusted


class Rejection(ValueError):
    """Input that failed validation: ``field`` names where, ``problem`` what was wrong; both, and
    the whole line (a secret may span the two), redacted."""

    def __init__(self, field: str, problem: str, *, subject: str = "valid") -> None:
        super().__init__(redact_untrusted(f"not {subject}: {field} {problem}"))
        self.field = redact_untrusted(field)
        self.problem = redact_untrusted(problem)

    def within(self, field: str, *, subject: str) -> Rejection:
        """The same rejection, of a field nested in ``field``."""
        nested = f"{field}.{self.field}" if self.field else field
        return Rejection(nested, self.problem, subject=subject)


class _NotAnInteger(str):
    """What JSON's floats and NaN/Infinity parse to: kept as text, refused by ``integer``."""


def load_json_object(text: str, field: str, *, max_bytes: int, max_depth: int) -> Mapping[str, Any]:
    """A JSON object of at most ``max_bytes`` UTF-8 bytes, nested at most ``max_depth`` deep."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise Rejection(field, "is not valid Unicode") from None
    if size > max_bytes:
        raise Rejection(field, f"is {size} bytes, more than {max_bytes}")
    depth = json_depth(text)
    if depth > max_depth:
        raise Rejection(field, f"nests {depth} deep, more than {max_depth}")
    try:
        payload = json.loads(text, parse_float=_NotAnInteger, parse_constant=_NotAnInteger)
    except ValueError as exc:  # JSONDecodeError, and ints past Python's digit limit
        raise Rejection(field, f"is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise Rejection(field, "is not a JSON object")
    return payload


def json_depth(text: str) -> int:
    """How deep the arrays and objects of JSON text nest (brackets inside strings not counted)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def integer(value: object, field: str, *, low: int, high: int) -> int:
    """A JSON integer (not a bool, a fraction, an exponent or NaN) within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Rejection(field, f"is {_shown(value)}, not an integer")
    if not low <= value <= high:
        raise Rejection(field, f"is {value}, outside {low}..{high}")
    return value


def text(value: object, field: str, *, max_chars: int, pattern: re.Pattern[str] | None = None) -> str:
    """A string of valid Unicode, at most ``max_chars`` long, matching ``pattern`` when given."""
    if not isinstance(value, str) or isinstance(value, _NotAnInteger):
        raise Rejection(field, f"is {_shown(value)}, not a string")
    if len(value) > max_chars:
        raise Rejection(field, f"is {len(value)} characters, more than {max_chars}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Rejection(field, "is not valid Unicode (a lone surrogate)") from None
    if pattern is not None and not pattern.fullmatch(value):
        raise Rejection(field, f"has characters outside {pattern.pattern}")
    return value


def array(value: object, field: str, *, max_items: int) -> list[Any]:
    """A JSON array of at most ``max_items`` items."""
    if not isinstance(value, list):
        raise Rejection(field, f"is {_shown(value)}, not an array")
    if len(value) > max_items:
        raise Rejection(field, f"has {len(value)} items, more than {max_items}")
    return value


def required(payload: Mapping[str, Any], field: str) -> Any:
    """The value of ``field``; a rejection naming it when it is missing."""
    if field not in payload:
        raise Rejection(field, "is missing")
    return payload[field]


def text_of(payload: Mapping[str, Any], field: str, **limits: Any) -> str:
    """The required string ``payload[field]``, checked as ``text`` does."""
    return text(required(payload, field), field, **limits)


def integer_of(payload: Mapping[str, Any], field: str, *, low: int, high: int) -> int:
    """The required integer ``payload[field]``, checked as ``integer`` does."""
    return integer(required(payload, field), field, low=low, high=high)


def _shown(value: object) -> str:
    """A short, inert description of a rejected value for a reason or a log line."""
    if isinstance(value, _NotAnInteger):
        return f"the number {str(value)[:24]}"
    if isinstance(value, bool | int | str):
        return ascii(value)[:40]
    return _JSON_TYPES.get(type(value), type(value).__name__)


_JSON_TYPES = {dict: "an object", list: "an array", type(None): "null"}
