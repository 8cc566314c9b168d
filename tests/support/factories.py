"""Test-only builders: a controllable clock, order bodies, a consumer that fails on demand, a DLQ
that knows each message's source. The Lambda context, events, queue helpers and client proxies the
demo and the bench use too are in `local_aws`."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from local_aws import ACCOUNT, REGION
from local_aws.clients import ClientProxy

# A time a test's mark may hold for "long ago": marks are held to 2000..now (model/mark.py).
LONG_AGO = 1_700_000_000
# As many message attributes as SQS allows: no room left for the re-driver's mark.
# The Lambda's required variables: what settings tests start from.
SETTINGS_DLQ_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
SETTINGS_SOURCE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
SETTINGS_PARKING_LOT_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-parking-lot"
REQUIRED_VARIABLES = {
    "DLQ_URL": SETTINGS_DLQ_URL,
    "SOURCE_QUEUE_URL": SETTINGS_SOURCE_URL,
    "PARKING_LOT_URL": SETTINGS_PARKING_LOT_URL,
    "DYNAMODB_TABLE_NAME": "state",
}
TEN_ATTRIBUTES = {f"a{i}": {"DataType": "String", "StringValue": str(i)} for i in range(10)}


@dataclass
class FakeClock:
    # Starts at the real time: moto stamps SentTimestamp with it, and the retention guard counts a
    # message's age from that stamp.
    now: float = field(default_factory=lambda: float(int(time.time())))

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def catch_up(self) -> None:
        """Move to the second under way, when it lags: a fixture's clock is taken before the test
        sends, and moto stamps SentTimestamp with the real time of the send, so on a busy machine a
        message "sent now" would look younger than the ages a test counts out from here."""
        self.now = max(self.now, float(int(time.time())))


def order_body(order_id: str, *, quantity: int = 1) -> str:
    return json.dumps(
        {
            "order_id": order_id,
            "customer_id": "c-1",
            "currency": "EUR",
            "items": [{"sku": "sku-1", "quantity": quantity, "unit_price": "9.90"}],
        }
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


class NamesTheSource(ClientProxy):
    """Real SQS adds DeadLetterQueueSourceArn to messages it moves to a DLQ; moto does not. The
    source is the queue ``source_of`` maps the body's prefix (before ``:``) to; none if unmapped."""

    def __init__(self, client: Any, source_of: dict[str, str]) -> None:
        super().__init__(client)
        self._source_of = source_of

    def receive_message(self, **kwargs: Any) -> Any:
        response = self._client.receive_message(**kwargs)
        for message in response.get("Messages", []):
            queue = self._source_of.get(message["Body"].split(":")[0])
            if queue is not None:
                message.setdefault("Attributes", {})["DeadLetterQueueSourceArn"] = (
                    f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}"
                )
        return response
