"""DelaySeconds for the n-th re-drive: exponential from a base, with equal jitter, capped."""

from __future__ import annotations

import math
import random

from redriver.sqs_limits import SQS_MAX_DELAY_SECONDS


def redrive_delay(
    redrive_number: int,
    *,
    base_seconds: int,
    max_seconds: int,
    rng: random.Random,
) -> int:
    """Delay for the given re-drive (1 for the first re-drive of a message).

    The exponential step is ``base * 2**(n-1)``, capped at ``max_seconds`` (itself at most the
    SQS limit of 900 s). Equal jitter keeps at least half of the step, so retries never collapse to
    zero delay, while spreading a backlog that failed together.
    """
    if redrive_number < 1:
        raise ValueError(f"redrive_number must be >= 1, got {redrive_number}")
    cap = min(max_seconds, SQS_MAX_DELAY_SECONDS)
    # Bound the exponent before computing it: 2**n overflows nothing in Python, but wastes time.
    step = min(cap, base_seconds * 2 ** min(redrive_number - 1, 32))
    half = step / 2
    return min(cap, int(math.ceil(half + rng.uniform(0, half))))
