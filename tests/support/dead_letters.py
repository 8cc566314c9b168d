"""Dead letters of other AWS services as AWS writes them into a DLQ, and sample sources of each kind.

Each builder gives an ``AwsDeadLetter``: ``received()`` is one entry of ReceiveMessage's
``Messages`` (what the re-driver reads), ``send_kwargs()`` SendMessage's arguments but the queue
(``sqs.send_message(QueueUrl=url, **letter.send_kwargs())`` puts it into a moto queue, as moto does
not write these itself). The shapes follow the AWS documentation: the Lambda Developer Guide
(an asynchronous invocation's destination record; a function's dead-letter queue and its
RequestID, ErrorCode and ErrorMessage attributes), the EventBridge User Guide (a rule target's
dead-letter queue and its attributes) and the SNS Developer Guide (a subscription's redrive policy;
the notification's JSON envelope, or raw message delivery).
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from local_aws import ACCOUNT, REGION
from sqs_redriver.protocol.sources import DeadLetterSource, Retries, SourceKind, TargetKind

FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:orders"
OTHER_FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:invoices"
RULE_ARN = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/orders-placed"
RULE_TARGET_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:fulfilment"
TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:orders"
OTHER_TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:refunds"
SUBSCRIPTION_ARN = f"{TOPIC_ARN}:3f1c2b7e-8d5a-4e1b-9c7f-0a2d4e6b8c10"
RAW_SUBSCRIPTION_ARN = f"{TOPIC_ARN}:9a7e5c3b-1f2d-4b6a-8e0c-5d7f9b1a3c24"
SUBSCRIBER_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:order-emails"
RAW_SUBSCRIBER_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:order-audit"

# Lambda's asynchronous default: the first try and two retries, a minute and two minutes apart.
FUNCTION_SOURCE = DeadLetterSource(
    kind=SourceKind.FUNCTION,
    arn=FUNCTION_ARN,
    target_kind=TargetKind.FUNCTION,
    target_arn=FUNCTION_ARN,
    retries=Retries(attempts=3, attempt_seconds=180),
)
OTHER_FUNCTION_SOURCE = DeadLetterSource(
    kind=SourceKind.FUNCTION,
    arn=OTHER_FUNCTION_ARN,
    target_kind=TargetKind.FUNCTION,
    target_arn=OTHER_FUNCTION_ARN,
    retries=Retries(attempts=3, attempt_seconds=180),
)
RULE_TARGET_SOURCE = DeadLetterSource(
    kind=SourceKind.RULE_TARGET,
    arn=RULE_ARN,
    target_kind=TargetKind.QUEUE,
    target_arn=RULE_TARGET_ARN,
    target_id="fulfilment",
)
SUBSCRIPTION_SOURCE = DeadLetterSource(
    kind=SourceKind.SUBSCRIPTION,
    arn=SUBSCRIPTION_ARN,
    target_kind=TargetKind.QUEUE,
    target_arn=SUBSCRIBER_QUEUE_ARN,
    topic_arn=TOPIC_ARN,
)
RAW_SUBSCRIPTION_SOURCE = DeadLetterSource(
    kind=SourceKind.SUBSCRIPTION,
    arn=RAW_SUBSCRIPTION_ARN,
    target_kind=TargetKind.QUEUE,
    target_arn=RAW_SUBSCRIBER_QUEUE_ARN,
    topic_arn=TOPIC_ARN,
    raw_delivery=True,
)
SAMPLE_SOURCES = (
    FUNCTION_SOURCE,
    OTHER_FUNCTION_SOURCE,
    RULE_TARGET_SOURCE,
    SUBSCRIPTION_SOURCE,
    RAW_SUBSCRIPTION_SOURCE,
)

# The records' fixed times: tests do not depend on the clock.
TIMESTAMP = "2026-01-05T10:20:30.405Z"
SENT_MILLISECONDS = "1767608430405"


@dataclass(frozen=True)
class AwsDeadLetter:
    """A DLQ message as AWS wrote it: its body and its message attributes (SQS's shape)."""

    body: str
    attributes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def send_kwargs(self) -> dict[str, Any]:
        """SendMessage's arguments but QueueUrl."""
        kwargs: dict[str, Any] = {"MessageBody": self.body}
        if self.attributes:
            kwargs["MessageAttributes"] = self.attributes
        return kwargs

    def received(self, message_id: str = "", receipt_handle: str = "") -> dict[str, Any]:
        """One entry of ReceiveMessage's Messages (all attributes asked for); SQS leaves out
        MessageAttributes when there are none."""
        message_id = message_id or str(uuid.uuid5(uuid.NAMESPACE_URL, self.body))
        entry: dict[str, Any] = {
            "MessageId": message_id,
            "ReceiptHandle": receipt_handle or f"receipt-{message_id}",
            "MD5OfBody": hashlib.md5(self.body.encode("utf-8")).hexdigest(),
            "Body": self.body,
            "Attributes": {
                "SenderId": f"AROAEXAMPLE:{ACCOUNT}",
                "ApproximateReceiveCount": "1",
                "SentTimestamp": SENT_MILLISECONDS,
                "ApproximateFirstReceiveTimestamp": SENT_MILLISECONDS,
            },
        }
        if self.attributes:
            entry["MessageAttributes"] = self.attributes
        return entry


def destination_record(
    function_arn: str,
    payload: Any,
    *,
    request_id: str = "",
    error_type: str = "ValueError",
    error_message: str = "the order has no items",
    condition: str = "RetriesExhausted",
    dropped: bool = False,
) -> AwsDeadLetter:
    """A function's on-failure destination record for an SQS queue: the invocation record as the
    body, no attributes. ``function_arn`` goes in as given: Lambda writes the invoked ARN, a
    qualified one (``:$LATEST``, a version, an alias). ``dropped``: the record did not fit, and
    Lambda left the request and response payloads out."""
    record: dict[str, Any] = {
        "version": "1.0",
        "timestamp": TIMESTAMP,
        "requestContext": {
            "requestId": request_id or _uuid_of(json.dumps(payload)),
            "functionArn": function_arn,
            "condition": condition,
            "approximateInvokeCount": 3,
        },
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {
            "errorMessage": error_message,
            "errorType": error_type,
            "requestId": "",
            "stackTrace": ['  File "/var/task/app.py", line 12, in handler\n    raise ValueError(message)\n'],
        },
    }
    if dropped:
        del record["requestPayload"], record["responsePayload"]
    return AwsDeadLetter(json.dumps(record, indent=4))


def function_dlq_message(
    payload: Any,
    *,
    request_id: str = "",
    error_code: int = 200,
    error_message: str = "RequestId: 5d1f Error: the order has no items",
) -> AwsDeadLetter:
    """A message of a function's dead-letter queue: the event Lambda invoked it with, unchanged
    (here as ``json.dumps`` writes it, spaces included), and Lambda's attributes: RequestID
    (String), ErrorCode (Number: the HTTP status; a function error is 200) and ErrorMessage."""
    body = json.dumps(payload)
    return AwsDeadLetter(
        body,
        {
            "RequestID": _string(request_id or _uuid_of(body)),
            "ErrorCode": {"DataType": "Number", "StringValue": str(error_code)},
            "ErrorMessage": _string(error_message),
        },
    )


def rule_target_dlq_message(
    event: Mapping[str, Any],
    *,
    rule_arn: str = RULE_ARN,
    target_arn: str = RULE_TARGET_ARN,
    error_code: str = "SDK_CLIENT_ERROR",
    error_message: str = "Failed to send the event to the target (AccessDenied)",
    retry_attempts: int = 0,
    exhausted_retry_condition: str = "MaximumRetryAttempts",
) -> AwsDeadLetter:
    """A message of a rule target's dead-letter queue: the event, and EventBridge's attributes."""
    return AwsDeadLetter(
        json.dumps(event),
        {
            "RULE_ARN": _string(rule_arn),
            "TARGET_ARN": _string(target_arn),
            "ERROR_CODE": _string(error_code),
            "ERROR_MESSAGE": _string(error_message),
            "EXHAUSTED_RETRY_CONDITION": _string(exhausted_retry_condition),
            "RETRY_ATTEMPTS": _string(str(retry_attempts)),
        },
    )


def rule_event(detail: Mapping[str, Any], *, detail_type: str = "Order Placed") -> dict[str, Any]:
    """An event a rule matched, as EventBridge delivers it."""
    return {
        "version": "0",
        "id": _uuid_of(json.dumps(detail, sort_keys=True)),
        "detail-type": detail_type,
        "source": "shop.orders",
        "account": ACCOUNT,
        "time": TIMESTAMP[:19] + "Z",
        "region": REGION,
        "resources": [],
        "detail": dict(detail),
    }


def subscription_dlq_message(
    message: str,
    *,
    topic_arn: str = TOPIC_ARN,
    raw: bool = False,
    attributes: Mapping[str, str | bytes] | None = None,
    subject: str | None = None,
) -> AwsDeadLetter:
    """A message of a subscription's dead-letter queue: what SNS would have delivered to a queue.
    Raw delivery: the message itself, its attributes as SQS message attributes (a str a String,
    bytes a Binary); otherwise the notification's JSON envelope, the attributes inside it."""
    attributes = attributes or {}
    if raw:
        return AwsDeadLetter(message, {name: _sqs_attribute(value) for name, value in attributes.items()})
    return AwsDeadLetter(_envelope(message, topic_arn, attributes, subject))


def _envelope(
    message: str, topic_arn: str, attributes: Mapping[str, str | bytes], subject: str | None
) -> str:
    region = topic_arn.split(":")[3]
    endpoint = f"https://sns.{region}.amazonaws.com"
    envelope: dict[str, Any] = {
        "Type": "Notification",
        "MessageId": _uuid_of(topic_arn + message),
        "TopicArn": topic_arn,
        "Subject": subject,
        "Message": message,
        "Timestamp": TIMESTAMP,
        "SignatureVersion": "1",
        "Signature": base64.b64encode(hashlib.sha256(message.encode("utf-8")).digest() * 8).decode(),
        "SigningCertURL": f"{endpoint}/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem",
        "UnsubscribeURL": f"{endpoint}/?Action=Unsubscribe&SubscriptionArn={topic_arn}:{_uuid_of(topic_arn)}",
        "MessageAttributes": {name: _sns_attribute(value) for name, value in attributes.items()},
    }
    if subject is None:
        del envelope["Subject"]
    if not attributes:
        del envelope["MessageAttributes"]
    # SNS writes its envelope indented, with a space either side of each colon.
    return json.dumps(envelope, indent=2, separators=(",", " : "), ensure_ascii=False)


def _string(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}


def _sqs_attribute(value: str | bytes) -> dict[str, Any]:
    if isinstance(value, bytes):
        return {"DataType": "Binary", "BinaryValue": value}
    return _string(value)


def _sns_attribute(value: str | bytes) -> dict[str, str]:
    if isinstance(value, bytes):
        return {"Type": "Binary", "Value": base64.b64encode(value).decode()}
    return {"Type": "String", "Value": value}


def _uuid_of(text: str) -> str:
    """A deterministic id: the same content, the same id."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, text))
