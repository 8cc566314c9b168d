"""sqs_redriver.protocol.mark: any text in, a valid mark or a rejection that names the field, never
another exception; and the clock rule a run holds marks to."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, from_sqs, string_attribute
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.limits import (
    EARLIEST_MARK_TIME,
    IDENTITY_PATTERN,
    MAX_CLOCK_SKEW_SECONDS,
    MAX_COUNT,
    MAX_IDENTITY_CHARS,
    MAX_MARK_BYTES,
    MAX_MARK_HISTORY,
    MAX_MARK_JSON_DEPTH,
)
from sqs_redriver.protocol.mark import Mark, held_to_clock, read_mark, read_parked
from sqs_redriver.protocol.wire import Rejection, json_depth

NOW = 1_800_000_000
VALID = {"id": "id-1", "n": 1, "first": NOW - 100, "at": [NOW - 50]}
ERR = {
    "kind": "transient",
    "class": "Timeout",
    "msg": "slow",
    "fp": "0123abcd",
    "at": NOW - 10,
    "try": 2,
    "src": "",
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None), max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)
# Marks of the right shape whose fields may hold anything JSON can.
mark_like = st.fixed_dictionaries(
    {},
    optional=dict.fromkeys(("id", "n", "first", "at", "err", "v", "p", "rp", "s", "ed"), json_values),
).map(lambda fields: {**VALID, **fields})


def assert_well_formed(result: tuple[Mark | None, Rejection | None]) -> None:
    mark, rejection = result
    assert mark is not None or rejection is not None
    if rejection is not None:
        assert rejection.field and rejection.problem and str(rejection).startswith("not a re-drive mark")
    if mark is not None:
        assert IDENTITY_PATTERN.fullmatch(mark.identity) and len(mark.identity) <= MAX_IDENTITY_CHARS
        assert 0 <= mark.count <= MAX_COUNT and len(mark.redriven_at) <= MAX_MARK_HISTORY
        assert read_mark(mark.to_json()) == (mark, None)  # what it parsed, it writes back the same


@given(st.text(alphabet=st.characters(codec=None)))
def test_any_text_is_a_mark_or_a_named_rejection(text: str) -> None:
    assert_well_formed(read_mark(text))


@given(st.binary())
def test_any_bytes_decoded_are_a_mark_or_a_named_rejection(raw: bytes) -> None:
    assert_well_formed(read_mark(raw.decode("utf-8", "surrogateescape")))


@given(mark_like)
def test_any_json_in_a_marks_fields_is_a_mark_or_a_named_rejection(fields: dict[str, Any]) -> None:
    assert_well_formed(read_mark(json.dumps(fields, allow_nan=True)))


@given(st.one_of(st.none(), st.integers(), st.binary(), st.lists(st.integers())))
def test_anything_but_text_is_rejected_as_the_whole_mark(value: object) -> None:
    assert read_mark(value)[0] is None


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ('{"id":"x","n":NaN,"first":0,"at":[]}', "n", "the number NaN, not an integer"),
        ('{"id":"x","n":0,"first":Infinity,"at":[]}', "first", "the number Infinity, not an integer"),
        ('{"id":"x","n":0,"first":0,"at":[1e400]}', "at[0]", "the number 1e400, not an integer"),
        ('{"id":"x","n":1.5,"first":0,"at":[]}', "n", "not an integer"),
        ('{"id":"x","n":true,"first":0,"at":[]}', "n", "not an integer"),
        ('{"id":"x","n":-1,"first":0,"at":[]}', "n", "outside 0.."),
        ('{"id":"\\ud800","n":0,"first":0,"at":[]}', "id", "not valid Unicode"),
        ('{"id":"a/b","n":0,"first":0,"at":[]}', "id", "characters outside"),
        ('{"n":0,"first":0,"at":[]}', "id", "is missing"),
        ('{"id":"x","n":0,"first":0,"at":[],"rp":[[1]]}', "rp[0]", "not [replayed_at, count]"),
        ("[" * 5000 + "]" * 5000, "mark", "bytes, more than"),
        ("[" * 100 + "]" * 100, "mark", f"more than {MAX_MARK_JSON_DEPTH}"),
        ("{oops", "mark", "is not JSON"),
        ("[]", "mark", "not a JSON object"),
    ],
)
def test_hostile_marks_are_rejected_naming_the_field(text: str, field: str, problem: str) -> None:
    mark, rejection = read_mark(text)
    assert mark is None and rejection is not None
    assert rejection.field == field and problem in rejection.problem


def test_an_identity_too_long_for_the_keys_built_from_it_is_rejected() -> None:
    mark, rejection = read_mark(json.dumps({**VALID, "id": "x" * (MAX_IDENTITY_CHARS + 1)}))
    assert mark is None and rejection is not None and rejection.field == "id"


def test_a_history_longer_than_any_limit_allows_is_rejected() -> None:
    at = [NOW] * (MAX_MARK_HISTORY + 1)
    mark, rejection = read_mark(json.dumps({**VALID, "at": at}))
    assert mark is None and rejection is not None and rejection.field == "at"


def test_a_mark_over_its_byte_budget_is_rejected() -> None:
    mark, rejection = read_mark(json.dumps({**VALID, "pad": "x" * MAX_MARK_BYTES}))
    assert mark is None and rejection is not None and rejection.field == "mark"


@pytest.mark.parametrize(
    ("err", "field"),
    [
        ({**ERR, "kind": "fatal"}, "err.kind"),
        ({**ERR, "fp": "x" * 65}, "err.fp"),
        ({**ERR, "fp": "a b"}, "err.fp"),
        ({**ERR, "at": float("nan")}, "err.at"),
        ({**ERR, "msg": "\ud800"}, "err.msg"),
        ({k: v for k, v in ERR.items() if k != "try"}, "err.try"),
        ("boom", "err"),
    ],
)
def test_a_consumer_failure_that_is_not_valid_is_left_out_and_the_mark_kept(err: object, field: str) -> None:
    mark, rejection = read_mark(json.dumps({**VALID, "err": err}, allow_nan=True))
    assert mark == Mark("id-1", 1, NOW - 100, (NOW - 50,))
    assert rejection is not None and rejection.field == field


def test_a_valid_consumer_failure_is_kept() -> None:
    mark, rejection = read_mark(json.dumps({**VALID, "err": ERR}))
    assert rejection is None and mark is not None and mark.failure == Failure.from_dict(ERR)


def test_from_json_raises_a_value_error_naming_the_field() -> None:
    with pytest.raises(ValueError, match="not a re-drive mark: n "):
        Mark.from_json('{"id":"x","n":"two","first":0,"at":[]}')


# -- the clock rule --------------------------------------------------------------------------

MARK = Mark("id-1", 2, NOW - 300, (NOW - 200, NOW - 100), replays=((NOW - 250, 4),))


@pytest.mark.parametrize(
    ("mark", "field"),
    [
        (replace(MARK, first_failed_at=EARLIEST_MARK_TIME - 1), "first"),
        (replace(MARK, redriven_at=(NOW - 200, NOW + MAX_CLOCK_SKEW_SECONDS + 1)), "at[1]"),
        (replace(MARK, redriven_at=(NOW + 10**9,)), "at[0]"),
        (replace(MARK, replays=((NOW + 3600, 1),)), "rp[0][0]"),
    ],
)
def test_a_time_out_of_range_leaves_the_whole_mark_out(mark: Mark, field: str) -> None:
    held, rejection = held_to_clock(mark, NOW)
    assert held is None and rejection is not None and rejection.field == field


def test_a_failure_from_the_future_leaves_only_the_failure_out() -> None:
    failure = Failure(FailureKind.TERMINAL, "E", "m", "fp", NOW + 3600, 1, "")
    held, rejection = held_to_clock(replace(MARK, failure=failure), NOW)
    assert held == MARK and rejection is not None and rejection.field == "err.at"


def test_times_within_the_skew_are_taken() -> None:
    mark = replace(MARK, redriven_at=(NOW + MAX_CLOCK_SKEW_SECONDS,))
    assert held_to_clock(mark, NOW) == (mark, None)


@given(st.lists(st.integers(), max_size=5), st.integers(min_value=EARLIEST_MARK_TIME, max_value=2**40))
def test_a_mark_held_to_the_clock_has_every_time_in_range(at: list[int], now: int) -> None:
    held, _ = held_to_clock(Mark("id", len(at), EARLIEST_MARK_TIME, tuple(at)), now)
    if held is not None:
        assert all(EARLIEST_MARK_TIME <= t <= now + MAX_CLOCK_SKEW_SECONDS for t in held.redriven_at)


# -- the attribute -----------------------------------------------------------------------------


def raw(mark_value: dict[str, Any], body: str = "hi") -> dict[str, Any]:
    return {
        "MessageId": "m-1",
        "ReceiptHandle": "rh",
        "Body": body,
        "MessageAttributes": {MARK_ATTRIBUTE: mark_value},
    }


@given(st.dictionaries(st.sampled_from(["DataType", "StringValue", "BinaryValue"]), json_values))
def test_any_mark_attribute_gives_a_message(value: dict[str, Any]) -> None:
    message = from_sqs(raw(value))
    assert message.mark is not None or message.mark_rejection is not None


def test_a_mark_attribute_that_is_not_a_string_is_rejected() -> None:
    message = from_sqs(raw({"DataType": "Binary", "BinaryValue": b"{}"}))
    assert message.malformed_mark and message.mark_rejection is not None
    assert message.mark_rejection.field == MARK_ATTRIBUTE


def test_a_mark_on_a_message_with_no_room_for_one_is_left_out() -> None:
    body = "x" * (1_048_576 - 200)
    message = from_sqs(raw(string_attribute(json.dumps(VALID)), body=body))
    assert message.mark is None and message.mark_rejection is not None
    assert "no room" in message.mark_rejection.problem


@given(st.text(alphabet='[]{}"\\ax,:', max_size=60))
def test_json_depth_counts_only_brackets_outside_strings(text: str) -> None:
    try:
        parsed = json.loads(text)
    except ValueError:
        return
    assert json_depth(text) == _depth(parsed)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@given(st.text(alphabet=st.characters(codec=None)))
def test_any_text_gives_a_parking_reason_or_none_and_never_raises(text: str) -> None:
    parked = read_parked(text)  # the property is that this returns, whatever the text

    if parked is not None:  # then it is the top-level object's "parked" object, as written
        assert isinstance(parked, dict) and json.loads(text)["parked"] == parked


def test_a_parking_reason_is_read_from_a_parked_mark_and_not_from_a_nested_one() -> None:
    assert read_parked(json.dumps({**VALID, "parked": {"cause": "over_limit"}})) == {"cause": "over_limit"}
    assert read_parked('{"parked": ' + "[" * 3000 + "]" * 3000 + "}") is None
