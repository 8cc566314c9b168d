"""Builders shared by the tests: a fake Lambda context, a controllable clock, SQS helpers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from moto.sqs.models import sqs_backends

from demo.emulators import sqs_event
from demo.local_aws import ACCOUNT, REGION

__all__ = ["sqs_event"]  # the demo's event-source emulator builds the events the tests use too


@dataclass
class FakeLambdaContext:
    function_name: str = "redriver"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:redriver"
    aws_request_id: str = "req-1"
    remaining_ms: int = 60_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@dataclass
class FakeClock:
    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def order_body(order_id: str, *, quantity: int = 1) -> str:
    return json.dumps(
        {
            "order_id": order_id,
            "customer_id": "c-1",
            "currency": "EUR",
            "items": [{"sku": "sku-1", "quantity": quantity, "unit_price": "9.90"}],
        }
    )


def drain(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """Receive (and delete) every visible message of a queue."""
    found: list[dict[str, Any]] = []
    while True:
        response = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        if not messages:
            return found
        found.extend(messages)
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )


def depth(sqs: Any, queue_url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def consume(sqs: Any, queue_url: str, fails: Any) -> tuple[list[str], int]:
    """Play a consumer until the queue has nothing visible: delete what succeeds, fail the rest.

    A failed message is made visible again at once (as if its visibility timeout ran out), so with
    the source's RedrivePolicy it reaches the DLQ after maxReceiveCount failed receives.
    Returns the bodies processed and the number of failed receives.
    """
    processed: list[str] = []
    failures = 0
    while True:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return processed, failures
        for message in messages:
            if fails(message):
                failures += 1
                sqs.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                processed.append(message["Body"])
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def always(_: Any) -> bool:
    return True


def never(_: Any) -> bool:
    return False


class PatchedClient:
    """Proxies a boto3 client, letting a test replace chosen operations."""

    def __init__(self, real: Any, **overrides: Any) -> None:
        self._real = real
        self._overrides = overrides

    def __getattr__(self, name: str) -> Any:
        return self._overrides.get(name) or getattr(self._real, name)


def make_visible(queue_url: str) -> None:
    """What waiting out the visibility timeouts of a moto queue would do, without the wait."""
    queue_name = queue_url.rsplit("/", 1)[-1]
    for message in sqs_backends[ACCOUNT][REGION].queues[queue_name]._messages:
        message.change_visibility(0)
