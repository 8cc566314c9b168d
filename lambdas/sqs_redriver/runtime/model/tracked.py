"""A received DLQ message with its identity and re-drive history resolved."""

from __future__ import annotations

from dataclasses import dataclass

from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.protocol.mark import Mark


@dataclass(frozen=True)
class Tracked:
    """A DLQ message and its mark (from the message itself, or from the table)."""

    message: DlqMessage
    mark: Mark
    # The mark as read, when this run's judgment changed it (decide/suspicion.py): what a re-drive
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

    def redriven_since(self, since: int) -> bool:
        """Whether it was last sent to its source (re-driven, or replayed by an operator) at or
        after ``since`` (the breaker's last change): a failure back from there counts against it."""
        last = self.mark.last_sent_at
        return last is not None and last >= since
