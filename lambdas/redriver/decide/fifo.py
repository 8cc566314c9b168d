"""FIFO queues: backoff waited out in the DLQ, group order on send, deduplication ids.

FIFO queues refuse per-message DelaySeconds, and a message sent ahead of an earlier one of its
group would reorder the group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from redriver.decide.backoff import due_at
from redriver.model.envelope import HASH_IDENTITY_PREFIX
from redriver.model.tracked import Tracked


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


def deduplication_id(tracked: Tracked, suffix: str) -> str:
    """A deduplication id for this message and step (and its last replay). A content identity
    (``sha256:``) can be shared by two different messages, so those use the DLQ MessageId instead;
    SQS drops a repeated id for 5 minutes, which must only ever drop a true duplicate."""
    identity = tracked.mark.identity
    base = tracked.message_id if identity.startswith(HASH_IDENTITY_PREFIX) else identity
    # A replay starts the count again: the ids of the steps after it name it, or a step would reuse
    # the id of the same step before the replay (dropped if that was under 5 minutes ago).
    replays = tracked.mark.replays
    since = f":r{replays[-1][0]}" if replays else ""
    return f"{base}:{suffix}{since}"[:128]
