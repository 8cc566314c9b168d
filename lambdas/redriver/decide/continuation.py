"""When a run is followed at once by another instead of waiting for the next scheduled tick.

Draining is bounded by the rate limit, not by the schedule: a run that stopped on its time budget
or per-run limit with the breaker CLOSED, and moved messages, is followed by a continuation. A run
that moved nothing, or stopped for any other reason (DLQ empty, back-pressure, the breaker), leaves
the next step to the schedule, so a chain cannot spin without progress.
"""

from __future__ import annotations

from redriver.decide.breaker import State
from redriver.model.report import RunReport, StopReason

CONTINUED_STOPS = frozenset({StopReason.PER_RUN_LIMIT, StopReason.TIME_BUDGET})


def continues(report: RunReport, *, generation: int, max_continuations: int) -> bool:
    """Whether the run that produced ``report`` (the ``generation``-th continuation of its chain,
    0 for a scheduled run) is followed by another one now."""
    return (
        generation < max_continuations
        and report.breaker_state is State.CLOSED
        and report.stopped_because in CONTINUED_STOPS
        and report.redriven + report.parked > 0
    )
