"""Backoff of the n-th re-drive: exponential from a base, with equal jitter, capped; and when a step
is too long for DelaySeconds, the time it is due, waited out in the DLQ."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

from sqs_redriver.protocol.limits import (
    LAMBDA_MAX_TIMEOUT_SECONDS,
    SQS_MAX_DELAY_SECONDS,
    SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqs_redriver.core.message import Tracked


# SQS counts a message's 12 hours of visibility from its receive, and the run that received it may
# hold it up to a Lambda timeout later: a longer wait is renewed when the message reappears.
MAX_HOLD_SECONDS = SQS_MAX_VISIBILITY_TIMEOUT_SECONDS - LAMBDA_MAX_TIMEOUT_SECONDS


def backoff_step(redrive_number: int, *, base_seconds: int, max_seconds: int) -> int:
    """The step of the given re-drive before jitter: ``base * 2**(n-1)``, capped at ``max_seconds``."""
    if redrive_number < 1:
        raise ValueError(f"redrive_number must be >= 1, got {redrive_number}")
    # Bound the shift: a huge one overflows nothing in Python, but wastes time.
    return min(max_seconds, base_seconds << min(redrive_number - 1, 32))


def redrive_delay(
    redrive_number: int,
    *,
    base_seconds: int,
    max_seconds: int,
    rng: random.Random,
) -> int:
    """Delay for the given re-drive (1 for the first re-drive of a message).

    Equal jitter keeps at least half of the step, so retries never collapse to zero delay, while
    spreading a backlog that failed together.
    """
    step = backoff_step(redrive_number, base_seconds=base_seconds, max_seconds=max_seconds)
    half = step / 2
    return min(step, int(math.ceil(half + rng.uniform(0, half))))


def waits_in_dlq(tracked: Tracked, *, base_seconds: int, max_seconds: int) -> bool:
    """Whether a standard queue's message waits out its next step in the DLQ: DelaySeconds stops at
    900 s. Decided on the step before jitter, so every run agrees."""
    step = backoff_step(tracked.mark.count + 1, base_seconds=base_seconds, max_seconds=max_seconds)
    return step > SQS_MAX_DELAY_SECONDS


def due_at(tracked: Tracked, *, now: int, base_seconds: int, max_seconds: int) -> int:
    """When its next re-drive is due: the backoff counted from the last re-drive, or the send.

    The jitter is drawn from the identity and count, so every run computes the same time.
    """
    mark = tracked.mark
    sent_ms = tracked.message.system_attributes.get("SentTimestamp")
    # Never later than now: a send stamped ahead of this run's clock (SQS's and Lambda's clocks
    # differ by a little) has waited no less than one stamped now.
    start = min(mark.last_redriven_at or (int(sent_ms) // 1000 if sent_ms else now), now)
    delay = redrive_delay(
        mark.count + 1,
        base_seconds=base_seconds,
        max_seconds=max_seconds,
        rng=random.Random(f"{mark.identity}:{mark.count}"),
    )
    return start + delay


def dlq_waits(
    tracked: Sequence[Tracked], *, now: int, base_seconds: int, max_seconds: int, every_step: bool = False
) -> dict[str, int]:
    """Standard queues: seconds each message whose step is past 900 s must still wait, by DLQ
    MessageId; ``every_step``: each step is waited out in the DLQ (a dead letter of another
    service: its target takes no DelaySeconds). Each message waits on its own: a waiting one
    never makes another wait."""
    waits = {}
    for t in tracked:
        if not every_step and not waits_in_dlq(t, base_seconds=base_seconds, max_seconds=max_seconds):
            continue
        wait = due_at(t, now=now, base_seconds=base_seconds, max_seconds=max_seconds) - now
        if wait > 0:
            waits[t.message_id] = wait
    return waits
