"""JSON read and written with every number as it was: a message body the operator edits must not
have a number it holds rounded (``0.10000000000000000001`` or an amount's ``1.50`` through a float).

Strict as RFC 8259 has it: no NaN or Infinity, no number too large for a float (consumers parse
them as floats), no key twice; ValueError names what is wrong."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

SHOWN_KEY_CHARS = 40


def loads(text: str) -> Any:
    """``text`` as JSON, its non-integer numbers as ``Decimal`` (the literal's exact value)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_exact, object_pairs_hook=_unique)


def dumps(value: Any, *, indent: int | None = None, ensure_ascii: bool = False) -> str:
    """``value`` as JSON (``json.dumps``'s forms), a ``Decimal`` written as its exact literal."""
    return _dump(value, indent, ensure_ascii, 0)


def _dump(value: Any, indent: int | None, ensure_ascii: bool, level: int) -> str:
    if isinstance(value, Decimal):
        return str(value)
    if not isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=ensure_ascii)
    colon = ":" if indent is None else ": "
    items = (
        [
            json.dumps(key, ensure_ascii=ensure_ascii) + colon + _dump(item, indent, ensure_ascii, level + 1)
            for key, item in value.items()
        ]
        if isinstance(value, dict)
        else [_dump(item, indent, ensure_ascii, level + 1) for item in value]
    )
    opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
    if not items or indent is None:
        return opening + ",".join(items) + closing
    inner, outer = "\n" + " " * indent * (level + 1), "\n" + " " * indent * level
    return opening + inner + ("," + inner).join(items) + outer + closing


def _exact(text: str) -> Decimal:
    if not math.isfinite(float(text)):
        raise ValueError(f"the number {text[:24]} is too large")
    return Decimal(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            shown = key[:SHOWN_KEY_CHARS] + ("..." if len(key) > SHOWN_KEY_CHARS else "")
            raise ValueError(f"the key {json.dumps(shown)} is given twice")
        found[key] = value
    return found
