"""Corrupt state records of every kind, put into the table, and the real re-driver run over them:
the run completes, every DLQ message ends in one place (source, DLQ or parking lot) exactly once,
no breaker opens, the other source of a shared DLQ is served, and the corrupt key is reported."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from local_aws.events import LambdaContext, scheduled_event
from local_aws.queues import depth, drain
from sqs_redriver.core.breaker import Breaker, Canary, Evidence, State
from sqs_redriver.core.table import StateTable, breaker_item
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, from_sqs, string_attribute
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.keys import RecordKind, kit_record_key
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.report import StopReason
from tests.support.aws import REMAINING, Aws, fail_into_dlq, handler_environment, make_redriver, make_settings
from tests.support.cold_start import import_fresh
from tests.support.factories import FakeClock, always, consume, order_body
from tests.support.shared_dlq import near_retention_in_both_sources, redriver_for

FAR = 10**8  # seconds: a forged time, years ahead


def put(aws: Aws, item: dict[str, Any]) -> None:
    aws.dynamodb.put_item(TableName=aws.table_name, Item=item)


def reported(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The keys of the corrupt records the run reported."""
    return [str(r.record_key) for r in caplog.records if hasattr(r, "record_key")]


def bodies(aws: Aws, url: str) -> list[str]:
    return sorted(m["Body"] for m in drain(aws.sqs, url))


def with_fields(key: str, breaker: Breaker, **fields: Any) -> dict[str, Any]:
    """A breaker record with these attributes replaced (None: removed)."""
    item = breaker_item(key, breaker) | fields
    return {name: value for name, value in item.items() if value is not None}


CORRUPT_BREAKERS: dict[str, Callable[[str, int], dict[str, Any]]] = {
    "no state": lambda key, now: with_fields(key, Breaker(version=3), state=None),
    "unknown state": lambda key, now: with_fields(key, Breaker(version=3), state={"S": "BROKEN"}),
    "opened in the future": lambda key, now: breaker_item(
        key, Breaker(version=2).opened(now + FAR, Evidence.RETURNS)
    ),
    "version not a number": lambda key, now: with_fields(
        key, Breaker().opened(now, Evidence.RETURNS), version={"S": "x"}
    ),
    "failures not a number": lambda key, now: with_fields(key, Breaker(), failures={"N": "1e100"}),
    "failures a list": lambda key, now: with_fields(key, Breaker(), failures={"L": []}),
    "a huge canary list": lambda key, now: with_fields(
        key,
        Breaker(State.HALF_OPEN, changed_at=now, canary=Canary(("c",), now + FAR)),
        canary_ids={"L": [{"S": f"c-{i}"} for i in range(5_000)]},
    ),
    "an empty canary list": lambda key, now: with_fields(
        key, Breaker(State.HALF_OPEN, changed_at=now, canary=Canary(("c",), now)), canary_ids={"L": []}
    ),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPT_BREAKERS))
def test_a_corrupt_breaker_neither_opens_nor_stops_its_source_or_the_other(
    aws: Aws, payments: str, clock: FakeClock, caplog: pytest.LogCaptureFixture, corruption: str
) -> None:
    # GIVEN a shared DLQ with failures of both sources, and orders' breaker record corrupt
    redriver = redriver_for(aws, payments, clock)
    key = RecordKind.BREAKER.key(aws.source_url)
    put(aws, CORRUPT_BREAKERS[corruption](key, int(clock.now)))
    fail_into_dlq(aws, aws.source_url, "orders:1", "orders:2")
    fail_into_dlq(aws, payments, "payments:1", "payments:2")

    with caplog.at_level(logging.ERROR):
        report = redriver.run(REMAINING)

    # THEN both sources are served, each message back in its own source once, and nothing opened
    assert (report.redriven, report.parked, report.breaker_state) == (4, 0, State.CLOSED)
    assert bodies(aws, aws.source_url) == ["orders:1", "orders:2"]
    assert bodies(aws, payments) == ["payments:1", "payments:2"]
    assert depth(aws.sqs, aws.dlq_url) == 0 and depth(aws.sqs, aws.parking_lot_url) == 0
    assert redriver.state.load_breaker(key).state is State.CLOSED
    assert key in reported(caplog)


