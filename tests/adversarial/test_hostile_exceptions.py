"""Exceptions a consumer raises are input too: text full of secrets, and exceptions that will not
print. End to end: the kit dead-letters them, the re-driver parks them; no secret reaches the DLQ,
the parking reason or the archive, and the rest of the consumer's batch is consumed."""

from __future__ import annotations

import json

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sqs_redriver.kit import ConsumerKit, TerminalError
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings
from tests.support.broken_exceptions import Unprintable
from tests.support.factories import FakeClock
from tests.support.kit import kit_environment, receive, run, send
from tests.support.ledger import PARKING_LOT, assert_breaker_closed, assert_each_ended_once

SECRETS = ("AKIAIOSFODNN7EXAMPLE", "hunter2-s3cret", "eyJhbGciOiJIUzI1NiJ9.e30.sig")
LEAKY = f"db login failed: postgres://admin:{SECRETS[1]}@db/orders, key {SECRETS[0]}, Bearer {SECRETS[2]}"


def consumer(record: SQSRecord) -> str:
    kind = record.body.split("|", 1)[0]
    if kind == "leaky":
        raise TerminalError(LEAKY)
    if kind == "unprintable":
        raise Unprintable()
    return "done"


def test_secret_laden_and_unprintable_exceptions_are_parked_without_a_secret_and_the_rest_consumed(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN a consumer batch: one failure whose text holds secrets, one that will not print, two fine
    for body in ("leaky|", "unprintable|", "fine-1|", "fine-2|"):
        send(aws, body)
    kit = ConsumerKit.from_environment(
        env=kit_environment(aws),
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        clock=clock,
    )

    # WHEN the kit handles the batch (unknown errors are terminal) and the re-driver runs
    batch = receive(aws)
    assert run(kit, aws, consumer, batch) == []  # nothing left to SQS's retries
    for message in batch:  # as the event source mapping does with a batch that succeeded
        aws.sqs.delete_message(QueueUrl=aws.source_url, ReceiptHandle=message["ReceiptHandle"])
    settings = make_settings(aws)
    redriver = make_redriver(aws, settings, clock)
    report = redriver.run(REMAINING)

    # THEN both failures are parked at once, the fine ones are consumed, nothing else anywhere
    assert (report.parked, report.redriven, report.errors) == (2, 0, 0)
    assert_each_ended_once(aws, {"leaky": PARKING_LOT, "unprintable": PARKING_LOT})
    assert_breaker_closed(redriver, settings)
    # and no secret is in what the parking kept: the archive holds each message whole, with its mark
    archived = [
        aws.s3.get_object(Bucket=aws.archive_bucket, Key=o["Key"])["Body"].read().decode()
        for o in aws.s3.list_objects_v2(Bucket=aws.archive_bucket)["Contents"]
    ]
    assert len(archived) == 2 and not [s for s in SECRETS for text in archived if s in text]
    reasons = [json.loads(text)["reason"]["why"] for text in archived]
    assert any("<redacted>" in why for why in reasons), reasons
    assert any("<unprintable Unprintable>" in why for why in reasons), reasons
