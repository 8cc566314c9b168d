"""What the kit sends to the DLQ when it dead-letters a record itself: pure, values in, a plan out.

A message with room for the mark carries the failure in it: a fresh mark (identity = the record's
MessageId, which the DLQ would have kept, while the kit's own send gets a new one) or, for a
re-driven message, its mark with identity, count and history kept, the failure set and the
re-drive's verdict key and probe flag dropped. A message with no room goes unchanged, and its
failure is written to the state table first, under its content identity.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

from sqs_redriver.kit.config import FIFO_SUFFIX
from sqs_redriver.kit.records import TRACE_HEADER, InboundRecord
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.failure import Failure
from sqs_redriver.protocol.mark import Mark

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
