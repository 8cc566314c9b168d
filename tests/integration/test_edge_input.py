"""Edge input with a defined outcome: FIFO queues, a DLQ shared by several sources."""

from __future__ import annotations

from typing import Any

from local_aws.clients import ClientProxy
from local_aws.queues import drain, make_visible
from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Evidence, Mode, State
from sqs_redriver.core.table import MessageRecord, RecordStatus
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, DlqMessage
from sqs_redriver.protocol.mark import Mark
from tests.support.aws import CANARY_WINDOW, REMAINING, Aws, make_redriver, make_settings, mark_of
from tests.support.factories import LONG_AGO, FakeClock, NamesTheSource, always, consume


def marked(mark: Mark) -> dict[str, Any]:
    return {MARK_ATTRIBUTE: {"DataType": "String", "StringValue": mark.to_json()}}


def send_fifo(aws: Aws, body: str, group: str, attributes: dict[str, Any] | None = None) -> None:
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=body,
        MessageGroupId=group,
        MessageDeduplicationId=f"dedup-{body}",
        MessageAttributes=attributes or {},
    )


def receive_all(aws: Aws, queue_url: str) -> list[dict[str, Any]]:
    return drain(aws.sqs, queue_url)


def test_fifo_redrive_keeps_the_group_and_sends_no_per_message_delay(fifo: Aws, clock: FakeClock) -> None:
    sent: list[dict[str, Any]] = []
    fifo.sqs.meta.events.register(
        "provide-client-params.sqs.SendMessageBatch", lambda params, **_: sent.extend(params["Entries"])
    )
    send_fifo(fifo, "order-1", group="customer-7")

    report = make_redriver(fifo, make_settings(fifo), clock).run(REMAINING)

    assert report.redriven == 1
    assert "DelaySeconds" not in sent[0] and sent[0]["MessageGroupId"] == "customer-7"
    [message] = receive_all(fifo, fifo.source_url)
    assert message["Body"] == "order-1" and message["Attributes"]["MessageGroupId"] == "customer-7"


def test_fifo_gets_a_fresh_deduplication_id_on_every_redrive(fifo: Aws, clock: FakeClock) -> None:
    # GIVEN a FIFO consumer that keeps failing: a reused deduplication id would be dropped silently
    settings = make_settings(
        fifo, max_redrive_count=3, breaker=BreakerPolicy(failure_threshold=100, minimum_volume=1000)
    )
    redriver = make_redriver(fifo, settings, clock)
    send_fifo(fifo, "order-1", group="g")
    counts = []

    for _ in range(3):
        assert redriver.run(REMAINING).redriven == 1
        [message] = fifo.sqs.receive_message(
            QueueUrl=fifo.source_url, MessageAttributeNames=["All"], VisibilityTimeout=0
        )["Messages"]
        counts.append(mark_of(message).count)
        consume(fifo.sqs, fifo.source_url, always)
        clock.advance(60)

    assert counts == [1, 2, 3]


def test_fifo_backoff_waits_hidden_in_the_dlq_instead_of_using_delay_seconds(
    fifo: Aws, clock: FakeClock
) -> None:
    # GIVEN a message re-driven just now: its second re-drive is due 60-120 s later
    settings = make_settings(fifo, base_delay_seconds=60, max_delay_seconds=900)
    send_fifo(fifo, "order-1", "g", marked(Mark("id-1", 1, int(clock.now), (int(clock.now),))))
    hidden: list[int] = []
    fifo.sqs.meta.events.register(
        "provide-client-params.sqs.ChangeMessageVisibilityBatch",
        lambda params, **_: hidden.extend(e["VisibilityTimeout"] for e in params["Entries"]),
    )

    first = make_redriver(fifo, settings, clock).run(REMAINING)

    assert first.redriven == 0 and len(hidden) == 1 and 60 <= hidden[0] <= 120
    # WHEN the wait is over, the same message goes back
    clock.advance(hidden[0])
    make_visible(fifo.dlq_url)
    assert make_redriver(fifo, settings, clock).run(REMAINING).redriven == 1


