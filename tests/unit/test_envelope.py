"""sqs_redriver.protocol.envelope: the re-drive mark, DLQ message parsing, sizes and content identity."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.message import Tracked
from sqs_redriver.core.table import GroupAction, GroupMark
from sqs_redriver.protocol.envelope import (
    MARK_ATTRIBUTE,
    DlqMessage,
    attribute_size,
    from_sqs,
    message_size,
    string_attribute,
)
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.limits import (
    EDIT_KEY_PATTERN,
    IDENTITY_PATTERN,
    MAX_COUNT,
    MAX_EDIT_KEY_CHARS,
    MAX_EPOCH_SECONDS,
    MAX_IDENTITY_CHARS,
    MAX_MARK_BYTES,
    MAX_MARK_HISTORY,
    MAX_REPLAYS,
    SQS_MAX_MESSAGE_BYTES,
)
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.parking import MAX_OPERATOR_NAME_CHARS, MAX_OPERATOR_REASON_CHARS, operator_reason
from sqs_redriver.runtime.routing import Routes

LARGEST_MARKABLE = SQS_MAX_MESSAGE_BYTES - MAX_MARK_BYTES
MARK = Mark("id-1", count=2, first_failed_at=100, redriven_at=(110, 130))


def message(body: str = "{}", attributes: dict[str, Any] | None = None) -> DlqMessage:
    return DlqMessage("m-1", "rh-1", body, attributes or {})


def raw(attributes: dict[str, Any]) -> dict[str, Any]:
    return {"MessageId": "m-1", "ReceiptHandle": "rh-1", "Body": "hi", "MessageAttributes": attributes}


@given(
    identity=st.from_regex(IDENTITY_PATTERN, fullmatch=True).filter(lambda i: len(i) <= MAX_IDENTITY_CHARS),
    count=st.integers(min_value=0, max_value=MAX_COUNT),
    first=st.integers(min_value=0, max_value=MAX_EPOCH_SECONDS),
    at=st.lists(st.integers(min_value=0, max_value=MAX_EPOCH_SECONDS), max_size=MAX_MARK_HISTORY).map(tuple),
)
def test_mark_survives_a_json_round_trip(identity: str, count: int, first: int, at: tuple[int, ...]) -> None:
    mark = Mark(identity, count, first, at)
    assert Mark.from_json(mark.to_json()) == mark


@given(
    edits=st.integers(min_value=1, max_value=MAX_COUNT),
    at=st.integers(min_value=0, max_value=MAX_EPOCH_SECONDS),
    key=st.from_regex(EDIT_KEY_PATTERN, fullmatch=True).filter(lambda k: len(k) <= MAX_EDIT_KEY_CHARS),
    replays=st.lists(st.tuples(st.integers(0, MAX_EPOCH_SECONDS), st.integers(0, MAX_COUNT)), max_size=3),
)
def test_an_edited_mark_survives_a_json_round_trip_as_ed(
    edits: int, at: int, key: str, replays: list[tuple[int, int]]
) -> None:
    mark = replace(MARK, edits=edits, last_edit=(at, key), replays=tuple(replays))
    text = mark.to_json()
    assert json.loads(text)["ed"] == [edits, at, key]
    assert Mark.from_json(text) == mark


def test_a_mark_written_before_edits_reads_as_never_edited_and_writes_no_ed() -> None:
    mark = Mark.from_json(json.dumps(VALID))
    assert (mark.edits, mark.last_edit) == (0, None)
    assert "ed" not in json.loads(mark.to_json())


def test_edited_is_a_replay_with_the_edit_counted_and_its_archive_key() -> None:
    once = replace(MARK, failure=FAILURE).edited(500, "edited/a.json")
    twice = once.after_redrive(600).edited(700, "edited/b.json")

    assert (once.count, once.failure, once.replays, once.identity) == (0, None, ((500, 2),), "id-1")
    assert (twice.edits, twice.last_edit, twice.replays) == (2, (700, "edited/b.json"), ((500, 2), (700, 1)))


@pytest.mark.parametrize(
    ("ed", "field"),
    [
        ("soon", "ed"),
        ([1, 2], "ed"),
        ([0, 1, "edited/a.json"], "ed[0]"),
        ([1, -1, "edited/a.json"], "ed[1]"),
        ([1, 1, "../a b"], "ed[2]"),
        ([1, 1, "x" * (MAX_EDIT_KEY_CHARS + 1)], "ed[2]"),
    ],
)
def test_a_mark_with_a_malformed_edit_is_rejected_naming_the_field(ed: object, field: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"not a re-drive mark: {field} ")):
        Mark.from_json(json.dumps({**VALID, "ed": ed}))


def test_from_json_ignores_extra_keys_such_as_the_parking_reason() -> None:
    assert Mark.from_json(MARK.to_json(parked={"why": "too many"})) == MARK


VALID = {"id": "x", "n": 0, "first": 0, "at": []}


@pytest.mark.parametrize(
    "text",
    [
        "garbage",
        "",
        "null",
        "[]",
        *(json.dumps({k: v for k, v in VALID.items() if k != missing}) for missing in VALID),
        json.dumps({**VALID, "n": -1}),
        json.dumps({**VALID, "n": "two"}),
        json.dumps({**VALID, "id": ""}),
        json.dumps({**VALID, "at": [1, "later"]}),
    ],
)
def test_from_json_rejects_text_that_is_not_a_mark(text: str) -> None:
    with pytest.raises(ValueError, match="not a re-drive mark"):
        Mark.from_json(text)


def test_after_redrive_counts_and_appends_the_time() -> None:
    after = MARK.after_redrive(200)
    assert (after.count, after.redriven_at, after.last_redriven_at) == (3, (110, 130, 200), 200)


FAILURE = Failure(FailureKind.TRANSIENT, "Timeout", "slow", "fp-1", 140, 3, "arn:aws:sqs:us-east-1:1:q")


def test_a_mark_with_replays_survives_a_json_round_trip_as_rp() -> None:
    mark = replace(MARK, failure=FAILURE, replays=((150, 5), (400, 2)))
    text = mark.to_json(parked={"why": "x"})
    assert json.loads(text)["rp"] == [[150, 5], [400, 2]]
    assert Mark.from_json(text) == mark


def test_a_mark_without_replays_writes_no_rp_and_reads_without_one() -> None:
    assert "rp" not in json.loads(MARK.to_json())
    assert Mark.from_json(MARK.to_json()).replays == ()


@pytest.mark.parametrize("rp", ["soon", [[1]], [[1, 2, 3]], [["a", 1]], 7])
def test_a_mark_with_a_malformed_replay_history_is_rejected(rp: object) -> None:
    with pytest.raises(ValueError, match="not a re-drive mark"):
        Mark.from_json(json.dumps({**VALID, "rp": rp}))


def test_replayed_starts_the_count_again_and_records_the_replay() -> None:
    mark = replace(MARK, failure=FAILURE, verdict_key="run/1", probe=True, replays=((50, 4),))

    replayed = mark.replayed(500)

    assert replayed == Mark("id-1", count=0, first_failed_at=100, replays=((50, 4), (500, 2)))


def test_replayed_keeps_only_the_last_replays() -> None:
    mark = MARK
    for i in range(MAX_REPLAYS + 3):
        mark = replace(mark.replayed(1000 + i), count=i)

    assert len(mark.replays) == MAX_REPLAYS
    assert mark.replays[0] == (1003, 2) and mark.replays[-1] == (1000 + MAX_REPLAYS + 2, MAX_REPLAYS + 1)


def test_after_redrive_and_a_new_failure_keep_the_replays() -> None:
    mark = MARK.replayed(500).after_redrive(600)
    assert (mark.count, mark.replays) == (1, ((500, 2),))
    assert replace(mark, failure=FAILURE).replays == ((500, 2),)


def test_from_sqs_splits_the_mark_off_the_attributes() -> None:
    msg = from_sqs(raw({"a": string_attribute("1"), MARK_ATTRIBUTE: string_attribute(MARK.to_json())}))
    assert (msg.mark, msg.malformed_mark, dict(msg.attributes)) == (MARK, False, {"a": string_attribute("1")})


def test_from_sqs_flags_a_malformed_mark() -> None:
    msg = from_sqs(raw({MARK_ATTRIBUTE: string_attribute("{oops")}))
    assert (msg.mark, msg.malformed_mark, dict(msg.attributes)) == (None, True, {})


@pytest.mark.parametrize(("body", "size"), [("abc", 3), ("é", 2), ("東", 3), ("", 0)])
def test_message_size_counts_utf8_bytes_of_the_body(body: str, size: int) -> None:
    assert message_size(body, {}) == size


def test_message_size_counts_attribute_name_type_and_value_bytes() -> None:
    attributes = {"é": string_attribute("東"), "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01\x02"}}
    assert message_size("x", attributes) == 1 + (2 + 6 + 3) + (1 + 6 + 3)


def test_no_room_for_a_mark_with_ten_attributes() -> None:
    assert not message(attributes={f"a{i}": string_attribute("v") for i in range(10)}).has_room_for_mark


@pytest.mark.parametrize(
    ("body_bytes", "room"),
    [(10, True), (LARGEST_MARKABLE, True), (LARGEST_MARKABLE + 1, False)],
)
def test_room_for_a_mark_only_while_body_plus_budget_fits_the_size_limit(body_bytes: int, room: bool) -> None:
    assert message("x" * body_bytes).has_room_for_mark is room


def test_attributes_count_towards_the_size_limit() -> None:
    body = "x" * (LARGEST_MARKABLE - 5)  # the attribute adds 8 bytes
    assert not message(body, {"a": string_attribute("b")}).has_room_for_mark


def test_content_identity_is_a_stable_sha256() -> None:
    identity = message("body", {"a": string_attribute("1")}).content_identity
    assert identity.startswith("sha256:")
    assert identity == message("body", {"a": string_attribute("1")}).content_identity


@pytest.mark.parametrize(
    ("body", "attributes"),
    [
        ("other", {"a": string_attribute("1")}),
        ("body", {"a": string_attribute("2")}),
        ("body", {"b": string_attribute("1")}),
        ("body", {"a": {"DataType": "Number", "StringValue": "1"}}),
        ("body", {"a": {"DataType": "Binary", "BinaryValue": b"1"}}),
        ("body", {}),
    ],
)
def test_content_identity_differs_when_body_or_an_attribute_differs(body: str, attributes: dict) -> None:
    reference = message("body", {"a": string_attribute("1")}).content_identity
    assert message(body, attributes).content_identity != reference


@given(st.dictionaries(st.text(min_size=1), st.text(), min_size=2))
def test_content_identity_ignores_attribute_order(values: dict[str, str]) -> None:
    forward = {name: string_attribute(value) for name, value in values.items()}
    backward = dict(reversed(forward.items()))
    assert message("b", forward).content_identity == message("b", backward).content_identity


def test_a_mark_with_the_longest_history_failure_parking_reason_and_replays_fits_the_budget() -> None:
    # GIVEN the longest history settings allow (MAX_REDRIVE_COUNT <= 50), a hash identity, 10-digit times,
    # and the most replays a mark keeps, each after 50 re-drives
    mark = Mark("sha256:" + "f" * 64, 0, 1_800_000_000)
    for replay in range(MAX_REPLAYS):
        for i in range(50):
            mark = mark.after_redrive(1_800_000_000 + 900 * i)
        mark = mark.replayed(1_800_100_000 + replay)
    for i in range(50):
        mark = mark.after_redrive(1_800_000_000 + 900 * i)
    assert (mark.count, len(mark.replays)) == (50, MAX_REPLAYS)
    # and the longest failure the consumer kit can write: non-ASCII costs up to 12 bytes escaped
    failure = Failure(
        FailureKind.TRANSIENT,
        "pkg." * 60 + "Error",
        "\U0001f4a5" * 1000,
        "f" * 16,
        1_800_099_999,
        1000,
        "arn:aws:sqs:ap-southeast-2:123456789012:" + "q" * 80,
    )
    # and an edit with the longest archive key
    mark = replace(
        mark, failure=failure, edits=MAX_COUNT, last_edit=(1_800_099_999, "e" * MAX_EDIT_KEY_CHARS)
    )
    # and the longest parking reason: an operator's, with the longest words the reason keeps
    operator = GroupMark("f" * 16, GroupAction.PARK, "\U0001f4a5" * 1000, "\U0001f4a5" * 1000, 1_800_099_000)
    source = "https://sqs.ap-southeast-2.amazonaws.com/123456789012/" + "q" * 46  # 100 chars
    tracked = Tracked(DlqMessage("0f8e7c1a-7d2b-4a38-9c41-5e6f7a8b9c0d", "rh", "{}"), mark)
    reason = operator_reason(tracked, operator, now=1_800_099_999, routes=Routes((source,)))
    assert reason.why.count("\U0001f4a5") > MAX_OPERATOR_REASON_CHARS // 12 + MAX_OPERATOR_NAME_CHARS // 12
    # WHEN it is written as the message attribute
    size = attribute_size(MARK_ATTRIBUTE, string_attribute(mark.to_json(parked=reason.to_dict())))
    # THEN it fits the bytes reserved for it
    assert size <= MAX_MARK_BYTES, size


def test_mark_with_a_null_identity_is_rejected() -> None:
    with pytest.raises(ValueError):
        Mark.from_json('{"id":null,"n":1,"first":1,"at":[1]}')
