"""The edit's JSON: every number read and written as it was (never through a float), json.dumps's
forms otherwise, and anything that is not strict JSON refused with a ValueError."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.console.editing import Edited, exact_dumps, exact_loads, parse, render

numbers = st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**30), max_value=10**30)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | numbers | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


@given(values, st.sampled_from([None, 2]))
def test_what_is_written_reads_back_the_same_every_number_exact(value: Any, indent: int | None) -> None:
    assert exact_loads(exact_dumps(value, indent=indent)) == value


@given(values.filter(lambda v: not _has_decimal(v)), st.sampled_from([None, 2]))
def test_without_fractions_it_writes_what_json_dumps_writes(value: Any, indent: int | None) -> None:
    separators = (",", ":") if indent is None else (",", ": ")
    assert exact_dumps(value, indent=indent) == json.dumps(
        value, indent=indent, ensure_ascii=False, separators=separators
    )


def _has_decimal(value: Any) -> bool:
    if isinstance(value, Decimal):
        return True
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return any(_has_decimal(child) for child in children)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", "1e400", '{"a": 1, "a": 2}', "{"])
def test_what_is_not_strict_json_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        exact_loads(text)


def test_an_edited_body_keeps_the_numbers_the_operator_did_not_touch() -> None:
    original = Edited('{"amount": 1.50, "tiny": 0.10000000000000000001, "items": []}', {})
    document = render(original).replace('"items": []', '"items": [1]')

    edited = parse(document, original)

    assert edited.body == '{"amount":1.50,"tiny":0.10000000000000000001,"items":[1]}'