def test_fifo_messages_after_a_waiting_one_in_its_group_wait_too(fifo: Aws, clock: FakeClock) -> None:
    settings = make_settings(fifo, base_delay_seconds=60, max_delay_seconds=900)
    clock.advance(900)  # the messages were sent 15 minutes before the run: a fresh one is due
    now = int(clock.now)
    send_fifo(fifo, "g-first", "g", marked(Mark("id-first", 1, now, (now,))))  # waits
    send_fifo(fifo, "g-second", "g")  # due, but behind g-first in its group
    send_fifo(fifo, "h-only", "h")  # due, another group

    report = make_redriver(fifo, settings, clock).run(REMAINING)

    assert report.redriven == 1
    assert [m["Body"] for m in receive_all(fifo, fifo.source_url)] == ["h-only"]


def test_fifo_poison_is_parked_in_a_fifo_parking_lot(fifo: Aws, clock: FakeClock) -> None:
    history = tuple(range(LONG_AGO + 1, LONG_AGO + 6))
    send_fifo(fifo, "poison", "g", marked(Mark("id-p", 5, LONG_AGO, history)))

    assert make_redriver(fifo, make_settings(fifo), clock).run(REMAINING).parked == 1

    [parked] = receive_all(fifo, fifo.parking_lot_url)
    assert parked["Body"] == "poison" and parked["Attributes"]["MessageGroupId"] == "g"


def test_a_shared_dlq_sends_each_message_back_to_its_own_source(aws: Aws, clock: FakeClock) -> None:
    payments_url = aws.sqs.create_queue(QueueName="payments")["QueueUrl"]
    for body in ("orders:1", "payments:1", "orders:2", "payments:2"):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)
    sqs = NamesTheSource(aws.sqs, {"orders": "orders", "payments": "payments"})
    settings = make_settings(aws, other_source_queue_urls=(payments_url,))

    report = make_redriver(aws, settings, clock, sqs=sqs).run(REMAINING)

    assert report.redriven == 4
    assert sorted(m["Body"] for m in receive_all(aws, aws.source_url)) == ["orders:1", "orders:2"]
    assert sorted(m["Body"] for m in receive_all(aws, payments_url)) == ["payments:1", "payments:2"]


def test_a_message_from_a_source_not_configured_is_parked_with_the_reason(aws: Aws, clock: FakeClock) -> None:
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="legacy:1")
    sqs = NamesTheSource(aws.sqs, {"legacy": "legacy-orders"})

    report = make_redriver(aws, make_settings(aws), clock, sqs=sqs).run(REMAINING)

    assert (report.redriven, report.parked) == (0, 1)
    [parked] = receive_all(aws, aws.parking_lot_url)
    reason = parked["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"]
    assert "no configured source queue is arn:aws:sqs:us-east-1:123456789012:legacy-orders" in reason


def open_breaker_long_ago(aws: Aws, clock: FakeClock) -> None:
    settings = make_settings(aws)
    make_redriver(aws, settings, clock).state.save_breaker(
        settings.breaker_key, Breaker().opened(int(clock.now) - 3600, Evidence.RETURNS), expected_version=0
    )


def test_two_different_fifo_messages_with_one_content_identity_are_both_parked(
    fifo: Aws, clock: FakeClock
) -> None:
    # GIVEN two orders of different groups, identical in body and 10 attributes: one content identity
    ten = {f"a{i}": {"DataType": "String", "StringValue": "v"} for i in range(10)}
    for group in ("tenant-1", "tenant-2"):
        fifo.sqs.send_message(
            QueueUrl=fifo.dlq_url,
            MessageBody="refresh",
            MessageGroupId=group,
            MessageDeduplicationId=f"d-{group}",
            MessageAttributes=ten,
        )
    settings = make_settings(
        fifo, max_redrive_count=1, breaker=BreakerPolicy(failure_threshold=100, minimum_volume=1000)
    )
    identity = DlqMessage("x", "r", "refresh", ten).content_identity
    make_redriver(fifo, settings, clock).state.save_records(
        [MessageRecord(Mark(identity, 1, 1, (1,)), RecordStatus.REDRIVEN, fifo.source_url)]
    )

    for _ in range(3):
        clock.advance(60)
        make_redriver(fifo, settings, clock).run(REMAINING)

    # THEN neither is dropped as a FIFO duplicate: their deduplication ids come from their MessageIds
    assert len(receive_all(fifo, fifo.parking_lot_url)) == 2