@pytest.mark.parametrize(
    "version", [{"S": "x"}, None, {"N": "1.5"}, {"N": "-4"}], ids=["string", "absent", "fraction", "negative"]
)
def test_a_breaker_without_a_valid_version_is_overwritten_once_guarded_by_it(
    aws: Aws, clock: FakeClock, version: dict[str, str] | None
) -> None:
    state = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60, clock=clock)
    rival = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60, clock=clock)
    put(aws, with_fields("BREAKER#q", Breaker().opened(int(clock.now), Evidence.RETURNS), version=version))
    read, also_read = state.load_breaker("BREAKER#q"), rival.load_breaker("BREAKER#q")
    assert read == also_read == Breaker()

    assert state.save_breaker(
        "BREAKER#q", read.opened(int(clock.now), Evidence.RETURNS), expected_version=read.version
    )
    assert not rival.save_breaker(
        "BREAKER#q", also_read.closed(int(clock.now), Evidence.OPERATOR), expected_version=0
    )
    assert state.load_breaker("BREAKER#q") == Breaker().opened(int(clock.now), Evidence.RETURNS)


def no_room_messages(aws: Aws, *orders: str) -> dict[str, str]:
    """Orders failed into the DLQ with 10 attributes (no room for a mark): identity by order."""
    attributes = {f"a{i}": string_attribute(str(i)) for i in range(10)}
    for order in orders:
        aws.sqs.send_message(
            QueueUrl=aws.source_url, MessageBody=order_body(order), MessageAttributes=attributes
        )
    consume(aws.sqs, aws.source_url, always)
    raw = aws.sqs.receive_message(
        QueueUrl=aws.dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=0, MessageAttributeNames=["All"]
    )["Messages"]
    return {json.loads(m["Body"])["order_id"]: from_sqs(m).content_identity for m in raw}


def message_record(identity: str, now: int, **fields: Any) -> dict[str, Any]:
    """A message record as the re-driver writes one, with these attributes replaced."""
    item = {
        "pk": {"S": RecordKind.MESSAGE.key(identity)},
        "identity": {"S": identity},
        "redrive_count": {"N": "0"},
        "first_failed_at": {"N": str(now)},
        "redriven_at": {"L": []},
    }
    return item | fields


def test_corrupt_message_and_failure_records_are_ignored_and_their_messages_redriven(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN four messages counted in the table, each with a corrupt or forged record
    identity = no_room_messages(aws, "o-1", "o-2", "o-3", "o-4")
    now = int(clock.now)
    future = Failure(FailureKind.TERMINAL, "E", "forged", "fp", now + FAR, 1, "arn")
    forged_redrive = {"L": [{"N": str(now + FAR)}]}
    corrupt = [
        message_record(identity["o-1"], now, redrive_count={"N": "1"}, redriven_at=forged_redrive),
        message_record(identity["o-2"], now, redrive_count={"S": "many"}),
        {
            "pk": {"S": kit_record_key(RecordKind.FAILURE, aws.dlq_url, identity["o-3"])},
            "failure": {"S": json.dumps(future.to_dict())},
        },
        {
            "pk": {"S": kit_record_key(RecordKind.FAILURE, aws.dlq_url, identity["o-4"])},
            "failure": {"S": "[" * 10_000},
        },
    ]
    for item in corrupt:
        put(aws, item)

    with caplog.at_level(logging.ERROR):
        report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    # THEN each is re-driven once as if it had no record, and the breaker stays closed
    assert (report.redriven, report.parked, report.returned, report.breaker_state) == (4, 0, 0, State.CLOSED)
    assert [json.loads(b)["order_id"] for b in bodies(aws, aws.source_url)] == ["o-1", "o-2", "o-3", "o-4"]
    assert depth(aws.sqs, aws.dlq_url) == 0 and depth(aws.sqs, aws.parking_lot_url) == 0
    assert set(reported(caplog)) == {item["pk"]["S"] for item in corrupt}


def send_marked(aws: Aws, clock: FakeClock, order: str, fingerprint: str) -> None:
    now = int(clock.now)
    failure = Failure(FailureKind.TRANSIENT, "E", "timeout", fingerprint, now, 1, "arn:aws:sqs:src")
    mark = Mark(f"id-{order}", first_failed_at=now, failure=failure).to_json()
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=order_body(order),
        MessageAttributes={MARK_ATTRIBUTE: string_attribute(mark)},
    )


