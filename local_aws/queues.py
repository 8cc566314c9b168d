"""Looking into SQS queues: how many messages they hold, everything they hold (taken or only looked
at), the re-driver's mark on a message, and (for moto's in-process backend) their visibility
timeouts waited out at once."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from moto.sqs.models import sqs_backends

from local_aws import ACCOUNT, REGION
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE

COUNT_ATTRIBUTES = {
    "visible": "ApproximateNumberOfMessages",
    "in_flight": "ApproximateNumberOfMessagesNotVisible",
    "delayed": "ApproximateNumberOfMessagesDelayed",
}


@dataclass(frozen=True)
class QueueCounts:
    visible: int
    in_flight: int
    delayed: int

    @property
    def total(self) -> int:
        return self.visible + self.in_flight + self.delayed


def queue_counts(sqs: Any, queue_url: str) -> QueueCounts:
    """A queue's approximate counts, from one GetQueueAttributes."""
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=list(COUNT_ATTRIBUTES.values()))
    return QueueCounts(
        **{field: int(attributes["Attributes"][name]) for field, name in COUNT_ATTRIBUTES.items()}
    )


def depth(sqs: Any, queue_url: str) -> int:
    """Messages in the queue, visible or in flight (delayed ones not counted)."""
    counts = queue_counts(sqs, queue_url)
    return counts.visible + counts.in_flight


def drain(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """Receive (and delete) every visible message of a queue, with all its attributes."""
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


def peek(sqs: Any, queue_url: str, hold_seconds: int = 60) -> list[dict[str, Any]]:
    """Every visible message of a queue, with all its attributes, given back afterwards (each is
    held while the others are read, so none is read twice)."""
    found: list[dict[str, Any]] = []
    while messages := sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        VisibilityTimeout=hold_seconds,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages", []):
        found.extend(messages)
    for start in range(0, len(found), 10):
        batch = found[start : start + 10]
        sqs.change_message_visibility_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                for i, m in enumerate(batch)
            ],
        )
    return found


def mark_data(message: dict[str, Any]) -> dict[str, Any]:
    """The re-driver's mark on a received message, as JSON data ({} without one)."""
    value = (message.get("MessageAttributes") or {}).get(MARK_ATTRIBUTE, {}).get("StringValue")
    mark: dict[str, Any] = json.loads(value) if value else {}
    return mark


def make_visible(queue_url: str) -> None:
    """What waiting out the visibility timeouts of a moto queue would do, without the wait (moto's
    backend of this process: in-process `mock_aws` or a `ThreadedMotoServer` started here)."""
    queue_name = queue_url.rsplit("/", 1)[-1]
    for message in sqs_backends[ACCOUNT][REGION].queues[queue_name]._messages:
        message.change_visibility(0)