def test_a_fifo_canary_is_the_first_message_of_its_group(fifo: Aws, clock: FakeClock) -> None:
    send_fifo(fifo, "g-first", "g", marked(Mark("id-first", 2, LONG_AGO, (LONG_AGO + 1, LONG_AGO + 2))))
    send_fifo(fifo, "g-second", "g")
    open_breaker_long_ago(fifo, clock)

    assert make_redriver(fifo, make_settings(fifo), clock).run(REMAINING).canaries == 1

    assert [m["Body"] for m in receive_all(fifo, fifo.source_url)] == ["g-first"]


def test_a_fifo_message_is_not_sent_ahead_of_an_unsent_groupmate(fifo: Aws, clock: FakeClock) -> None:
    send_fifo(fifo, "g-1", "g")
    send_fifo(fifo, "g-2", "g")

    def fails_g1(QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        passing = [e for e in Entries if e["MessageBody"] != "g-1"]
        failed = [
            {"Id": e["Id"], "SenderFault": False, "Code": "InternalError"}
            for e in Entries
            if e not in passing
        ]
        response = fifo.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=passing) if passing else {}
        return {"Successful": response.get("Successful", []), "Failed": failed}

    report = make_redriver(
        fifo, make_settings(fifo), clock, sqs=ClientProxy(fifo.sqs, send_message_batch=fails_g1)
    ).run(REMAINING)

    assert (report.redriven, report.errors) == (0, 1), report
    assert receive_all(fifo, fifo.source_url) == []


def test_a_fifo_canary_that_may_hide_behind_its_group_is_not_counted_a_success(
    fifo: Aws, clock: FakeClock
) -> None:
    # GIVEN a canary from a group of 12: back in the DLQ, it sits behind 11 groupmates
    for i in range(12):
        send_fifo(fifo, f"g-{i}", "g")
    open_breaker_long_ago(fifo, clock)
    settings = make_settings(fifo)
    assert make_redriver(fifo, settings, clock).run(REMAINING).canaries == 1
    [canary] = fifo.sqs.receive_message(QueueUrl=fifo.source_url, MessageAttributeNames=["All"])["Messages"]
    send_fifo(fifo, canary["Body"], "g", canary["MessageAttributes"])  # failed again: back at the tail
    fifo.sqs.delete_message(QueueUrl=fifo.source_url, ReceiptHandle=canary["ReceiptHandle"])
    state = make_redriver(fifo, settings, clock).state

    clock.advance(CANARY_WINDOW + 1)
    postponed = make_redriver(fifo, settings, clock).run(REMAINING)
    clock.advance(CANARY_WINDOW + 1)
    make_visible(fifo.dlq_url)
    judged = make_redriver(fifo, settings, clock).run(REMAINING)

    assert postponed.mode is Mode.VERDICT and postponed.breaker_transitions == []
    assert state.load_breaker(settings.breaker_key).state is State.OPEN
    assert judged.breaker_transitions == ["HALF_OPEN->OPEN"]


def test_a_fifo_message_waiting_out_its_backoff_counts_as_returned_once(fifo: Aws, clock: FakeClock) -> None:
    now = int(clock.now)
    send_fifo(fifo, "o", "g", marked(Mark("id-1", 1, now - 100, (now - 10,))))
    settings = make_settings(fifo, base_delay_seconds=60, max_delay_seconds=900)

    waiting = make_redriver(fifo, settings, clock).run(REMAINING)
    make_visible(fifo.dlq_url)
    clock.advance(900)
    sent = make_redriver(fifo, settings, clock).run(REMAINING)

    assert (waiting.returned, sent.returned, sent.redriven) == (0, 1, 1)
