"""One record of a Lambda SQS event, as the kit needs it: its mark, its delivery count, and its
attributes turned back into the form SendMessage takes."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, DlqMessage
from sqs_redriver.protocol.mark import Mark

TRACE_HEADER = "AWSTraceHeader"


class UnsendableRecord(ValueError):
    """The record cannot be sent back as it came (e.g. a binary attribute that is not base64)."""


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
