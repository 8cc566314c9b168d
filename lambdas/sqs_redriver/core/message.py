"""A received DLQ message with its identity and re-drive history resolved (``Tracked``): whose
identity it is (the mark's, the MessageId, or a content hash), and its FIFO deduplication id."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sqs_redriver.protocol.mark import Mark, held_to_clock

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from sqs_redriver.protocol.envelope import DlqMessage


# A received DLQ message with its identity and re-drive history resolved.


@dataclass(frozen=True)
class Tracked:
    """A DLQ message and its mark (from the message itself, or from the table)."""

    message: DlqMessage
    mark: Mark
    # The mark as read, when this run's judgment changed it (consumer_health.py): what a re-drive
    # that did not happen puts back.
    read_mark: Mark | None = None

    @property
    def mark_as_read(self) -> Mark:
        return self.read_mark or self.mark

    @property
    def carries_mark(self) -> bool:
        """True when the mark travels in the message; False when only the table counts it."""
        return self.message.mark is not None or self.message.has_room_for_mark

    @property
    def group(self) -> str:
        """A FIFO message's group (standard queues have none: each message is its own)."""
        return self.message.system_attributes.get("MessageGroupId") or self.mark.identity

    @property
    def message_id(self) -> str:
        return self.message.message_id

    @property
    def receipt_handle(self) -> str:
        return self.message.receipt_handle

    @property
    def record_key(self) -> str:
        """The subject of the table record that counts it, when only the table does."""
        return self.message.record_key

    @property
    def can_return(self) -> bool:
        """Whether a re-drive of it can come back to the DLQ: an SQS consumer's message can, and
        a function's dead letter (in a new record); a dead letter of a target that answers in the
        call cannot (what the target took is its own; what it refused never left the DLQ)."""
        dead_letter = self.message.dead_letter
        return dead_letter is None or (dead_letter.source is not None and dead_letter.source.failures_return)

    def redriven_since(self, since: int) -> bool:
        """Whether it came back from a re-drive (or an operator's replay) made at or after
        ``since`` (the breaker's last change): a failure back from there counts against it. A
        dead letter of a target that answers in the call never comes back."""
        last = self.mark.last_sent_at
        return last is not None and last >= since and self.can_return


# Who a DLQ message is, and how often it was re-driven: from its mark, or from the table.


@dataclass(frozen=True)
class Tracking:
    """A batch with identities resolved: the messages to act on, and later copies of an identity
    already in the batch (a redelivered duplicate), left for a later run so that one batch never
    writes the same record twice."""

    unique: list[Tracked]
    duplicates: list[Tracked]


def screened(message: DlqMessage, now: int) -> DlqMessage:
    """The message with its mark held to the run's clock (``held_to_clock``): a mark with a time
    out of range is left out, and the message is treated as unmarked; a failure with one, the
    failure only. The rejection stays on the message, for the run's log."""
    if message.mark is None:
        return message
    mark, rejection = held_to_clock(message.mark, now)
    if rejection is None:
        return message
    return replace(message, mark=mark, mark_rejection=rejection)


def counted_in_table(batch: Iterable[DlqMessage]) -> list[str]:
    """The record keys of the messages whose count only the table holds (no mark, no room)."""
    return [m.record_key for m in batch if m.mark is None and not m.has_room_for_mark]


def track(batch: Iterable[DlqMessage], recorded: Mapping[str, Mark], now: int) -> Tracking:
    """Resolve each message's mark: the one it carries; a new one keyed by its MessageId when it
    has room for one; else the table's record of it (``recorded``, by record key: a dead
    letter's trip), or a new one of its content identity."""
    unique: dict[str, Tracked] = {}
    duplicates: list[Tracked] = []
    for message in batch:
        if message.mark is not None:
            # Every re-drive clears the failure a mark carries, so the one it carries now is this
            # delivery's, even stamped a little before the re-drive (the consumer's clock behind).
            mark = message.mark
        elif message.has_room_for_mark:
            mark = Mark(identity=message.message_id, first_failed_at=now)
        else:
            identity = message.content_identity
            mark = _current_failure_only(
                recorded.get(message.record_key) or Mark(identity=identity, first_failed_at=now)
            )
        tracked = Tracked(message, mark)
        if mark.identity in unique:
            duplicates.append(tracked)
        else:
            unique[mark.identity] = tracked
    return Tracking(list(unique.values()), duplicates)


def _current_failure_only(mark: Mark) -> Mark:
    """A table's failure recorded before the last re-drive belongs to an earlier delivery (a
    FAILURE# record outlives the message's next trip): it says nothing about this one."""
    failure, last = mark.failure, mark.last_redriven_at
    if failure is not None and last is not None and failure.at < last:
        return replace(mark, failure=None)
    return mark


def deduplication_id(tracked: Tracked, step: str) -> str:
    """The FIFO deduplication id of this DLQ message's ``step`` (a re-drive count, ``parked``, a
    replay) since its last replay: the same when the very same step is sent again after a crash
    (SQS drops that duplicate for 5 minutes), and different for anything else, so deduplication
    only ever drops a true duplicate. The DLQ MessageId is in it: two messages that share an
    identity (a content identity, or a forged mark) never share an id. A SHA-256 of the parts,
    so it always has SQS's length and characters whatever the identity holds."""
    replays = tracked.mark.replays
    parts = (tracked.message_id, tracked.mark.identity, step, str(replays[-1][0]) if replays else "")
    # Length-prefixed: distinct parts never run together into the same text.
    text = "".join(f"{len(part)}:{part}" for part in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
