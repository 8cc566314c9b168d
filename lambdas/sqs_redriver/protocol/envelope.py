"""What the re-driver knows about one DLQ message, and how that travels with the message.

SQS gives every SendMessage a new MessageId, so a message's identity and re-drive count travel in
one reserved message attribute (the *mark*). When a message has no room for the mark (10
attributes already, or the mark would push it past the size limit), its identity is a hash of its
content and its count lives only in the state table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from sqs_redriver.protocol.dead_letters import DeadLetter, read_dead_letter
from sqs_redriver.protocol.keys import trip_subject
from sqs_redriver.protocol.limits import MAX_MARK_BYTES, SQS_MAX_MESSAGE_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES
from sqs_redriver.protocol.mark import MARK_SUBJECT, Mark, read_mark
from sqs_redriver.protocol.wire import Rejection

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqs_redriver.protocol.sources import DeadLetterSource

MARK_ATTRIBUTE = "dlq-redriver"
HASH_IDENTITY_PREFIX = "sha256:"

MessageAttributes = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class DlqMessage:
    """One message received from the DLQ, with the re-driver's mark split off its attributes."""

    message_id: str
    receipt_handle: str
    body: str
    attributes: MessageAttributes = field(default_factory=dict)
    system_attributes: Mapping[str, str] = field(default_factory=dict)
    mark: Mark | None = None
    # Why the mark it carried was not taken (whole, or its consumer failure): logged by the run.
    mark_rejection: Rejection | None = None
    # A dead letter of another service (a DLQ of another kind): what it holds, read once.
    dead_letter: DeadLetter | None = None

    @property
    def malformed_mark(self) -> bool:
        """It carried a mark that was not valid (it is then treated as unmarked)."""
        return self.mark is None and self.mark_rejection is not None

    # Cached: both read the whole body (up to 1 MiB), and a run asks several times per message.
    @cached_property
    def has_room_for_mark(self) -> bool:
        """True when the mark fits: fewer than 10 attributes and size within the SQS limit. A dead
        letter of another service never carries one: its target cannot give it back (a function's
        next failure is a new record), so its count lives in the table."""
        return self.dead_letter is None and has_room_for_mark(self.body, self.attributes)

    @cached_property
    def content_identity(self) -> str:
        """An identity derived from body and attributes, for messages that cannot carry a mark. A
        dead letter's is its source's address and what goes back to it (payload and attributes): a
        function's event that fails again comes back in a new record (a new request id), and is
        still the same."""
        dead_letter, attributes = self.dead_letter, self.attributes
        if dead_letter is not None and dead_letter.payload is not None:
            source = dead_letter.source.address if dead_letter.source else ""
            digest = hashlib.sha256(b"dead-letter\0" + source.encode("utf-8") + b"\0")
            digest.update(dead_letter.payload.encode("utf-8", "surrogatepass"))
            attributes = dead_letter.attributes
        else:
            digest = hashlib.sha256(self.body.encode("utf-8"))
        for name in sorted(attributes):
            value = attributes[name]
            digest.update(b"\0" + name.encode("utf-8") + b"\0" + value["DataType"].encode("utf-8"))
            digest.update(b"\0" + _attribute_value_bytes(value))
        return HASH_IDENTITY_PREFIX + digest.hexdigest()

    @cached_property
    def record_key(self) -> str:
        """The subject of the table record that counts this message (no mark, no room for one):
        its content identity; a dead letter of a source, one trip of it (``trip_subject``). A
        function's failure comes back with the request id that the re-driver's Invoke got back,
        and the re-driver records the count under that trip before the failure can arrive: only
        such a dead letter continues a count (a return). One with any other request id is a dead
        letter of its own, counted from 0, however like another its payload is. A target that
        answers in the call sends nothing back here: each DLQ message is its own trip."""
        dead_letter = self.dead_letter
        if dead_letter is None or dead_letter.source is None or dead_letter.payload is None:
            return self.content_identity
        if dead_letter.source.failures_return and dead_letter.request_id:
            return invocation_trip(self.content_identity, dead_letter.request_id)
        return trip_subject(self.content_identity, "message:" + self.message_id)

    @property
    def source_arn(self) -> str | None:
        return self.system_attributes.get("DeadLetterQueueSourceArn")


