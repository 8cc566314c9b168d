"""One record of a Lambda SQS event, as the kit reads it and as the kit sends it to the DLQ. Pure:
values in, values out (``aws`` makes the calls).

The record as read (``InboundRecord``): its mark, its delivery count, and its attributes turned back
into the form SendMessage takes.

The dead-lettering (``plan_dead_letter``): a message with room for the mark carries the failure in
it: a fresh mark (identity = the record's MessageId, which the DLQ would have kept, while the kit's
own send gets a new one) or, for a re-driven message, its mark with identity, count and history
kept, the failure set and the re-drive's verdict key and probe flag dropped. A message with no room
goes unchanged, and its failure is written to the state table first, under its content identity.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from sqs_redriver.kit.config import FIFO_SUFFIX
from sqs_redriver.kit.errors import UnsendableRecord
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, DlqMessage, string_attribute
from sqs_redriver.protocol.failure import Failure
from sqs_redriver.protocol.mark import Mark

TRACE_HEADER = "AWSTraceHeader"


@dataclass(frozen=True)
class InboundRecord:
    """The parts of a Lambda SQS record the kit reads; built with ``from_event_record``."""

    message_id: str
    body: str
    event_attributes: Mapping[str, Mapping[str, Any]]  # messageAttributes, as the event has them
    system_attributes: Mapping[str, str] = field(default_factory=dict)
    source_arn: str = ""
    mark: Mark | None = None
    malformed_mark: bool = False

    @property
    def receive_count(self) -> int:
        """ApproximateReceiveCount: 1 on the first delivery of this send."""
        try:
            return max(1, int(self.system_attributes.get("ApproximateReceiveCount", "1")))
        except ValueError:
            return 1

    @property
    def group_id(self) -> str | None:
        return self.system_attributes.get("MessageGroupId")

    @property
    def trace_header(self) -> str | None:
        return self.system_attributes.get(TRACE_HEADER)

    @property
    def verdict_key(self) -> str | None:
        return self.mark.verdict_key if self.mark else None

    @property
    def probe(self) -> bool:
        return bool(self.mark and self.mark.probe)

    @cached_property
    def send_attributes(self) -> dict[str, dict[str, Any]]:
        """Every message attribute in SendMessage form, the mark attribute included as it came."""
        return {name: to_send_attribute(name, value) for name, value in self.event_attributes.items()}

    @cached_property
    def as_dlq_message(self) -> DlqMessage:
        """The message as the re-driver will see it in the DLQ: the same room-for-mark rule and
        content identity (the mark attribute left out, as the re-driver leaves it out)."""
        attributes = {n: v for n, v in self.send_attributes.items() if n != MARK_ATTRIBUTE}
        return DlqMessage(
            message_id=self.message_id, receipt_handle="", body=self.body, attributes=attributes
        )


def from_event_record(raw: Mapping[str, Any]) -> InboundRecord:
    """Parse one record of a Lambda SQS event; a mark the kit cannot read counts as no mark."""
    attributes: Mapping[str, Mapping[str, Any]] = raw.get("messageAttributes") or {}
    mark: Mark | None = None
    malformed = False
    mark_value = attributes.get(MARK_ATTRIBUTE)
    if mark_value is not None:
        try:
            mark = Mark.from_json(str(mark_value.get("stringValue", "")))
        except ValueError:
            malformed = True
    return InboundRecord(
        message_id=str(raw.get("messageId", "")),
        body=str(raw.get("body", "")),
        event_attributes=attributes,
        system_attributes={str(k): str(v) for k, v in (raw.get("attributes") or {}).items()},
        source_arn=str(raw.get("eventSourceARN", "")),
        mark=mark,
        malformed_mark=malformed,
    )


def to_send_attribute(name: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """``{dataType, stringValue | binaryValue (base64)}`` of an event → SendMessage's
    ``{DataType, StringValue | BinaryValue (bytes)}``."""
    data_type = str(value.get("dataType") or value.get("DataType") or "")
    if not data_type:
        raise UnsendableRecord(f"message attribute {name!r} has no dataType")
    if data_type.startswith("Binary"):
        encoded = value.get("binaryValue")
        if isinstance(encoded, bytes):
            return {"DataType": data_type, "BinaryValue": encoded}
        try:
            decoded = base64.b64decode(str(encoded or ""), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise UnsendableRecord(f"message attribute {name!r}: binaryValue is not base64") from exc
        return {"DataType": data_type, "BinaryValue": decoded}
    return {"DataType": data_type, "StringValue": str(value.get("stringValue", ""))}


# Part of every FIFO deduplication id the kit derives, so it never collides with a producer's.
DEDUPLICATION_MARKER = "redriver-kit"


@dataclass(frozen=True)
class DeadLetter:
    """One dead-lettering: the SendMessage request, and the failure record to write before it."""

    send: dict[str, Any]
    identity: str
    failure_record_identity: str | None = None  # set when the message has no room for the mark

    @property
    def marked(self) -> bool:
        return self.failure_record_identity is None


def failed_mark(record: InboundRecord, failure: Failure, now: int) -> Mark:
    """The mark the dead-lettered message carries."""
    if record.mark is None:
        return Mark(identity=record.message_id, count=0, first_failed_at=now, failure=failure)
    return replace(record.mark, failure=failure, verdict_key=None, probe=False)


def plan_dead_letter(record: InboundRecord, failure: Failure, *, dlq_url: str, now: int) -> DeadLetter:
    """The send (and failure record) that dead-letters ``record`` with ``failure``."""
    message = record.as_dlq_message
    request: dict[str, Any] = {"QueueUrl": dlq_url, "MessageBody": record.body}
    if message.has_room_for_mark:
        mark = failed_mark(record, failure, now)
        attributes = {**message.attributes, MARK_ATTRIBUTE: string_attribute(mark.to_json())}
        identity, count, record_identity = mark.identity, mark.count, None
    else:
        attributes = dict(record.send_attributes)
        identity, count, record_identity = message.content_identity, 0, message.content_identity
    if attributes:
        request["MessageAttributes"] = attributes
    if record.trace_header:
        request["MessageSystemAttributes"] = {TRACE_HEADER: string_attribute(record.trace_header)}
    if dlq_url.endswith(FIFO_SUFFIX):
        request["MessageGroupId"] = record.group_id or identity
        request["MessageDeduplicationId"] = deduplication_id(identity, count, record.message_id)
    return DeadLetter(send=request, identity=identity, failure_record_identity=record_identity)


def deduplication_id(identity: str, count: int, message_id: str) -> str:
    """Stable for one failure of one send: a retried SendMessage (or a redelivery of the same
    record failing again) dedups in a FIFO DLQ; the next re-drive (new MessageId, count + 1) does not."""
    text = "\n".join((DEDUPLICATION_MARKER, identity, str(count), message_id))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
