"""Who a DLQ message is, and how often it was re-driven: from its mark, or from the table."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.protocol.mark import Mark, held_to_clock
from sqs_redriver.runtime.model.tracked import Tracked


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
    """Content identities of the messages whose count only the table holds (no mark, no room)."""
    return [m.content_identity for m in batch if m.mark is None and not m.has_room_for_mark]


def track(batch: Iterable[DlqMessage], recorded: Mapping[str, Mark], now: int) -> Tracking:
    """Resolve each message's mark: the one it carries; a new one keyed by its MessageId when it
    has room for one; else the table's record of its content identity (or a new one)."""
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
                recorded.get(identity) or Mark(identity=identity, first_failed_at=now)
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
