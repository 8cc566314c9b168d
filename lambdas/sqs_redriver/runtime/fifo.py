"""FIFO queues: backoff waited out in the DLQ, and group order on send (a message's deduplication
id is core/message.py's).

FIFO queues refuse per-message DelaySeconds, and a message sent ahead of an earlier one of its
group would reorder the group."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from sqs_redriver.runtime.backoff import due_at

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqs_redriver.core.message import Tracked


def backoff_waits(
    tracked: Sequence[Tracked], *, now: int, base_seconds: int, max_seconds: int
) -> dict[str, int]:
    """Seconds each not-yet-due message must still wait, by DLQ MessageId.

    Within a group, once one message waits, the ones after it wait at least as long, so a group's
    messages go back in the order they failed.
    """
    group_wait: dict[str, int] = {}
    waits = {}
    for t in tracked:
        due = due_at(t, now=now, base_seconds=base_seconds, max_seconds=max_seconds)
        wait = max(due - now, group_wait.get(t.group, 0))
        if wait > 0:
            group_wait[t.group] = waits[t.message_id] = wait
    return waits


def send_rounds(groups: Sequence[str]) -> list[list[int]]:
    """Positions of a batch's messages in send rounds: round k holds each group's k-th message, so
    a group's next message goes only after the one before it was sent."""
    rounds: list[list[int]] = []
    position: Counter[str] = Counter()
    for index, group in enumerate(groups):
        if position[group] == len(rounds):
            rounds.append([])
        rounds[position[group]].append(index)
        position[group] += 1
    return rounds
