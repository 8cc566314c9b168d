"""What the Lambda service hands a handler: its context object, and the events of an SQS event
source mapping and of an EventBridge schedule."""

from __future__ import annotations

import base64
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from local_aws import ACCOUNT, REGION


@dataclass
class LambdaContext:
    """The parts of the Lambda context object the handlers use; the time left counts down from
    ``timeout_seconds`` from when it is created, as the invocation's does."""

    function_name: str = "redriver"
    timeout_seconds: float = 60
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 256
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.started + self.timeout_seconds - time.monotonic()) * 1000))


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """The event Lambda's SQS event source mapping builds from received messages (binary attribute
    values in base64, as Lambda sends them)."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {
                    name: {
                        "dataType": value["DataType"],
                        **({"stringValue": value["StringValue"]} if "StringValue" in value else {}),
                        **(
                            {"binaryValue": base64.b64encode(value["BinaryValue"]).decode("ascii")}
                            if "BinaryValue" in value
                            else {}
                        ),
                    }
                    for name, value in (m.get("MessageAttributes") or {}).items()
                },
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
    }


def scheduled_event(event_id: str | None = None, *, rule_name: str = "schedule") -> dict[str, Any]:
    """The event an EventBridge schedule rule sends; a new id unless ``event_id`` is given (EventBridge
    delivers at least once: a repeated delivery has the same id)."""
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{rule_name}"],
        "detail": {},
    }
