"""The re-driver hearing the consumer: the real consumer kit in a Powertools consumer and the real
re-driver, in-process against moto, on a clock the test moves. A run's waits (``sleep``) let the
consumer work, as they do in Lambda while the consumer runs elsewhere."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from consumer.orders import DownstreamUnavailable, InvalidOrder, parse_order
from local_aws.compose import local_redriver
from local_aws.events import LambdaContext, sqs_event
from local_aws.queues import depth, drain
from sqs_redriver.core.breaker import Mode, State
from sqs_redriver.core.table import StateTable
from sqs_redriver.kit import ConsumerKit
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.runtime.run import Redriver
from tests.support.aws import REMAINING, Aws, fail_into_dlq, make_settings, stored_breaker
from tests.support.factories import FakeClock, order_body
from tests.support.kit import kit_environment

POISON = json.dumps({"order_id": "p-1", "customer_id": "c", "currency": "EUR", "items": []})


class OrderConsumer:
    """The example consumer's order logic behind the kit; ``healthy`` is the downstream's state.
    ``deliveries`` counts every record handed to the function."""

    def __init__(self, aws: Aws, clock: FakeClock) -> None:
        self.aws = aws
        self.healthy = True
        self.deliveries = 0
        self.fulfilled: list[str] = []
        self.kit = ConsumerKit.from_environment(
            terminal=[InvalidOrder],
            transient=[DownstreamUnavailable],
            env=kit_environment(aws),
            sqs=aws.sqs,
            dynamodb=aws.dynamodb,
            clock=clock,
        )

    def handle(self, record: SQSRecord) -> None:
        order = parse_order(record.body)
        if not self.healthy:
            raise DownstreamUnavailable("downstream unavailable")
        self.fulfilled.append(order.order_id)

    def poll(self) -> None:
        """Invoke the function with what the source queue holds, as the event source mapping does;
        failed records become visible again at once."""
        while messages := self.aws.sqs.receive_message(
            QueueUrl=self.aws.source_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", []):
            self.deliveries += len(messages)
            failed = self._invoke(messages)
            for message in messages:
                if message["MessageId"] in failed:
                    self.aws.sqs.change_message_visibility(
                        QueueUrl=self.aws.source_url,
                        ReceiptHandle=message["ReceiptHandle"],
                        VisibilityTimeout=0,
                    )
                else:
                    self.aws.sqs.delete_message(
                        QueueUrl=self.aws.source_url, ReceiptHandle=message["ReceiptHandle"]
                    )

    def _invoke(self, messages: list[dict[str, Any]]) -> set[str]:
        try:
            response = self.kit.process_partial_response(
                event=sqs_event(messages, self.aws.source_arn),
                record_handler=self.handle,
                processor=BatchProcessor(event_type=EventType.SQS),
                context=LambdaContext(),
            )
        except BatchProcessingError:
            return {m["MessageId"] for m in messages}
        return {failure["itemIdentifier"] for failure in response["batchItemFailures"]}


def redriver_hearing(
    aws: Aws, clock: FakeClock, consumer: OrderConsumer, *, listening: bool = True, **overrides: Any
) -> Redriver:
    """A re-driver with consumer verdicts on; its sleeps move the clock and, while ``listening``,
    let the consumer work."""

    def sleep(seconds: float) -> None:
        clock.advance(seconds)
        if listening:
            consumer.poll()

    settings = make_settings(aws, consumer_verdicts=True, verdict_wait_seconds=10, **overrides)
    return local_redriver(settings, sqs=aws.sqs, dynamodb=aws.dynamodb, s3=aws.s3, clock=clock, sleep=sleep)


def open_breaker(aws: Aws, clock: FakeClock) -> None:
    """An OPEN breaker whose cooldown is over."""
    aws.dynamodb.put_item(
        TableName=aws.table_name,
        Item={
            "pk": {"S": f"BREAKER#{aws.source_url}"},
            "state": {"S": State.OPEN.value},
            "failures": {"N": "0"},
            "successes": {"N": "0"},
            "changed_at": {"N": str(int(clock()) - 3600)},
            "version": {"N": "4"},
        },
    )


@pytest.fixture
def consumer(aws: Aws, clock: FakeClock) -> OrderConsumer:
    return OrderConsumer(aws, clock)


def parked_marks(aws: Aws) -> list[dict[str, Any]]:
    return [
        json.loads(m["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
        for m in drain(aws.sqs, aws.parking_lot_url)
    ]


def test_poison_is_parked_at_its_first_failure_with_the_consumers_error(
    aws: Aws, clock: FakeClock, consumer: OrderConsumer
) -> None:
    # GIVEN an invalid order: the kit sends it to the DLQ at its first delivery
    aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=POISON)
    consumer.poll()
    assert consumer.deliveries == 1 and depth(aws.sqs, aws.dlq_url) == 1

    report = redriver_hearing(aws, clock, consumer).run(REMAINING)

    # THEN the next run parks it, never re-driven, with the consumer's error and its fingerprint
    assert (report.parked, report.redriven, report.breaker_state) == (1, 0, State.CLOSED)
    [mark] = parked_marks(aws)
    assert mark["n"] == 0 and mark["parked"]["cause"] == "terminal"
    assert mark["err"]["class"].endswith("InvalidOrder") and mark["err"]["kind"] == "terminal"
    assert (
        "items must be a non-empty list" in mark["parked"]["why"]
        and mark["err"]["fp"] in mark["parked"]["why"]
    )


def test_a_terminal_failure_whose_fingerprint_an_operator_marked_for_retry_is_redriven(
    aws: Aws, clock: FakeClock, consumer: OrderConsumer
) -> None:
    aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=POISON)
    consumer.poll()
    [message] = aws.sqs.receive_message(
        QueueUrl=aws.dlq_url, MessageAttributeNames=["All"], VisibilityTimeout=0
    )["Messages"]
    fingerprint = json.loads(message["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])["err"]["fp"]
    aws.dynamodb.put_item(TableName=aws.table_name, Item={"pk": {"S": RecordKind.RETRY.key(fingerprint)}})

    report = redriver_hearing(aws, clock, consumer, listening=False).run(REMAINING)

    assert (report.redriven, report.parked) == (1, 0)


def test_a_probe_waits_for_the_canarys_verdict_then_closes_and_drains_in_the_same_run(
    aws: Aws, clock: FakeClock, consumer: OrderConsumer
) -> None:
    # GIVEN 6 orders a broken consumer failed into the DLQ, an OPEN breaker past its cooldown,
    # and a consumer that has recovered
    consumer.healthy = False
    fail_into_dlq(aws, aws.source_url, *(order_body(f"o-{i}") for i in range(6)))
    open_breaker(aws, clock)
    consumer.healthy = True

    report = redriver_hearing(aws, clock, consumer).run(REMAINING)
    consumer.poll()

    # THEN two canaries' verdicts close the breaker within seconds, and the same run re-drives the rest
    assert report.mode is Mode.PROBE
    assert report.breaker_transitions == ["OPEN->HALF_OPEN", "HALF_OPEN->CLOSED"]
    assert (report.canaries, report.redriven) == (2, 6)
    assert sorted(consumer.fulfilled) == [f"o-{i}" for i in range(6)]
    assert depth(aws.sqs, aws.dlq_url) == 0


def test_a_canary_the_consumer_still_fails_reopens_the_breaker_after_one_delivery(
    aws: Aws, clock: FakeClock, consumer: OrderConsumer
) -> None:
    consumer.healthy = False
    fail_into_dlq(aws, aws.source_url, *(order_body(f"o-{i}") for i in range(4)))
    open_breaker(aws, clock)
    delivered_before = consumer.deliveries

    report = redriver_hearing(aws, clock, consumer).run(REMAINING)

    # THEN the kit sent the failed probe straight back, and its verdict reopened the breaker
    assert report.breaker_transitions == ["OPEN->HALF_OPEN", "HALF_OPEN->OPEN"]
    assert consumer.deliveries - delivered_before == 1
    assert depth(aws.sqs, aws.dlq_url) == 4 and depth(aws.sqs, aws.source_url) == 0


def test_without_a_verdict_the_canary_waits_for_its_window_and_nothing_is_scanned_meanwhile(
    aws: Aws, clock: FakeClock, consumer: OrderConsumer
) -> None:
    # GIVEN a consumer whose verdicts never arrive (the kit's write fails, or no kit)
    fail_into_dlq(aws, aws.source_url, *(order_body(f"o-{i}") for i in range(4)))
    open_breaker(aws, clock)
    redriver = redriver_hearing(aws, clock, consumer, listening=False)
    # the retention sweep is not due (it scans WATCH runs twice per EXPIRY_MARGIN_SECONDS)
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=1)
    table.save_sweep_due(redriver.settings.sweep_key, int(clock.now) + 3600)

    probe = redriver.run(REMAINING)
    watch = redriver.run(REMAINING)

    assert (probe.canaries, probe.breaker_state) == (1, State.HALF_OPEN)
    assert "canary_ids" in (stored_breaker(aws) or {})  # the canary is still in flight
    assert (watch.mode, watch.received) == (Mode.WATCH, 0)


def test_a_broken_consumer_trips_the_breaker_on_the_trial(
    aws: Aws, clock: FakeClock, consumer: OrderConsumer
) -> None:
    # GIVEN 20 orders in the DLQ, a CLOSED breaker, and a consumer that is still broken
    consumer.healthy = False
    fail_into_dlq(aws, aws.source_url, *(order_body(f"o-{i}") for i in range(20)))
    delivered_before = consumer.deliveries

    report = redriver_hearing(aws, clock, consumer).run(REMAINING)

    # THEN the trial's three messages were delivered once each, and their verdicts opened the breaker
    assert report.breaker_transitions == ["CLOSED->OPEN"]
    assert report.redriven == 3 and consumer.deliveries - delivered_before == 3
    assert depth(aws.sqs, aws.dlq_url) == 20


def test_a_healthy_consumer_answers_the_trial_and_the_run_drains_at_full_rate(
    aws: Aws, clock: FakeClock, consumer: OrderConsumer
) -> None:
    consumer.healthy = False
    fail_into_dlq(aws, aws.source_url, *(order_body(f"o-{i}") for i in range(25)))
    consumer.healthy = True
    started = clock()

    report = redriver_hearing(aws, clock, consumer).run(REMAINING)
    consumer.poll()

    assert (report.redriven, report.breaker_state) == (25, State.CLOSED)
    assert sorted(consumer.fulfilled) == sorted(f"o-{i}" for i in range(25))
    assert clock() - started <= 5  # the trial's verdicts took a poll or two, not the verdict wait


def test_poison_with_no_room_for_the_mark_is_parked_with_the_error_the_kit_recorded(
    aws: Aws, clock: FakeClock, consumer: OrderConsumer
) -> None:
    # GIVEN an invalid order with 10 attributes: its failure can only go to the table
    attributes = {f"a{i}": {"DataType": "String", "StringValue": str(i)} for i in range(10)}
    aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=POISON, MessageAttributes=attributes)
    consumer.poll()

    report = redriver_hearing(aws, clock, consumer).run(REMAINING)

    # THEN it is parked on first sight, intact, and its table record says why
    assert (report.parked, report.redriven) == (1, 0)
    [parked] = drain(aws.sqs, aws.parking_lot_url)
    assert parked["Body"] == POISON and parked["MessageAttributes"] == attributes
    records = aws.dynamodb.scan(TableName=aws.table_name)["Items"]
    [record] = [r for r in records if r["pk"]["S"].startswith("MSG#")]
    assert json.loads(record["reason"]["S"])["cause"] == "terminal"
    assert json.loads(record["failure"]["S"])["class"].endswith("InvalidOrder")
