"""Validated readers of one DynamoDB item's attributes: a value within its limits, or
``CorruptRecord`` naming the record's key, the field and what was wrong."""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from sqs_redriver.protocol.keys import RecordKind, kind_of
from sqs_redriver.protocol.limits import (
    MAX_CLOCK_SKEW_SECONDS,
    MAX_EPOCH_SECONDS,
    RECORD_MAX_JSON_CHARS,
    RECORD_MAX_NAME_CHARS,
)

Item = Mapping[str, Any]


class CorruptRecord(ValueError):
    """A state record that fails validation: its key, the field at fault, and the problem."""

    def __init__(self, key: str, field: str, problem: str) -> None:
        super().__init__(f"corrupt state record {key[:200]!r}: {field}: {problem}")
        self.key = key
        self.field = field
        self.problem = problem

    @property
    def kind(self) -> RecordKind | None:
        return kind_of(self.key)


def item_key(item: Item) -> str:
    """The item's partition key (every item read by key has one)."""
    value = item.get("pk") if isinstance(item, Mapping) else None
    key = value.get("S") if isinstance(value, Mapping) else None
    if not isinstance(key, str):
        raise CorruptRecord("?", "pk", "not a string key")
    return key


def _typed(item: Item, name: str, type_code: str, key: str) -> Any:
    value = item.get(name)
    if value is None:
        raise CorruptRecord(key, name, "missing")
    if not isinstance(value, Mapping) or type_code not in value:
        raise CorruptRecord(key, name, f"not of type {type_code}")
    return value[type_code]


def number(item: Item, name: str, key: str, *, low: int, high: int) -> int:
    """An integer attribute (type N) within ``low``..``high``."""
    raw = _typed(item, name, "N", key)
    return integer(raw, name, key, low=low, high=high)


def integer(raw: object, name: str, key: str, *, low: int, high: int) -> int:
    """``raw`` (a DynamoDB number's string, or a JSON number) as an integer within ``low``..``high``."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | Decimal):
        raise CorruptRecord(key, name, "not a number")
    if len(str(raw)) > 40:
        raise CorruptRecord(key, name, f"outside {low}..{high}")
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise CorruptRecord(key, name, "not a number") from None
    if not value.is_finite() or value != value.to_integral_value():
        raise CorruptRecord(key, name, "not a whole number")
    if not low <= value <= high:
        raise CorruptRecord(key, name, f"outside {low}..{high}")
    return int(value)


def epoch(item: Item, name: str, key: str, *, now: int, ahead: int = MAX_CLOCK_SKEW_SECONDS) -> int:
    """A time in epoch seconds, not later than ``now`` + ``ahead`` (a later one is forged)."""
    return number(item, name, key, low=0, high=min(now + ahead, MAX_EPOCH_SECONDS))


def text(
    item: Item, name: str, key: str, *, max_chars: int = RECORD_MAX_NAME_CHARS, empty: bool = False
) -> str:
    """A string attribute (type S) of at most ``max_chars`` characters, valid Unicode."""
    value = _typed(item, name, "S", key)
    return checked_text(value, name, key, max_chars=max_chars, empty=empty)


def checked_text(value: object, name: str, key: str, *, max_chars: int, empty: bool = False) -> str:
    """``value`` as a string of at most ``max_chars`` characters (non-empty unless ``empty``)."""
    if not isinstance(value, str):
        raise CorruptRecord(key, name, "not a string")
    if len(value) > max_chars:
        raise CorruptRecord(key, name, f"longer than {max_chars} characters")
    if not value and not empty:
        raise CorruptRecord(key, name, "empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise CorruptRecord(key, name, "not valid Unicode") from None
    return value


def values(item: Item, name: str, key: str, *, max_items: int) -> list[Any]:
    """A list attribute (type L) of at most ``max_items`` elements."""
    raw = _typed(item, name, "L", key)
    if not isinstance(raw, list):
        raise CorruptRecord(key, name, "not a list")
    if len(raw) > max_items:
        raise CorruptRecord(key, name, f"more than {max_items} elements")
    return raw


def element(value: object, type_code: str, name: str, key: str) -> Any:
    """One element of a list attribute, of ``type_code``."""
    if not isinstance(value, Mapping) or type_code not in value:
        raise CorruptRecord(key, name, f"an element not of type {type_code}")
    return value[type_code]


def json_object(raw: str, name: str, key: str) -> dict[str, Any]:
    """A JSON object of at most RECORD_MAX_JSON_CHARS characters: no NaN or Infinity, numbers
    as int or Decimal (never a float that overflows), nesting within Python's recursion limit."""
    if len(raw) > RECORD_MAX_JSON_CHARS:
        raise CorruptRecord(key, name, f"longer than {RECORD_MAX_JSON_CHARS} characters")
    try:
        parsed = json.loads(raw, parse_float=Decimal, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise CorruptRecord(key, name, "not JSON") from None
    if not isinstance(parsed, dict):
        raise CorruptRecord(key, name, "not a JSON object")
    return parsed


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a record may hold")


def expired(item: Item, key: str, *, now: int) -> bool:
    """Whether the item's TTL passed (TTL deletion lags by days; an expired record must not
    count). An item without ``expires_at`` never expires; a corrupt one raises."""
    if "expires_at" not in item:
        return False
    return number(item, "expires_at", key, low=0, high=MAX_EPOCH_SECONDS) <= now
