"""The operator's tool's pure rules for dead letters of other services: the group of one (its
source and the cause it gave, never taken for a consumer's fingerprint), whether it can go back,
the sources a deployment's output names (untrusted: a rejection naming the field, nothing else),
and what became of one a replay sent."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.console.inventory import (
    Inspected,
    Where,
    inspect,
    is_fingerprint,
    with_park_reasons,
)
from sqs_redriver.console.outcomes import Fate, Observation, Sent, judge
from sqs_redriver.console.tool import Deployment, read_deployment_sources
from sqs_redriver.core.errors import CorruptRecord
from sqs_redriver.core.table import (
    MessageRecord,
    ParkCause,
    ParkReason,
    RecordStatus,
    message_item,
    park_reason_from_item,
)
from sqs_redriver.protocol.dead_letters import Cause, DeadLetter
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, DlqMessage, string_attribute
from sqs_redriver.protocol.limits import MAX_COUNT
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.sources import SourceKind
from sqs_redriver.protocol.wire import Rejection
from tests.support.dead_letters import FUNCTION_SOURCE, SAMPLE_SOURCES, function_dlq_message

SENT_AT = 1_800_000_000
WINDOW = 720

sources = st.sampled_from(SAMPLE_SOURCES)
codes = st.text(min_size=1, max_size=40)
payloads = st.none() | st.text(max_size=20)
problems = st.none() | st.just(Rejection("body", "is not JSON"))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def item(dead_letter: DeadLetter) -> Inspected:
    return Inspected(DlqMessage("m-1", "r-1", body="{}", dead_letter=dead_letter), Where.DLQ)


def of(
    source: Any, code: str | None, payload: str | None = "{}", problem: Rejection | None = None
) -> Inspected:
    cause = None if code is None else Cause(code, "what the source said")
    return item(DeadLetter(source, payload, cause=cause, problem=problem))


@given(st.none() | sources, st.none() | codes, payloads, problems)
def test_a_dead_letter_s_group_is_never_taken_for_a_consumer_s_fingerprint(
    source: Any, code: str | None, payload: str | None, problem: Rejection | None
) -> None:
    group = of(source, code, payload, problem).group

    assert group.startswith("dead-letter:") and not is_fingerprint(group)


@given(sources, codes, sources, codes)
def test_two_dead_letters_share_a_group_when_they_share_their_source_and_cause(
    source: Any, code: str, other_source: Any, other_code: str
) -> None:
    same = of(source, code).group == of(other_source, other_code).group

    assert same == (source == other_source and code == other_code)


def test_a_function_s_group_names_it_and_its_error_and_one_without_a_cause_its_source_alone() -> None:
    assert of(FUNCTION_SOURCE, "ValueError").group == "dead-letter:orders:ValueError"
    assert of(SAMPLE_SOURCES[3], None).group == "dead-letter:orders/order-emails"
    assert of(None, None, None, Rejection("body", "is not JSON")).group == "dead-letter:unreadable"


@given(st.none() | sources, payloads, problems)
def test_a_dead_letter_is_refused_exactly_when_it_cannot_go_back_and_says_why(
    source: Any, payload: str | None, problem: Rejection | None
) -> None:
    dead_letter = DeadLetter(source, payload, problem=problem)

    refusal = item(dead_letter).unreplayable

    assert (refusal is None) == dead_letter.replayable
    assert refusal is None or refusal.startswith("it")


@given(st.lists(sources, unique_by=lambda source: source.address))
def test_the_sources_an_output_names_read_back_as_written(written: list[Any]) -> None:
    deployment = Deployment("App/Redriver", "dlq", (), "lot", "table", dead_letter_sources=tuple(written))

    assert Deployment.from_json(deployment.to_json()) == deployment


@given(json_values | st.lists(st.dictionaries(st.sampled_from(["kind", "arn", "target_kind"]), json_values)))
def test_any_output_s_sources_are_sources_or_a_rejection_naming_the_field(value: Any) -> None:
    try:
        read = read_deployment_sources(value)
    except Rejection as rejection:
        assert rejection.field.startswith("dead_letter_sources")
    else:
        assert all(source.address for source in read)


def test_a_source_named_twice_is_refused() -> None:
    twice = [FUNCTION_SOURCE.to_json()] * 2

    with pytest.raises(Rejection, match="dead_letter_sources names a source twice"):
        read_deployment_sources(json.loads(json.dumps(twice)))


@given(
    st.sampled_from([SourceKind.RULE_TARGET, SourceKind.SUBSCRIPTION]), st.integers(0, 5_000), st.booleans()
)
def test_an_unseen_dead_letter_whose_target_keeps_its_own_failures_is_delivered(
    kind: SourceKind, later: int, complete: bool
) -> None:
    outcome = judge([Sent("i-1", None, "a")], SENT_AT, observation(kind, later, complete=complete))

    assert outcome.judged[0].fate is Fate.DELIVERED


@given(st.integers(0, 5_000), st.booleans())
def test_an_unseen_function_event_is_consumed_only_past_its_retries_with_everything_read(
    later: int, complete: bool
) -> None:
    outcome = judge(
        [Sent("i-1", None, "a")], SENT_AT, observation(SourceKind.FUNCTION, later, complete=complete)
    )

    consumed = later >= WINDOW and complete
    assert outcome.judged[0].fate is (Fate.NOT_BACK_INVOKED if consumed else Fate.TOO_EARLY)


def observation(kind: SourceKind, later: int, *, complete: bool) -> Observation:
    """Nothing found, ``later`` seconds after the replay, of a source ``a`` of ``kind``."""
    return Observation(
        seen={}, now=SENT_AT + later, windows={"a": WINDOW}, complete=complete, dead_letter_kinds={"a": kind}
    )


NOW = 1_800_000_000
IDENTITY = "sha256:" + "0" * 64
park_reasons = st.builds(
    ParkReason,
    cause=st.sampled_from(ParkCause),
    why=st.text(max_size=300),
    redrive_count=st.integers(0, MAX_COUNT),
    first_failed_at=st.integers(0, NOW),
    last_failed_at=st.integers(0, NOW),
    source_queue=st.text(max_size=80),
    dlq_message_id=st.text(min_size=1, max_size=40),
)


@given(park_reasons)
def test_a_parked_message_s_record_gives_back_the_reason_the_re_driver_wrote(reason: ParkReason) -> None:
    mark = Mark(identity=IDENTITY, count=reason.redrive_count, first_failed_at=reason.first_failed_at)
    item = message_item(MessageRecord(mark, RecordStatus.PARKED, reason.source_queue, reason), NOW, 86_400)

    assert park_reason_from_item(item, now=NOW) == reason


# A record's attributes as anyone with the operator's grant could write them.
attribute_values = st.one_of(
    st.builds(lambda s: {"S": s}, st.text(max_size=20) | st.sampled_from(["PARKED", "REDRIVEN"])),
    st.builds(lambda n: {"N": n}, st.text(max_size=12) | st.integers().map(str)),
    st.builds(lambda v: {"S": json.dumps(v)}, json_values),
    json_values,
)
reason_documents = st.fixed_dictionaries(
    {},
    optional={
        name: json_values | st.integers() | st.sampled_from(ParkCause) for name in ParkReason.__annotations__
    },
)


@given(
    st.dictionaries(st.sampled_from(["status", "reason", "expires_at", "pk"]), attribute_values),
    st.none() | reason_documents,
)
def test_any_record_is_a_parking_reason_none_or_corrupt_naming_its_field(
    attributes: dict[str, Any], reason: dict[str, Any] | None
) -> None:
    item = {"pk": {"S": "MSG#" + IDENTITY}, "status": {"S": "PARKED"}, **attributes}
    if reason is not None:
        item["reason"] = {"S": json.dumps(reason, default=str)}

    try:
        read = park_reason_from_item(item, now=NOW)
    except CorruptRecord as corrupt:
        assert corrupt.field in {"pk", "status", "reason", "expires_at"} or corrupt.field.startswith(
            "reason."
        )
    else:
        assert read is None or isinstance(read.cause, ParkCause)


def test_a_dead_letter_in_the_parking_lot_says_its_reason_and_count_or_that_none_is_recorded() -> None:
    dead_letter = DeadLetter(FUNCTION_SOURCE, "{}", cause=Cause("ValueError", "no items"))
    parked = Inspected(DlqMessage("m-1", "r-1", body="{}", dead_letter=dead_letter), Where.PARKING_LOT)
    reason = ParkReason(ParkCause.OVER_LIMIT, "failed after 5 re-drives (limit 5)", 5, 1, 2, "orders", "m-0")

    [recorded] = with_park_reasons([parked], {parked.identity: reason})

    assert recorded.label == "parked after 5 re-drives (over_limit): failed after 5 re-drives (limit 5)"
    assert recorded.parking == "over_limit: failed after 5 re-drives (limit 5)"
    assert parked.label == "parked (reason not recorded); ValueError: no items"
    assert parked.parking == "parked (reason not recorded)"
    assert replace(parked, where=Where.DLQ).parking is None


def test_a_dead_letter_s_parked_copy_says_the_reason_it_carries_and_in_the_dlq_none() -> None:
    # GIVEN a function DLQ's message as the re-driver parked it: its reason in the mark attribute
    letter = function_dlq_message({"order": "o-1"})
    reason = ParkReason(
        ParkCause.UNKNOWN_SOURCE, "its dead letter names no configured source", 0, 1, 2, "-", "m-0"
    )
    mark = Mark("sha256:" + "a" * 64).to_json(parked=reason.to_dict())
    raw = {
        **letter.received(),
        "MessageAttributes": {**letter.attributes, MARK_ATTRIBUTE: string_attribute(mark)},
    }

    parked, in_dlq = (
        inspect(raw, Where.PARKING_LOT, [FUNCTION_SOURCE]),
        inspect(raw, Where.DLQ, [FUNCTION_SOURCE]),
    )

    # THEN the parked copy says its reason, is the same dead letter, and one in the DLQ claims none
    assert parked.parking == "unknown_source: its dead letter names no configured source"
    assert parked.identity == inspect(letter.received(), Where.DLQ, [FUNCTION_SOURCE]).identity
    assert MARK_ATTRIBUTE not in parked.message.attributes and in_dlq.parking is None
