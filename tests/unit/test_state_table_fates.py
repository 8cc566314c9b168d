"""StateTable: the fixed fate of a corrupt record of each kind (decision 0059 in docs/decisions/), reported by
its key in a log line and the CorruptRecords metric, for any attribute map a table may hold."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.breaker import Breaker, Evidence, State
from sqs_redriver.core.errors import CorruptRecord
from sqs_redriver.core.source_growth import BaselineTable, baseline_from_item
from sqs_redriver.core.table import (
    CORRUPT_RECORDS_METRIC,
    UNREADABLE_PAUSE,
    GroupAction,
    Pause,
    StateTable,
    breaker_from_item,
    breaker_item,
)
from sqs_redriver.protocol.failure import Failure, FailureKind, VerdictCounts
from sqs_redriver.protocol.keys import RecordKind, kit_record_key
from sqs_redriver.protocol.limits import (
    MAX_CLOCK_SKEW_SECONDS,
    RECORD_MAX_SWEEP_AHEAD_SECONDS,
    RECORD_MAX_VERDICTS,
)
from tests.support.record_strategies import NOW, items_of, robust

TABLE = "state"
DLQ = "d"  # the re-driver whose kit records the table reads
FAILURE_KEY = kit_record_key(RecordKind.FAILURE, DLQ, "id-1")


@dataclass
class StubDynamoDB:
    """The reads of a DynamoDB client over fixed items; puts are recorded, never stored."""

    items: dict[str, dict[str, Any]]
    puts: list[dict[str, Any]] = field(default_factory=list)

    def get_item(self, **request: Any) -> dict[str, Any]:
        item = self.items.get(request["Key"]["pk"]["S"])
        return {"Item": item} if item else {}

    def batch_get_item(self, **request: Any) -> dict[str, Any]:
        keys = [key["pk"]["S"] for key in request["RequestItems"][TABLE]["Keys"]]
        return {"Responses": {TABLE: [self.items[key] for key in keys if key in self.items]}}

    def put_item(self, **request: Any) -> dict[str, Any]:
        self.puts.append(request)
        return {}


class NoCalls:
    """A DynamoDB client that fails the test on any call."""

    def __getattr__(self, operation: str) -> Any:
        raise AssertionError(f"DynamoDB {operation} was called")


@dataclass
class Recorder:
    """A logger and a Powertools Metrics stand-in in one: what was logged, what was counted."""

    lines: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    counted: list[str] = field(default_factory=list)

    def error(self, message: str, extra: dict[str, Any]) -> None:
        self.lines.append((message, extra))

    warning = info = error

    def add_metric(self, name: str, unit: Any, value: int) -> None:
        self.counted.extend([name] * value)

    def reported(self) -> list[str]:
        return [extra["record_key"] for message, extra in self.lines if message == "corrupt state record"]


def table_of(*items: dict[str, Any]) -> tuple[StateTable, StubDynamoDB, Recorder]:
    client = StubDynamoDB({item["pk"]["S"]: item for item in items})
    recorder = Recorder()
    table = StateTable(
        TABLE, client, ttl_seconds=60, clock=lambda: NOW, logger=recorder, metrics=recorder, kit_scope=DLQ
    )  # type: ignore[arg-type]
    return table, client, recorder


def parses(parse: Any) -> bool:
    try:
        parse()
    except CorruptRecord:
        return False
    return True


@robust
@given(items_of(RecordKind.BREAKER, "q"))
def test_a_corrupt_breaker_is_read_as_closed_and_reported_by_its_key(item: dict[str, Any]) -> None:
    table, _, recorder = table_of(item)
    breaker = table.load_breaker("BREAKER#q")
    if parses(lambda: breaker_from_item(item, now=NOW)):
        assert recorder.reported() == [] and recorder.counted == []
    else:
        assert (breaker.state, breaker.failures, breaker.canary) == (State.CLOSED, 0, None)
        assert recorder.reported() == ["BREAKER#q"] and recorder.counted == [CORRUPT_RECORDS_METRIC]


@robust
@given(st.integers(1, 10**9))
def test_a_breaker_opened_in_the_future_does_not_hold_it_open(ahead: int) -> None:
    forged = Breaker(version=4).opened(NOW + MAX_CLOCK_SKEW_SECONDS + ahead, Evidence.RETURNS)
    table, _, _ = table_of(breaker_item("BREAKER#q", forged))
    assert table.load_breaker("BREAKER#q") == Breaker(version=5)


def test_a_breaker_without_a_valid_version_is_overwritten_only_while_its_version_is_as_read() -> None:
    for raw, condition in (
        ({"S": "seven"}, "version = :stored"),
        (None, "attribute_exists(pk) AND attribute_not_exists(version)"),
    ):
        item = {"pk": {"S": "BREAKER#q"}, "state": {"S": "OPEN"}} | ({"version": raw} if raw else {})
        table, client, _ = table_of(item)
        breaker = table.load_breaker("BREAKER#q")
        assert breaker == Breaker()
        assert table.save_breaker(
            "BREAKER#q", breaker.opened(NOW, Evidence.RETURNS), expected_version=breaker.version
        )
        assert client.puts[0]["ConditionExpression"] == condition
        assert client.puts[0].get("ExpressionAttributeValues", {}).get(":stored") == raw
        table.save_breaker(
            "BREAKER#q",
            breaker.opened(NOW, Evidence.RETURNS).closed(NOW, Evidence.OPERATOR),
            expected_version=1,
        )
        assert client.puts[1]["ConditionExpression"] == "attribute_not_exists(pk) OR version = :expected"


@robust
@given(items_of(RecordKind.MESSAGE, "id-1"), items_of(RecordKind.FAILURE, f"{DLQ}#id-1"))
def test_corrupt_message_and_failure_records_are_ignored(
    message: dict[str, Any], failure: dict[str, Any]
) -> None:
    table, _, recorder = table_of(message, failure)
    marks = table.load_marks(["id-1"])
    assert set(marks) <= {"id-1"}
    held = marks.get("id-1")
    if held is not None and held.failure is not None:
        assert held.failure.at <= NOW + MAX_CLOCK_SKEW_SECONDS
    assert set(recorder.reported()) <= {RecordKind.MESSAGE.key("id-1"), FAILURE_KEY}
    assert len(recorder.counted) == len(recorder.reported())


@robust
@given(st.integers(1, 10**9))
def test_a_failure_from_the_future_is_ignored(ahead: int) -> None:
    failure = Failure(FailureKind.TRANSIENT, "E", "m", "fp", NOW + MAX_CLOCK_SKEW_SECONDS + ahead, 1, "arn")
    item = {
        "pk": {"S": FAILURE_KEY},
        "failure": {"S": json.dumps(failure.to_dict())},
    }
    table, _, recorder = table_of(item)
    assert table.load_marks(["id-1"]) == {}
    assert recorder.reported() == [FAILURE_KEY]


@robust
@given(items_of(RecordKind.PARK, "fp-1"))
def test_a_park_record_counts_by_its_key_whatever_its_fields(item: dict[str, Any]) -> None:
    table, _, _ = table_of(item)
    marks = table.load_group_marks(["fp-1"])
    assert [(m.fingerprint, m.action) for m in marks.values()] in ([], [("fp-1", GroupAction.PARK)])


@robust
@given(items_of(RecordKind.PAUSE, "d"))
def test_any_pause_record_pauses(item: dict[str, Any]) -> None:
    table, _, _ = table_of(item)
    assert isinstance(table.load_pause("PAUSE#d"), Pause)


def test_a_corrupt_pause_reads_as_an_unreadable_pause() -> None:
    table, _, recorder = table_of({"pk": {"S": "PAUSE#d"}, "reason": {"N": "1"}})
    assert table.load_pause("PAUSE#d") == UNREADABLE_PAUSE
    assert recorder.reported() == ["PAUSE#d"]


@robust
@given(items_of(RecordKind.VERDICTS, f"{DLQ}#w"))
def test_verdicts_are_read_within_limits_or_as_none(item: dict[str, Any]) -> None:
    table, _, recorder = table_of(item)
    counts = table.load_verdicts("w")
    assert all(0 <= n <= RECORD_MAX_VERDICTS for n in (counts.ok, counts.transient, counts.terminal))
    assert recorder.reported() in ([], [kit_record_key(RecordKind.VERDICTS, DLQ, "w")])


@robust
@given(items_of(RecordKind.SWEEP, "d"))
def test_a_sweep_is_due_within_the_longest_interval(item: dict[str, Any]) -> None:
    table, _, _ = table_of(item)
    assert 0 <= table.load_sweep_due("SWEEP#d") <= NOW + RECORD_MAX_SWEEP_AHEAD_SECONDS


@robust
@given(items_of(RecordKind.RUNS, "d"))
def test_the_run_history_keeps_only_readable_entries(item: dict[str, Any]) -> None:
    table, client, _ = table_of(item)
    readable = table.load_runs("RUNS#d")
    table.record_run("RUNS#d", {"at": NOW})
    written = client.puts[0]["Item"]["runs"]["L"]
    assert len(written) == min(len(readable) + 1, 20)
    assert written[0] == {"S": '{"at":' + str(NOW) + "}"}


@pytest.mark.parametrize("subject", ["\ud800", "x" * 2_100, "é" * 1_100], ids=["surrogate", "long", "wide"])
def test_a_key_dynamodb_cannot_hold_is_never_sent_and_finds_nothing(subject: str) -> None:
    table = StateTable(TABLE, NoCalls(), ttl_seconds=60, clock=lambda: NOW, kit_scope=DLQ)  # type: ignore[arg-type]
    assert table.load_group_marks([subject]) == {} and table.load_marks([subject]) == {}
    assert (
        table.load_verdicts(subject) == VerdictCounts()
        and table.load_breaker("BREAKER#" + subject) == Breaker()
    )
    table.forget_marks([subject])


def test_a_breaker_read_again_valid_or_absent_is_written_with_the_usual_guard() -> None:
    table, client, _ = table_of({"pk": {"S": "BREAKER#q"}, "version": {"S": "x"}})
    table.load_breaker("BREAKER#q")
    client.items.clear()
    assert table.load_breaker("BREAKER#q") == Breaker()
    table.save_breaker("BREAKER#q", Breaker().opened(NOW, Evidence.RETURNS), expected_version=0)
    assert client.puts[0]["ConditionExpression"] == "attribute_not_exists(pk) OR version = :expected"


@robust
@given(items_of(RecordKind.BACKLOG, "q"))
def test_a_corrupt_growth_baseline_is_read_as_none_and_reported_by_its_key(item: dict[str, Any]) -> None:
    """Its fate (core/source_growth.NO_BASELINE): the run's look takes the source's depth as the
    baseline and overwrites the record; never a crash, never a stop on what it cannot read."""
    client = StubDynamoDB({item["pk"]["S"]: item})
    recorder = Recorder()
    table = BaselineTable(TABLE, client, clock=lambda: NOW, logger=recorder, metrics=recorder)  # type: ignore[arg-type]
    baseline = table.load_baseline("BACKLOG#q")
    if parses(lambda: baseline_from_item(item, now=NOW)):
        assert baseline is not None and recorder.reported() == [] and recorder.counted == []
    else:
        assert baseline is None
        assert recorder.reported() == ["BACKLOG#q"] and recorder.counted == [CORRUPT_RECORDS_METRIC]
