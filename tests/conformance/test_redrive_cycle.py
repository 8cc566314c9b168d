"""The re-drive cycle against a second SQS implementation, LocalStack's, where moto is not SQS: SQS
itself dead-letters failed messages (RedrivePolicy) and names their source queue, FIFO groups keep
their order on the way to the DLQ, SendMessageBatch carries trace headers, and sizes are UTF-8
bytes, refused past 1 MiB. Real waits (the queues' visibility timeout is 1 s), bounded by deadlines
that only a hang reaches: a verdict never depends on how soon one step follows another. Where the
re-driver's own clock decides (a backoff), the test holds that clock."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from local_aws.compose import local_redriver
from local_aws.queues import queue_counts
from local_aws.resources import Resources, create_state_table, queue_arn
from sqs_redriver.core.breaker import BreakerPolicy
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.settings import default
from sqs_redriver.runtime.report import RunReport
from sqs_redriver.runtime.run import Redriver
from tests.support.aws import REMAINING, make_settings, mark_of
from tests.support.factories import FakeClock, always, never, order_body
from tests.support.localstack import Rig

pytestmark = pytest.mark.conformance

# A bound for a hang only (each wait ends as soon as its queue is empty): on a busy 2-core machine
# LocalStack's answers, and the 1 s visibility timeouts they wait on, take several times longer.
WAIT_SECONDS = 180
# Re-driven messages that come back must not open the breaker here: these tests are about SQS.
PATIENT_BREAKER = BreakerPolicy(failure_threshold=100, minimum_volume=1000)
# The FIFO test's backoff: 2 to 3 s before a first re-drive, 3 to 6 s before a second.
BACKOFF_BASE, BACKOFF_CAP = 3, 6

Message = dict[str, Any]


def redriver_for(aws: Resources, clock: Callable[[], float] = time.time, **overrides: Any) -> Redriver:
    """The real re-driver (composed as in Lambda), on the real clock unless given one. LocalStack's
    receive is atomic, as SQS's is, so it keeps its default parallel batches."""
    settings = make_settings(aws, parallel_batches=default("parallel_batches"), **overrides)
    return local_redriver(settings, sqs=aws.sqs, dynamodb=aws.dynamodb, s3=aws.s3, clock=clock)


def is_empty(aws: Resources, queue_url: str) -> bool:
    return queue_counts(aws.sqs, queue_url).total == 0


def consume(aws: Resources, queue_url: str, fails: Callable[[Message], bool]) -> list[Message]:
    """Play a consumer until the queue is empty: delete what succeeds, leave what fails to time out,
    so SQS dead-letters it at its third receive. Returns every message received, in order."""
    received: list[Message] = []
    deadline = time.monotonic() + WAIT_SECONDS
    while not is_empty(aws, queue_url):
        assert time.monotonic() < deadline, f"{queue_url} still holds messages"
        messages = aws.sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=1,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        received.extend(messages)
        for message in messages:
            if not fails(message):
                aws.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return received


def redrive_until_empty(aws: Resources, redriver: Redriver) -> list[RunReport]:
    """Scheduled runs, every half second, until the DLQ is empty (held messages included)."""
    reports: list[RunReport] = []
    deadline = time.monotonic() + WAIT_SECONDS
    while not is_empty(aws, aws.dlq_url):
        assert time.monotonic() < deadline, f"the DLQ still holds messages after {reports}"
        reports.append(redriver.run(REMAINING))
        time.sleep(0.5)
    return reports


def sqs_calls(aws: Resources) -> list[str]:
    """The names of the SQS operations called from now on, in order."""
    calls: list[str] = []
    aws.sqs.meta.events.register("before-call.sqs.*", lambda model, **_: calls.append(model.name))
    return calls


