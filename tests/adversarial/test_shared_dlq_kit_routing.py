"""A DLQ shared by two sources, and messages the consumer kit dead-lettered itself: SQS names no
source for those (no DeadLetterQueueSourceArn), so the kit's record of its own queue (``err.src``)
routes them, and only to a configured source."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from local_aws.events import LambdaContext, sqs_event
from local_aws.resources import queue_arn
from sqs_redriver.kit import ConsumerKit
from sqs_redriver.protocol.settings import ENV_DLQ_URL, ENV_MAX_RECEIVE_COUNT, ENV_TABLE_NAME
from tests.support.aws import MAX_RECEIVE_COUNT, REMAINING, Aws, make_redriver, make_settings
from tests.support.factories import FakeClock
from tests.support.ledger import (
    PARKING_LOT,
    SOURCE,
    assert_breaker_closed,
    assert_each_ended_once,
    mark_json,
    marked_attribute,
)

PAYMENTS = "payments"


class Unavailable(Exception):
    """The payments consumer's downstream is down: a transient failure."""


def failing_consumer(aws: Aws, clock: FakeClock) -> ConsumerKit:
    env = {
        ENV_DLQ_URL: aws.dlq_url,
        ENV_TABLE_NAME: aws.table_name,
        ENV_MAX_RECEIVE_COUNT: str(MAX_RECEIVE_COUNT),
    }
    return ConsumerKit.from_environment(
        transient=[Unavailable], env=env, sqs=aws.sqs, dynamodb=aws.dynamodb, clock=clock
    )


def fail_on_last_attempt(aws: Aws, kit: ConsumerKit, queue_url: str) -> None:
    """Deliver the queue's messages until their last attempt, failing each: the kit dead-letters
    them itself on that attempt (a transient failure at maxReceiveCount)."""

    def handler(record: SQSRecord) -> None:
        raise Unavailable("payments downstream unavailable")

    for _ in range(MAX_RECEIVE_COUNT):
        messages: list[dict[str, Any]] = aws.sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=0,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        event = sqs_event(messages, queue_arn(aws.sqs, queue_url))
        try:
            response = kit.process_partial_response(
                event=event,
                record_handler=handler,
                processor=BatchProcessor(event_type=EventType.SQS),
                context=LambdaContext(),
            )
        except BatchProcessingError:  # every record failed: SQS retries them all
            continue
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        handled = {m["MessageId"] for m in messages} - failed
        for message in messages:
            if message["MessageId"] in handled:
                aws.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def test_a_message_the_kit_dead_lettered_from_the_second_source_goes_back_to_it(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN payments, the second source of orders' DLQ, whose consumer (with the kit) fails two
    # messages for good; and orders' own failures in the same DLQ
    payments_url = aws.sqs.create_queue(QueueName=PAYMENTS)["QueueUrl"]
    for i in range(2):
        aws.sqs.send_message(QueueUrl=payments_url, MessageBody=f"payment-{i}|")
    fail_on_last_attempt(aws, failing_consumer(aws, clock), payments_url)
    for i in range(3):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"order-{i}|")
    settings = make_settings(aws, other_source_queue_urls=(payments_url,))
    redriver = make_redriver(aws, settings, clock)

    report = redriver.run(REMAINING)

    # THEN the payments go back to payments, the orders to orders
    assert (report.redriven, report.parked, report.errors) == (5, 0, 0)
    expected = {"payment-0": PAYMENTS, "payment-1": PAYMENTS} | {f"order-{i}": SOURCE for i in range(3)}
    assert_each_ended_once(aws, expected, payments=payments_url)
    assert_breaker_closed(redriver, settings, payments_url)


def test_a_kit_source_that_is_not_configured_is_parked_not_sent_elsewhere(aws: Aws, clock: FakeClock) -> None:
    # GIVEN a failure claiming to come from a queue this re-driver does not serve
    now = int(clock.now)
    legacy = "arn:aws:sqs:us-east-1:123456789012:legacy"
    err = {"kind": "transient", "class": "E", "msg": "m", "fp": "0123", "at": now, "try": 2, "src": legacy}
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody="claims-legacy|",
        MessageAttributes=marked_attribute(mark_json(err=err)),
    )
    for i in range(3):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"order-{i}|")
    settings = make_settings(aws)
    redriver = make_redriver(aws, settings, clock)

    report = redriver.run(REMAINING)

    assert (report.redriven, report.parked, report.errors) == (3, 1, 0)
    assert_each_ended_once(aws, {"claims-legacy": PARKING_LOT} | {f"order-{i}": SOURCE for i in range(3)})
    assert_breaker_closed(redriver, settings)
