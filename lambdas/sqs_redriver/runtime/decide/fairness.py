"""Which source of a shared DLQ goes first in a run (each source has its own breaker and part).

The parts of a run share its time budget and per-run limit, so the first part can use them up.
Along a chain of continuations the sources lead in turn; a scheduled run (generation 0) draws
its leader from the minute it runs in, so no schedule period can make one source always first.
"""

from __future__ import annotations

import zlib

SECONDS_PER_MINUTE = 60


def turn_order(count: int, *, generation: int, now: int) -> list[int]:
    """The indexes of ``count`` sources in the order a run takes them."""
    if generation:
        first = generation % count
    else:
        first = zlib.crc32(str(now // SECONDS_PER_MINUTE).encode()) % count
    return [(first + i) % count for i in range(count)]