def test_a_dead_lettered_message_keeps_its_count_until_the_consumer_succeeds(rig: Rig) -> None:
    # GIVEN an order that SQS dead-letters after the consumer failed it
    aws = rig.resources()
    original_id = aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=order_body("o-1"))["MessageId"]
    assert consume(aws, aws.source_url, always)
    redriver = redriver_for(aws)

    # WHEN it is re-driven, fails and is dead-lettered again, and is re-driven once more
    assert redriver.run(REMAINING).redriven == 1
    [failed_again] = {m["MessageId"]: m for m in consume(aws, aws.source_url, always)}.values()
    second = redriver.run(REMAINING)
    [succeeded] = consume(aws, aws.source_url, never)

    # THEN the second run saw it come back, its mark counted both re-drives under its first
    # MessageId, and nothing is left
    assert (second.redriven, second.returned) == (1, 1)
    assert (mark_of(failed_again).identity, mark_of(failed_again).count) == (original_id, 1)
    assert (mark_of(succeeded).identity, mark_of(succeeded).count) == (original_id, 2)
    assert succeeded["Body"] == order_body("o-1")
    assert is_empty(aws, aws.dlq_url) and is_empty(aws, aws.parking_lot_url)


def test_fifo_groups_keep_their_order_through_dead_lettering_and_backoff(rig: Rig) -> None:
    # GIVEN two groups of three orders, interleaved, that SQS dead-letters twice: once before the
    # first re-drive and once after it, so the second re-drive waits its backoff in the DLQ. The
    # re-driver's clock is the test's: ahead of SQS's by a full step, so the first re-drives are
    # due whenever the runs come, and then still until the test moves it on.
    aws = rig.resources(fifo=True)
    groups = {"a": ["a1", "a2", "a3"], "b": ["b1", "b2", "b3"]}
    for first, second in zip(groups["a"], groups["b"], strict=True):
        for body in (first, second):
            aws.sqs.send_message(
                QueueUrl=aws.source_url, MessageBody=body, MessageGroupId=body[0], MessageDeduplicationId=body
            )
    consume(aws, aws.source_url, always)
    clock = FakeClock(now=time.time() + BACKOFF_CAP)
    redriver = redriver_for(
        aws, clock, base_delay_seconds=BACKOFF_BASE, max_delay_seconds=BACKOFF_CAP, breaker=PATIENT_BREAKER
    )
    redrive_until_empty(aws, redriver)
    consume(aws, aws.source_url, always)

    # WHEN the re-driver runs before their second backoff (3 to 6 s) has passed, and then, once it
    # has, until the DLQ is empty, and the consumer has recovered
    early = redriver.run(REMAINING)
    clock.advance(BACKOFF_CAP)
    reports = redrive_until_empty(aws, redriver)
    delivered = consume(aws, aws.source_url, never)

    # THEN the early run held every message it received in the DLQ, the later ones re-drove all
    # six, and each group arrived in the order it was sent
    assert early.received > 0 and early.redriven == 0, early
    assert sum(report.redriven for report in reports) == 6, reports
    for group, bodies in groups.items():
        assert [m["Body"] for m in delivered if m["Attributes"]["MessageGroupId"] == group] == bodies
    assert {mark_of(m).count for m in delivered} == {2}


def test_a_shared_dlq_sends_each_message_back_to_the_source_sqs_names(rig: Rig) -> None:
    # GIVEN two source queues dead-lettering into one DLQ (SQS adds DeadLetterQueueSourceArn)
    dlq_url = rig.queue("shared-dlq")
    orders_url = rig.queue("orders", dead_letter_to=dlq_url)
    payments_url = rig.queue("payments", dead_letter_to=dlq_url)
    table_name = f"{rig.prefix}-state"
    create_state_table(rig.dynamodb, table_name)
    aws = Resources(
        sqs=rig.sqs,
        dynamodb=rig.dynamodb,
        source_url=orders_url,
        source_arn=queue_arn(rig.sqs, orders_url),
        dlq_url=dlq_url,
        parking_lot_url=rig.queue("parking-lot"),
        table_name=table_name,
        s3=rig.s3,
        archive_bucket=rig.archive_bucket(),
    )
    for url, source in ((orders_url, "orders"), (payments_url, "payments")):
        for n in (1, 2):
            aws.sqs.send_message(QueueUrl=url, MessageBody=f"{source}:{n}")
        consume(aws, url, always)

    # WHEN the re-driver, configured with both sources, drains the DLQ
    report = redriver_for(aws, other_source_queue_urls=(payments_url,)).run(REMAINING)

    # THEN each message went back to the queue it failed in
    assert (report.redriven, report.parked) == (4, 0)
    assert sorted(m["Body"] for m in consume(aws, orders_url, never)) == ["orders:1", "orders:2"]
    assert sorted(m["Body"] for m in consume(aws, payments_url, never)) == ["payments:1", "payments:2"]
    assert is_empty(aws, dlq_url)


