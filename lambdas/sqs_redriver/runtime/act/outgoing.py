"""A DLQ message as it goes out again: body and attributes unchanged, the mark, the trace header."""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.runtime.adapters.ports import Outgoing
from sqs_redriver.runtime.model.tracked import Tracked


def outgoing(
    entry_id: str, tracked: Tracked, mark_json: str, *, delay: int, deduplication_id: str, fifo: bool
) -> Outgoing:
    """On FIFO queues the message keeps its group, and gets a deduplication id that is new for
    each re-drive (a reused one is dropped for 5 minutes). For a marked message it is the same if
    this very re-drive is sent again after a crash, so SQS drops that duplicate; a message counted
    in the table has moved its count ahead, so its retry is a duplicate, never a loss."""
    return Outgoing(
        entry_id=entry_id,
        body=tracked.message.body,
        attributes=with_mark(tracked, mark_json),
        delay_seconds=delay,
        trace_header=tracked.message.system_attributes.get("AWSTraceHeader"),
        group_id=tracked.group if fifo else None,
        deduplication_id=deduplication_id if fifo else None,
    )


def with_mark(tracked: Tracked, mark_json: str) -> dict[str, Any]:
    """The message's own attributes, plus the mark when the message has room for it."""
    attributes: dict[str, Any] = dict(tracked.message.attributes)
    if tracked.carries_mark:
        attributes[MARK_ATTRIBUTE] = string_attribute(mark_json)
    return attributes
