"""adapters/records/: every state record parser takes any DynamoDB attribute map to a validated
value or a ``CorruptRecord`` naming the key, never another exception; valid values round-trip."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.breaker import Breaker, Canary, Evidence, State
from sqs_redriver.core.errors import CorruptRecord
from sqs_redriver.core.source_growth import Baseline, baseline_from_item
from sqs_redriver.core.table import (
    DrainRecord,
    GroupAction,
    GroupMark,
    HeldGroup,
    MessageRecord,
    Pause,
    RecordStatus,
    RunHistory,
    breaker_from_item,
    breaker_item,
    check_continuation,
    continuation_item,
    drain_from_item,
    drain_item,
    expired,
    failure_from_item,
    group_mark_from_item,
    group_mark_item,
    held_from_item,
    held_item,
    json_object,
    mark_from_item,
    message_item,
    pause_from_item,
    pause_item,
    run_line,
    runs_from_item,
    runs_item,
    sweep_due_from_item,
    sweep_item,
    verdicts_from_item,
)
from sqs_redriver.protocol.failure import Failure, FailureKind, VerdictCounts
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.limits import (
    FINGERPRINT_PATTERN,
    MAX_CLOCK_SKEW_SECONDS,
    MAX_FINGERPRINT_CHARS,
    RECORD_MAX_BREAKER_COUNT,
    RECORD_MAX_CANARY_WINDOW_SECONDS,
    RECORD_MAX_SWEEP_AHEAD_SECONDS,
    RECORD_MAX_VERDICTS,
)
from sqs_redriver.protocol.mark import Mark
from tests.support.record_strategies import NOW, items_of, robust

PARSERS: dict[RecordKind, tuple[Callable[[dict[str, Any]], Any], type]] = {
    RecordKind.BREAKER: (lambda item: breaker_from_item(item, now=NOW), Breaker),
    RecordKind.MESSAGE: (lambda item: mark_from_item(item, now=NOW), Mark),
    RecordKind.FAILURE: (lambda item: failure_from_item(item, now=NOW), Failure),
    RecordKind.VERDICTS: (verdicts_from_item, VerdictCounts),
    RecordKind.PARK: (lambda item: group_mark_from_item(item, now=NOW), GroupMark),
    RecordKind.RETRY: (lambda item: group_mark_from_item(item, now=NOW), GroupMark),
    RecordKind.PAUSE: (lambda item: pause_from_item(item, now=NOW), Pause),
    RecordKind.RUNS: (runs_from_item, RunHistory),
    RecordKind.SWEEP: (lambda item: sweep_due_from_item(item, now=NOW), int),
    RecordKind.HELD: (lambda item: held_from_item(item, now=NOW), tuple),
    RecordKind.CONTINUATION: (lambda item: check_continuation(item, now=NOW), type(None)),
    RecordKind.DRAIN: (lambda item: drain_from_item(item, now=NOW), DrainRecord),
    RecordKind.BACKLOG: (lambda item: baseline_from_item(item, now=NOW), Baseline),
}
# Parsed elsewhere: IDEMPOTENCY# by Powertools' idempotency layer (only the function and operators
# may write them), GROUPS# by the operator's tool (tests/integration/test_group_index.py), REPLAY#
# and REPLAYS# by the operator's tool (tests/integration/test_outcomes.py). WORKER# is never read:
# conditional writes offer, hold and release it (an offer takes a malformed one as free).
PARSED_ELSEWHERE = {
    RecordKind.WORKER,
    RecordKind.IDEMPOTENCY,
    RecordKind.GROUP_INDEX,
    RecordKind.REPLAY,
    RecordKind.REPLAY_INDEX,
}


def test_every_record_kind_has_a_parser() -> None:
    assert set(PARSERS) | PARSED_ELSEWHERE == set(RecordKind)


@robust
@given(st.data())
def test_every_parser_gives_a_validated_value_or_a_rejection_naming_the_key(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(list(PARSERS)))
    item = data.draw(items_of(kind))
    parse, expected = PARSERS[kind]
    try:
        value = parse(item)
    except CorruptRecord as rejection:
        assert rejection.key == kind.key("s-1") and rejection.kind is kind
        assert rejection.field and rejection.problem
    else:
        assert isinstance(value, expected)


@robust
@given(items_of(RecordKind.MESSAGE))
def test_expiry_is_a_yes_a_no_or_a_rejection(item: dict[str, Any]) -> None:
    try:
        assert isinstance(expired(item, "MSG#s-1", now=NOW), bool)
    except CorruptRecord as rejection:
        assert rejection.field == "expires_at"


@robust
@given(items_of(RecordKind.BREAKER))
def test_a_breaker_read_holds_no_time_from_the_future_and_counts_within_limits(item: dict[str, Any]) -> None:
    try:
        breaker = breaker_from_item(item, now=NOW)
    except CorruptRecord:
        return
    assert breaker.state in State
    assert breaker.changed_at <= NOW + MAX_CLOCK_SKEW_SECONDS
    assert (
        0 <= breaker.failures <= RECORD_MAX_BREAKER_COUNT
        and 0 <= breaker.successes <= RECORD_MAX_BREAKER_COUNT
    )
    if breaker.canary is not None:
        assert breaker.canary.identities and breaker.canary.verdict_key


@robust
@given(st.integers(1, 10**9))
def test_a_breaker_opened_in_the_future_is_rejected(ahead: int) -> None:
    item = breaker_item("BREAKER#q", Breaker().opened(NOW + MAX_CLOCK_SKEW_SECONDS + ahead, Evidence.RETURNS))
    rejection = _rejection(lambda: breaker_from_item(item, now=NOW))
    assert (rejection.key, rejection.field) == ("BREAKER#q", "changed_at")


@robust
@given(st.integers(1, 10**9))
def test_a_failure_from_the_future_is_rejected(ahead: int) -> None:
    failure = Failure(FailureKind.TRANSIENT, "E", "m", "fp", NOW + MAX_CLOCK_SKEW_SECONDS + ahead, 1, "arn")
    item = {"pk": {"S": RecordKind.FAILURE.key("x")}, "failure": {"S": json.dumps(failure.to_dict())}}
    assert _rejection(lambda: failure_from_item(item, now=NOW)).field == "failure.at"


def _rejection(parse: Callable[[], object]) -> CorruptRecord:
    try:
        parse()
    except CorruptRecord as rejection:
        return rejection
    raise AssertionError("not rejected")


names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
times = st.integers(0, NOW)
canaries = st.builds(
    Canary,
    identities=st.lists(names, min_size=1, max_size=10).map(tuple),
    verdict_at=st.integers(0, NOW + RECORD_MAX_CANARY_WINDOW_SECONDS),
    groups=st.lists(names, max_size=10).map(tuple),
    sent_at=times,
)
breakers = st.builds(
    Breaker,
    state=st.sampled_from(State),
    failures=st.integers(0, RECORD_MAX_BREAKER_COUNT),
    successes=st.integers(0, RECORD_MAX_BREAKER_COUNT),
    changed_at=times,
    version=st.integers(0, 2**53),
    canary=st.none() | canaries,
)


@robust
@given(breakers)
def test_a_breaker_round_trips(breaker: Breaker) -> None:
    assert breaker_from_item(breaker_item("BREAKER#q", breaker), now=NOW) == breaker


@robust
@given(names, st.integers(0, 10_000), times, st.lists(times, max_size=50).map(tuple))
def test_a_message_record_round_trips(
    identity: str, count: int, first: int, redriven: tuple[int, ...]
) -> None:
    mark = Mark(identity=identity, count=count, first_failed_at=first, redriven_at=redriven)
    item = message_item(MessageRecord(mark, RecordStatus.REDRIVEN, "q"), NOW, 86_400)
    assert item["pk"]["S"] == RecordKind.MESSAGE.key(identity)
    assert mark_from_item(item, now=NOW) == mark


@robust
@given(
    st.sampled_from(FailureKind),
    names,
    st.text(max_size=300),
    st.from_regex(FINGERPRINT_PATTERN, fullmatch=True).filter(lambda fp: len(fp) <= MAX_FINGERPRINT_CHARS),
    times,
    st.integers(0, 10_000),
    names,
)
def test_a_failure_record_round_trips(
    kind: FailureKind, error_class: str, message: str, fingerprint: str, at: int, attempt: int, source: str
) -> None:
    failure = Failure(kind, error_class, message, fingerprint, at, attempt, source)
    written = Failure.from_dict(failure.to_dict())  # as the kit bounds it
    item = {"pk": {"S": RecordKind.FAILURE.key("x")}, "failure": {"S": json.dumps(written.to_dict())}}
    assert failure_from_item(item, now=NOW) == written


@robust
@given(st.text(max_size=200), st.text(max_size=50), times)
def test_a_pause_round_trips(reason: str, by: str, at: int) -> None:
    pause = Pause(reason, by, at)
    assert pause_from_item(pause_item("PAUSE#d", pause), now=NOW) == pause


@robust
@given(names, st.sampled_from(GroupAction), st.text(max_size=200), st.text(max_size=50), times)
def test_a_group_mark_round_trips(
    fingerprint: str, action: GroupAction, reason: str, by: str, at: int
) -> None:
    mark = GroupMark(fingerprint, action, reason, by, at)
    assert group_mark_from_item(group_mark_item(mark), now=NOW) == mark


@robust
@given(st.integers(0, NOW + RECORD_MAX_SWEEP_AHEAD_SECONDS))
def test_a_sweep_time_round_trips(due_at: int) -> None:
    assert sweep_due_from_item(sweep_item("SWEEP#d", due_at), now=NOW) == due_at


def test_a_sweep_due_further_ahead_than_any_interval_is_rejected() -> None:
    item = sweep_item("SWEEP#d", NOW + RECORD_MAX_SWEEP_AHEAD_SECONDS + 1)
    assert _rejection(lambda: sweep_due_from_item(item, now=NOW)).field == "due_at"


@robust
@given(
    st.fixed_dictionaries(
        {}, optional={n: st.integers(0, RECORD_MAX_VERDICTS) for n in ("ok", "transient", "terminal")}
    )
)
def test_verdict_counts_round_trip(counts: dict[str, int]) -> None:
    item = {"pk": {"S": RecordKind.VERDICTS.key("w")}, **{name: {"N": str(n)} for name, n in counts.items()}}
    assert verdicts_from_item(item) == VerdictCounts(**counts)


@robust
@given(
    st.lists(
        st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8) | st.booleans()), max_size=20
    )
)
def test_run_history_round_trips(summaries: list[dict[str, Any]]) -> None:
    lines = [run_line(summary) for summary in summaries]
    history = runs_from_item(runs_item("RUNS#d", lines))
    assert (history.summaries, history.lines, history.skipped) == (summaries, lines, [])


def test_unreadable_history_entries_are_skipped_and_named() -> None:
    item = runs_item("RUNS#d", ['{"at": 1}', "[" * 5000, '{"at": NaN}', "[]"])
    item["runs"]["L"].append({"N": "1"})
    history = runs_from_item(item)
    assert history.summaries == [{"at": 1}]
    assert [(s.key, s.field) for s in history.skipped] == [("RUNS#d", f"runs[{i}]") for i in (1, 2, 3, 4)]


def test_a_continuation_an_offer_wrote_is_valid_and_one_from_the_future_is_not() -> None:
    check_continuation(continuation_item("d", "t", now=NOW, stale_after=900), now=NOW)
    forged = continuation_item("d", "t", now=NOW + 10**6, stale_after=900)
    assert _rejection(lambda: check_continuation(forged, now=NOW)).field == "offered_at"


@robust
@given(
    st.text() | st.binary().map(lambda raw: raw.decode("utf-8", "surrogateescape")) | st.just("[" * 100_000)
)
def test_any_text_is_a_json_object_or_a_rejection(raw: str) -> None:
    try:
        assert isinstance(json_object(raw, "failure", "FAILURE#x"), dict)
    except CorruptRecord as rejection:
        assert (rejection.key, rejection.field) == ("FAILURE#x", "failure")


def test_an_evidence_word_this_version_does_not_know_is_read_as_none_and_the_breaker_kept() -> None:
    opened = Breaker(version=1).opened(1_800_000_000, Evidence.METRICS)
    item = {**breaker_item("BREAKER#q", opened), "evidence": {"S": "a-newer-word"}}
    read = breaker_from_item(item, now=1_800_000_100)
    assert (read.state, read.evidence, read.judged_until) == (State.OPEN, Evidence.NONE, 1_800_000_000)


@robust
@given(
    st.builds(
        DrainRecord,
        rate=st.integers(1, 100_000),
        phase=st.sampled_from(["climb", "steady"]),
        fell_behind_at=st.integers(0, 100_000),
        workers=st.integers(1, 200),
        messages_left=st.integers(0, 10**8),
        stepped_at=st.integers(0, NOW),
        started_at=st.integers(0, NOW),
        ended_at=st.integers(0, NOW),
        version=st.integers(0, 10**6),
    )
)
def test_a_drain_record_round_trips(record: DrainRecord) -> None:
    assert drain_from_item(drain_item("DRAIN#d", record), now=NOW) == record


held_groups = st.builds(
    HeldGroup,
    group=st.from_regex(r"[a-f0-9]{16}", fullmatch=True),
    since=st.integers(0, NOW),
    failed_canaries=st.integers(0, 1_000),
    canary_at=st.integers(0, NOW + 300),
    canary=st.text(max_size=128),
    sent_at=st.integers(0, NOW),
    verdict_at=st.integers(0, NOW + 3_600),
    verdict_key=st.text(max_size=256),
    released_at=st.integers(0, NOW),
)


@given(st.lists(held_groups, max_size=5, unique_by=lambda g: g.group))
def test_held_groups_round_trip(groups: list[HeldGroup]) -> None:
    groups = [g for g in groups if _encodable(g.canary) and _encodable(g.verdict_key)]
    parsed = held_from_item(held_item("HELD#d", groups), now=NOW)
    assert sorted(parsed, key=lambda g: g.group) == sorted(groups, key=lambda g: g.group)


def test_a_held_group_whose_next_canary_is_further_ahead_than_any_canary_window_is_rejected() -> None:
    far = NOW + RECORD_MAX_CANARY_WINDOW_SECONDS + MAX_CLOCK_SKEW_SECONDS + 1
    item = held_item("HELD#d", [HeldGroup("0123456789abcdef", since=NOW, canary_at=far)])
    with pytest.raises(CorruptRecord, match="canary_at"):
        held_from_item(item, now=NOW)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
