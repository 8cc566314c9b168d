"""The retention guard and the archive, on moto: no message is deleted by the DLQ's retention
without having been parked and archived first, whatever the breaker says."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from freezegun import freeze_time
from moto import mock_aws

from local_aws.clients import ClientProxy
from local_aws.compose import local_redriver
from local_aws.queues import depth, drain, make_visible
from local_aws.simulated_time import SIM_EPOCH, UNFROZEN
from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Mode, State
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import StateTable
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from tests.support.aws import REMAINING, Aws, create_aws, make_redriver, make_settings, reused_clients
from tests.support.factories import LONG_AGO, FakeClock
from tests.support.faults import (
    BATCH_ENTRY_OPERATIONS,
    BATCH_ITEM_OPERATIONS,
    Fault,
    Faults,
    SimulatedCrash,
    raising,
)

RETENTION = 600  # the DLQ's MessageRetentionPeriod in these tests
MARGIN = 120  # EXPIRY_MARGIN_SECONDS: parked from 480 s of age on
ATTRIBUTES = {
    "tenant": {"DataType": "String", "StringValue": "t-1"},
    "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
}


def short_retention(aws: Aws) -> None:
    aws.sqs.set_queue_attributes(QueueUrl=aws.dlq_url, Attributes={"MessageRetentionPeriod": str(RETENTION)})


def archived(aws: Aws) -> list[dict[str, Any]]:
    """Every archived document, with its key."""
    listed = aws.s3.list_objects_v2(Bucket=aws.archive_bucket).get("Contents", [])
    documents = []
    for entry in listed:
        body = aws.s3.get_object(Bucket=aws.archive_bucket, Key=entry["Key"])["Body"].read()
        documents.append({"key": entry["Key"], **json.loads(body)})
    return documents


def open_breaker(aws: Aws, now: int, cooldown: int) -> BreakerPolicy:
    """An OPEN breaker that stays OPEN for ``cooldown`` seconds; returns its policy."""
    settings = make_settings(aws)
    StateTable(aws.table_name, aws.dynamodb, ttl_seconds=1).save_breaker(
        settings.breaker_key, Breaker(State.OPEN, changed_at=now, version=1), expected_version=0
    )
    return BreakerPolicy(failure_threshold=3, cooldown_seconds=cooldown, success_threshold=2)


def test_an_expiring_message_is_parked_with_its_reason_and_archived_whole(aws: Aws, clock: FakeClock) -> None:
    # GIVEN a DLQ message 500 s old, past RETENTION - MARGIN
    short_retention(aws)
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="old order", MessageAttributes=ATTRIBUTES)
    clock.catch_up()
    clock.advance(RETENTION - MARGIN + 20)

    # WHEN a run in REDRIVE mode sees it
    report = make_redriver(aws, make_settings(aws, expiry_margin_seconds=MARGIN), clock).run(REMAINING)

    # THEN it is parked with reason `expiring`, never re-driven, and its archive object holds it all
    assert (report.parked, report.expiring, report.redriven, report.errors) == (1, 1, 0, 0)
    [parked] = drain(aws.sqs, aws.parking_lot_url)
    assert (
        json.loads(parked["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])["parked"]["cause"]
        == "expiring"
    )
    assert depth(aws.sqs, aws.source_url) == 0 and depth(aws.sqs, aws.dlq_url) == 0
    [document] = archived(aws)
    assert document["body"] == "old order"
    assert document["message_attributes"] == {
        "tenant": {"DataType": "String", "StringValue": "t-1"},
        "blob": {"DataType": "Binary", "BinaryValue": "AAE="},
    }
    assert document["reason"]["cause"] == "expiring" and document["parked_at"] == int(clock.now)
    assert document["mark"]["id"] == document["dlq_message_id"]
    assert "SentTimestamp" in document["system_attributes"]
    day = time.strftime("%Y/%m/%d", time.gmtime(clock.now))
    assert document["key"] == (
        f"parked/orders/{day}/{document['mark']['id']}/{document['dlq_message_id']}-{int(clock.now)}.json"
    )


def test_a_message_whose_archive_write_failed_is_not_parked_and_not_lost(aws: Aws, clock: FakeClock) -> None:
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="poison", MessageAttributes={})
    settings = make_settings(aws, max_redrive_count=1)
    mark = {"id": "id-p", "n": 1, "first": LONG_AGO, "at": [LONG_AGO + 1]}
    [message] = aws.sqs.receive_message(QueueUrl=aws.dlq_url)["Messages"]
    aws.sqs.delete_message(QueueUrl=aws.dlq_url, ReceiptHandle=message["ReceiptHandle"])
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody="poison",
        MessageAttributes={MARK_ATTRIBUTE: {"DataType": "String", "StringValue": json.dumps(mark)}},
    )
    failing_s3 = ClientProxy(aws.s3, put_object=raising("InternalError", "PutObject"))

    report = make_redriver(aws, settings, clock, s3=failing_s3).run(REMAINING)

    # THEN it was not sent to the parking lot, nothing was deleted, the failure is counted apart
    # from the run's errors (an S3 outage says nothing about the consumer)
    assert (report.parked, report.unarchived, report.errors) == (0, 1, 0)
    assert depth(aws.sqs, aws.parking_lot_url) == 0 and depth(aws.sqs, aws.dlq_url) == 1
    assert archived(aws) == []
    # WHEN S3 is back, the next run parks and archives it
    make_visible(aws.dlq_url)
    assert make_redriver(aws, settings, clock).run(REMAINING).parked == 1
    assert [d["body"] for d in archived(aws)] == ["poison"]
    assert [m["Body"] for m in drain(aws.sqs, aws.parking_lot_url)] == ["poison"]


def test_with_the_breaker_open_a_due_sweep_parks_the_expiring_and_sweeps_again_only_when_due(
    aws: Aws, clock: FakeClock
) -> None:
    short_retention(aws)
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="old")
    clock.catch_up()
    clock.advance(RETENTION - MARGIN)
    policy = open_breaker(aws, int(clock.now), cooldown=3600)
    settings = make_settings(aws, expiry_margin_seconds=MARGIN, breaker=policy)
    receives: list[str] = []

    def receive_message(**kwargs: Any) -> Any:
        receives.append(kwargs["QueueUrl"])
        return aws.sqs.receive_message(**kwargs)

    sqs = ClientProxy(aws.sqs, receive_message=receive_message)

    first = make_redriver(aws, settings, clock, sqs=sqs).run(REMAINING)

    assert (first.mode, first.stopped_because) == (Mode.SKIP, "breaker open")
    assert (first.parked, first.expiring, first.redriven) == (1, 1, 0)
    assert [d["body"] for d in archived(aws)] == ["old"]
    # WHEN the next runs come before and after half the margin
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="young")
    scans = len(receives)
    clock.advance(MARGIN // 2 - 1)
    assert make_redriver(aws, settings, clock, sqs=sqs).run(REMAINING).received == 0
    assert len(receives) == scans  # not due: the DLQ was not scanned
    clock.advance(1)
    assert make_redriver(aws, settings, clock, sqs=sqs).run(REMAINING).received == 1


def test_a_sweep_releases_what_is_not_expiring_at_once(aws: Aws, clock: FakeClock) -> None:
    for i in range(12):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"young-{i}")
    policy = open_breaker(aws, int(clock.now), cooldown=3600)

    report = make_redriver(aws, make_settings(aws, breaker=policy), clock).run(REMAINING)

    assert (report.mode, report.received, report.parked, report.redriven) == (Mode.SKIP, 12, 0, 0)
    assert len(drain(aws.sqs, aws.dlq_url)) == 12  # visible again now, not after the run's timeout


# -- the target: a short retention, the breaker OPEN throughout ------------------------------------


@pytest.fixture
def frozen() -> Iterator[Any]:
    """moto and the re-driver on one frozen clock: moto then hides a message past the DLQ's
    retention from every receive, as SQS deletes it."""
    with freeze_time(datetime.fromtimestamp(SIM_EPOCH, UTC), ignore=UNFROZEN) as frozen_time, mock_aws():
        yield frozen_time


def test_no_message_outlives_a_short_retention_unparked_or_unarchived_with_the_breaker_open(
    frozen: Any,
) -> None:
    aws = create_aws()
    short_retention(aws)
    start = int(time.time())
    policy = open_breaker(aws, start, cooldown=24 * 3600)  # OPEN for the whole test
    settings = make_settings(aws, expiry_margin_seconds=MARGIN, breaker=policy)
    redriver = local_redriver(
        settings, sqs=aws.sqs, dynamodb=aws.dynamodb, s3=aws.s3, clock=time.time, sleep=frozen.tick
    )
    sent: dict[str, int] = {}
    modes = set()
    # 3 messages a minute for 10 minutes, the re-driver every minute for 25 minutes
    for minute in range(25):
        if minute < 10:
            for i in range(3):
                body = f"m-{minute}-{i}"
                aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)
                sent[body] = int(time.time())
        frozen.tick(30)
        modes.add(redriver.run(REMAINING).mode)
        frozen.tick(30)

    documents = {d["body"]: d for d in archived(aws)}
    parked = {m["Body"] for m in drain(aws.sqs, aws.parking_lot_url)}
    assert modes == {Mode.SKIP}
    assert drain(aws.sqs, aws.dlq_url) == [] and depth(aws.sqs, aws.source_url) == 0
    assert parked == set(sent) == set(documents)
    for body, at in sent.items():
        assert documents[body]["reason"]["cause"] == "expiring"
        assert at + RETENTION - MARGIN <= documents[body]["parked_at"] < at + RETENTION, body


# -- the sweep under faults ------------------------------------------------------------------------


def sweep_with_faults(plan: dict[int, Fault]) -> tuple[list[str], list[str]]:
    """12 expiring messages, the breaker OPEN, a sweep run with ``plan``'s faults, then healthy
    runs. Returns the calls of the faulted run and the problems found in the books."""
    with mock_aws():
        aws = create_aws(clients=reused_clients())
        short_retention(aws)
        bodies = {f"s-{i}" for i in range(12)}
        for body in sorted(bodies):
            aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)
        clock = FakeClock()
        clock.advance(RETENTION - MARGIN)
        policy = open_breaker(aws, int(clock.now), cooldown=3600)
        settings = make_settings(aws, expiry_margin_seconds=MARGIN, breaker=policy)
        faults = Faults(plan=dict(plan))
        faulty = make_redriver(
            aws,
            settings,
            clock,
            sqs=faults.wrap(aws.sqs),
            dynamodb=faults.wrap(aws.dynamodb),
            s3=faults.wrap(aws.s3),
        )
        try:
            faulty.run(REMAINING)
        except (SimulatedCrash, AwsCallError):
            pass
        for _ in range(3):
            make_visible(aws.dlq_url)
            clock.advance(MARGIN // 2)
            make_redriver(aws, settings, clock).run(REMAINING)
        parked = [m["Body"] for m in drain(aws.sqs, aws.parking_lot_url)]
        problems = []
        if lost := bodies - set(parked):
            problems.append(f"lost {sorted(lost)}")
        # An expiring message whose archive write failed is parked all the same (counted
        # Unarchived): at most one per failed PutObject.
        failed_puts = sum(
            1 for i, f in faults.fired.items() if faults.calls[i - 1] == "put_object" and f is not Fault.CRASH
        )
        if len(unarchived := set(parked) - {d["body"] for d in archived(aws)}) > failed_puts:
            problems.append(f"parked, not archived: {sorted(unarchived)}")
        if redriven := drain(aws.sqs, aws.source_url):
            problems.append(f"{len(redriven)} re-driven with the breaker OPEN")
        if plan and not faults.fired:
            problems.append("the fault did not fire")
        return faults.calls, problems


@pytest.mark.slow
def test_a_sweep_loses_nothing_with_any_of_its_calls_failed_or_crashed() -> None:
    calls, problems = sweep_with_faults({})
    assert not problems and {"put_object", "send_message_batch", "delete_message_batch"} <= set(calls)
    failures = []
    for index in range(1, len(calls) + 1):
        batch_call = calls[index - 1] in BATCH_ENTRY_OPERATIONS | BATCH_ITEM_OPERATIONS.keys()
        for fault in (Fault.CRASH, Fault.SERVER_ERROR, *([Fault.PARTIAL] if batch_call else [])):
            _, problems = sweep_with_faults({index: fault})
            failures += [f"{fault.value} at call {index} ({calls[index - 1]}): {p}" for p in problems]
    assert not failures, "\n".join(failures)
