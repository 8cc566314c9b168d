"""When a run is followed at once by another instead of waiting for the next scheduled tick.

Draining is bounded by the rate limit, not by the schedule: a run that stopped on its time budget
or per-run limit with the breaker CLOSED, and moved messages, is followed by a continuation. A run
that moved nothing, or stopped for any other reason (DLQ empty, back-pressure, the breaker), leaves
the next step to the schedule, so a chain cannot spin without progress.
"""

from __future__ import annotations

from sqs_redriver.runtime.model.breaker_state import State
from sqs_redriver.runtime.model.report import RunReport, StopReason

CONTINUED_STOPS = frozenset({StopReason.PER_RUN_LIMIT, StopReason.TIME_BUDGET})


def continues(report: RunReport, *, generation: int, max_continuations: int) -> bool:
    """Whether the run that produced ``report`` (the ``generation``-th continuation of its chain,
    0 for a scheduled run) is followed by another one now. A DLQ shared by sources with a breaker
    each has one continuation: it goes on when any source's part would."""
    return generation < max_continuations and any(_part_continues(part) for part in report.by_source)


def _part_continues(part: RunReport) -> bool:
    return (
        part.breaker_state is State.CLOSED
        and part.stopped_because in CONTINUED_STOPS
        and part.redriven + part.parked > 0
    )