def test_a_park_record_with_corrupt_fields_still_parks_its_group(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    send_marked(aws, clock, "o-bad", "fp-bad")
    send_marked(aws, clock, "o-ok", "fp-ok")
    key = RecordKind.PARK.key("fp-bad")
    put(aws, {"pk": {"S": key}, "at": {"S": "yesterday"}, "reason": {"N": "42"}})

    with caplog.at_level(logging.ERROR):
        report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    assert (report.parked, report.redriven, report.breaker_state) == (1, 1, State.CLOSED)
    assert [json.loads(b)["order_id"] for b in bodies(aws, aws.parking_lot_url)] == ["o-bad"]
    assert [json.loads(b)["order_id"] for b in bodies(aws, aws.source_url)] == ["o-ok"]
    assert depth(aws.sqs, aws.dlq_url) == 0 and reported(caplog) == [key]


def test_a_corrupt_pause_still_pauses_and_leaves_every_message_in_the_dlq(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(aws)
    put(aws, {"pk": {"S": settings.pause_key}, "reason": {"N": "1"}, "at": {"N": str(int(clock.now) + FAR)}})
    fail_into_dlq(aws, aws.source_url, "orders:1", "orders:2")

    with caplog.at_level(logging.ERROR):
        report = make_redriver(aws, settings, clock).run(REMAINING)

    assert (report.stopped_because, report.redriven, report.parked) == (StopReason.PAUSED, 0, 0)
    assert bodies(aws, aws.dlq_url) == ["orders:1", "orders:2"]
    assert depth(aws.sqs, aws.source_url) == 0 and depth(aws.sqs, aws.parking_lot_url) == 0
    assert settings.pause_key in reported(caplog)


@pytest.mark.parametrize(
    "runs",
    [{"S": "not a list"}, {"L": [{"S": "{"}, {"N": "1"}, {"S": '{"at": NaN}'}]}, {"L": [{"S": "[]"}] * 500}],
    ids=["not a list", "unreadable entries", "too many entries"],
)
def test_a_corrupt_run_history_is_repaired_by_the_next_run(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture, runs: dict[str, Any]
) -> None:
    settings = make_settings(aws)
    put(aws, {"pk": {"S": settings.runs_key}, "runs": runs})
    fail_into_dlq(aws, aws.source_url, "orders:1")

    with caplog.at_level(logging.ERROR):
        report = make_redriver(aws, settings, clock).run(REMAINING)

    assert report.redriven == 1 and bodies(aws, aws.source_url) == ["orders:1"]
    history = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60).load_runs(settings.runs_key)
    assert [run["redriven"] for run in history] == [1]
    assert settings.runs_key in reported(caplog)


def test_a_forged_continuation_does_not_hold_the_slot(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(aws, max_messages_per_run=2)
    key = f"CONTINUATION#{settings.dlq_url}"
    put(aws, {"pk": {"S": key}, "token": {"N": "7"}, "offered_at": {"N": str(int(clock.now) + FAR)}})
    fail_into_dlq(aws, aws.source_url, *(f"orders:{i}" for i in range(5)))

    with caplog.at_level(logging.ERROR):
        report = make_redriver(aws, settings, clock).run(REMAINING)

    assert report.redriven == 2 and report.continue_with is not None
    assert depth(aws.sqs, aws.dlq_url) + depth(aws.sqs, aws.source_url) == 5
    assert key in reported(caplog)


def test_a_sweep_forged_far_ahead_does_not_hold_off_the_retention_guard(
    aws: Aws, payments: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN both breakers open, messages near the end of the DLQ's retention, and a forged sweep time
    settings, redriver = near_retention_in_both_sources(aws, payments, clock)
    for url in (aws.source_url, payments):
        redriver.state.save_breaker(
            RecordKind.BREAKER.key(url),
            Breaker().opened(int(clock.now), Evidence.RETURNS),
            expected_version=0,
        )
    put(aws, {"pk": {"S": settings.sweep_key}, "due_at": {"N": str(int(clock.now) + FAR)}})

    with caplog.at_level(logging.ERROR):
        report = redriver.run(REMAINING)

    # THEN the sweep parks both, once each
    assert (report.parked, report.expiring, report.redriven) == (2, 2, 0)
    assert bodies(aws, aws.parking_lot_url) == ["orders:old", "payments:old"]
    assert depth(aws.sqs, aws.dlq_url) == 0 and settings.sweep_key in reported(caplog)


def test_the_lambda_reports_a_corrupt_record_in_its_log_and_the_corrupt_records_metric(
    aws: Aws,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN the deployed handler's configuration, a corrupt breaker record, and a message to re-drive
    for name, value in handler_environment(aws).items():
        monkeypatch.setenv(name, value)
    key = RecordKind.BREAKER.key(aws.source_url)
    put(aws, {"pk": {"S": key}, "state": {"S": "OPEN"}, "version": {"N": "1"}})
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))

    with caplog.at_level(logging.ERROR):
        result = import_fresh("sqs_redriver.runtime.handler").lambda_handler(
            scheduled_event("evt-corrupt"), LambdaContext()
        )

    # THEN the run went on, and both its log and its metrics name the corrupt record
    assert (result["redriven"], result["breaker_state"]) == (1, "CLOSED")
    assert [(r.record_key, r.field) for r in caplog.records if hasattr(r, "record_key")] == [
        (key, "failures")
    ]
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert [line["CorruptRecords"] for line in emf if "CorruptRecords" in line] == [[1.0]]
