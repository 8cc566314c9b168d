"""tests/support/dead_letters.py: each dead letter's SendMessage arguments are taken by SQS (moto),
and what a receive gives back reads as the builder's own ReceiveMessage entry does."""

from __future__ import annotations

import pytest

from sqs_redriver.protocol.dead_letters import read_dead_letter
from sqs_redriver.protocol.sources import DeadLetterSource
from tests.support.aws import Aws
from tests.support.dead_letters import (
    FUNCTION_ARN,
    FUNCTION_SOURCE,
    RAW_SUBSCRIPTION_SOURCE,
    RULE_TARGET_SOURCE,
    SUBSCRIPTION_SOURCE,
    AwsDeadLetter,
    destination_record,
    function_dlq_message,
    rule_event,
    rule_target_dlq_message,
    subscription_dlq_message,
)

EVENT = {"order_id": "o-17", "note": "café ☕"}
LETTERS = {
    "destination record": (destination_record(f"{FUNCTION_ARN}:$LATEST", EVENT), FUNCTION_SOURCE),
    "dropped destination record": (destination_record(FUNCTION_ARN, EVENT, dropped=True), FUNCTION_SOURCE),
    "function DLQ": (function_dlq_message(EVENT), FUNCTION_SOURCE),
    "rule target DLQ": (rule_target_dlq_message(rule_event(EVENT)), RULE_TARGET_SOURCE),
    "notification": (subscription_dlq_message("café ☕", attributes={"kind": "order"}), SUBSCRIPTION_SOURCE),
    "raw delivery": (
        subscription_dlq_message("café ☕", raw=True, attributes={"kind": "order", "sig": b"\x00\xff"}),
        RAW_SUBSCRIPTION_SOURCE,
    ),
}


@pytest.mark.parametrize(("letter", "source"), LETTERS.values(), ids=LETTERS.keys())
def test_a_sent_dead_letter_is_received_as_its_builder_says(
    aws: Aws, letter: AwsDeadLetter, source: DeadLetterSource
) -> None:
    aws.sqs.send_message(QueueUrl=aws.dlq_url, **letter.send_kwargs())

    received = aws.sqs.receive_message(
        QueueUrl=aws.dlq_url, MessageAttributeNames=["All"], MessageSystemAttributeNames=["All"]
    )["Messages"][0]

    built = letter.received()
    assert received["Body"] == built["Body"]
    assert received["MD5OfBody"] == built["MD5OfBody"]
    assert received.get("MessageAttributes", {}) == built.get("MessageAttributes", {})
    assert set(built["Attributes"]) <= set(received["Attributes"])
    expected = read_dead_letter(built["Body"], built.get("MessageAttributes", {}), [source])
    assert read_dead_letter(received["Body"], received.get("MessageAttributes", {}), [source]) == expected
    assert expected.source == source