def invocation_trip(identity: str, request_id: str) -> str:
    """The trip of a function's dead letter that failed in the invocation of ``request_id``: where
    the re-driver records the count of a re-drive its Invoke got that request id for."""
    return trip_subject(identity, "request:" + request_id)


def from_sqs(raw: Mapping[str, Any], sources: Sequence[DeadLetterSource] = ()) -> DlqMessage:
    """Build a DlqMessage from one entry of a ReceiveMessage response. Never raises for what a
    sender wrote: a mark that is not valid is left out, with the rejection that says why. The
    message of a DLQ of another kind (``sources``) is read as that kind's dead letter; the mark
    attribute is the re-driver's there too (a parked copy's parking reason), never the dead
    letter's: it is set aside, unread (a dead letter's count lives in the table)."""
    attributes = dict(raw.get("MessageAttributes") or {})
    body = raw.get("Body", "")
    if sources:
        attributes.pop(MARK_ATTRIBUTE, None)
    dead_letter = read_dead_letter(body, attributes, sources) if sources else None
    mark, rejection = (None, None) if sources else _mark_of(body, attributes)
    return DlqMessage(
        message_id=raw["MessageId"],
        receipt_handle=raw["ReceiptHandle"],
        body=body,
        attributes=attributes,
        system_attributes=dict(raw.get("Attributes") or {}),
        mark=mark,
        mark_rejection=rejection,
        dead_letter=dead_letter,
    )


def _mark_of(body: str, attributes: dict[str, Any]) -> tuple[Mark | None, Rejection | None]:
    """The mark, taken out of ``attributes``: ``split_mark``'s result, on a message with room for it."""
    mark, rejection = split_mark(attributes.pop(MARK_ATTRIBUTE, None))
    if mark is not None and not has_room_for_mark(body, attributes):
        # Neither the re-driver nor the kit marks a message without room: the mark grows on its
        # next send and would push it past the size limit. Its count lives in the table instead.
        size = message_size(body, attributes)
        problem = f"is on a message with no room for one ({size} bytes)"
        mark, rejection = None, Rejection("mark", problem, subject=MARK_SUBJECT)
    return mark, rejection


def split_mark(value: Mapping[str, Any] | None) -> tuple[Mark | None, Rejection | None]:
    """The mark of a ``dlq-redriver`` attribute as SQS returns it (``read_mark``'s result)."""
    if value is None:
        return None, None
    data_type = str(value.get("DataType", ""))
    if data_type.split(".", 1)[0] != "String" or "StringValue" not in value:
        problem = f"has data type {data_type[:40]!r}, not String"
        return None, Rejection(MARK_ATTRIBUTE, problem, subject=MARK_SUBJECT)
    return read_mark(value["StringValue"])


def has_room_for_mark(body: str, attributes: MessageAttributes) -> bool:
    """True when a mark fits: fewer than 10 attributes, and the size limit with the bytes reserved
    for the mark (MAX_MARK_BYTES; settings cap the history length so a mark always fits, tested)."""
    if len(attributes) >= SQS_MAX_MESSAGE_ATTRIBUTES:
        return False
    return message_size(body, attributes) + MAX_MARK_BYTES <= SQS_MAX_MESSAGE_BYTES


def string_attribute(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}


def _attribute_value_bytes(value: Mapping[str, Any]) -> bytes:
    if "BinaryValue" in value:
        binary = value["BinaryValue"]
        return binary if isinstance(binary, bytes) else bytes(binary)
    return str(value.get("StringValue", "")).encode("utf-8")


def attribute_size(name: str, value: Mapping[str, Any]) -> int:
    """Bytes SQS counts for one attribute: name, data type and value, in UTF-8."""
    return (
        len(name.encode("utf-8"))
        + len(value["DataType"].encode("utf-8"))
        + len(_attribute_value_bytes(value))
    )


def message_size(body: str, attributes: MessageAttributes) -> int:
    """Bytes SQS counts against the message size limit: UTF-8 body plus every attribute."""
    return len(body.encode("utf-8")) + sum(attribute_size(name, value) for name, value in attributes.items())