def test_trace_headers_survive_the_redrive_through_send_message_batch(rig: Rig) -> None:
    # GIVEN three traced orders that SQS dead-letters
    aws = rig.resources()
    traces = {
        order_body(f"o-{n}"): f"Root=1-6560f000-{n:024x};Parent={n:016x};Sampled=1" for n in range(1, 4)
    }
    for body, trace in traces.items():
        aws.sqs.send_message(
            QueueUrl=aws.source_url,
            MessageBody=body,
            MessageSystemAttributes={"AWSTraceHeader": {"DataType": "String", "StringValue": trace}},
        )
    consume(aws, aws.source_url, always)
    calls = sqs_calls(aws)

    # WHEN they are re-driven
    report = redriver_for(aws).run(REMAINING)

    # THEN they were sent in one SendMessageBatch, and each arrived with its own trace header
    assert report.redriven == 3
    assert calls.count("SendMessageBatch") == 1 and "SendMessage" not in calls
    delivered = consume(aws, aws.source_url, never)
    assert {m["Body"]: m["Attributes"].get("AWSTraceHeader") for m in delivered} == traces


def test_sizes_are_counted_in_bytes_as_sqs_counts_them(rig: Rig) -> None:
    # GIVEN, dead-lettered by SQS: a body that fits SQS in UTF-8 bytes but leaves no room for the
    # mark, and three that take the mark; 1.9 MB together, but 0.8 million characters
    aws = rig.resources()
    no_room = "é" * ((1_048_576 - 2_000) // 2)
    bodies = [no_room, *(f"{n}" + "€" * 100_000 for n in range(3))]
    for body in bodies:
        aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=body)
    consume(aws, aws.source_url, always)
    calls = sqs_calls(aws)
    redriver = redriver_for(aws, breaker=PATIENT_BREAKER)

    # WHEN they are re-driven, fail again, and are re-driven again
    first = redriver.run(REMAINING)
    consume(aws, aws.source_url, always)
    second = redriver.run(REMAINING)
    delivered = consume(aws, aws.source_url, never)

    # THEN SQS took every batch (split at 1 MiB of bytes), each body arrived intact, and the one
    # without a mark was counted in the table under its content identity
    assert [(r.redriven, r.errors) for r in (first, second)] == [(4, 0), (4, 0)]
    assert calls.count("SendMessageBatch") >= 4
    assert sorted(m["Body"] for m in delivered) == sorted(bodies)
    unmarked = [m for m in delivered if MARK_ATTRIBUTE not in m.get("MessageAttributes", {})]
    assert [m["Body"] for m in unmarked] == [no_room]
    assert {mark_of(m).count for m in delivered if m not in unmarked} == {2}
    # (each run also writes its history, RUNS#)
    [record] = [
        i for i in aws.dynamodb.scan(TableName=aws.table_name)["Items"] if i["pk"]["S"].startswith("MSG#")
    ]
    assert record["pk"]["S"].startswith("MSG#sha256:") and record["redrive_count"] == {"N": "2"}


def test_a_message_that_keeps_failing_is_parked_with_its_reason(rig: Rig) -> None:
    # GIVEN a poison order, dead-lettered by SQS each time the consumer fails it
    aws = rig.resources(fifo=True)
    poison = order_body("poison")
    aws.sqs.send_message(
        QueueUrl=aws.source_url, MessageBody=poison, MessageGroupId="g", MessageDeduplicationId="p"
    )
    consume(aws, aws.source_url, always)
    redriver = redriver_for(aws, max_redrive_count=1)

    # WHEN its one re-drive fails too
    assert redriver.run(REMAINING).redriven == 1
    consume(aws, aws.source_url, always)
    reports = redrive_until_empty(aws, redriver)

    # THEN it is parked, in its group, with the reason in its mark
    assert sum(r.parked for r in reports) == 1
    [parked] = consume(aws, aws.parking_lot_url, never)
    assert parked["Body"] == poison and parked["Attributes"]["MessageGroupId"] == "g"
    details = json.loads(parked["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
    assert "failed after 1 re-drives" in details["parked"]["why"]
