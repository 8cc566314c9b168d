"""The breaker's states, and the modes a run works in: what the breaker (``decide.breaker``) decides
and a run's report, the logs and the operator's tool name."""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


class Mode(StrEnum):
    """What a run may do, decided by the breaker when the run starts."""

    REDRIVE = "REDRIVE"  # CLOSED: re-drive everything due
    PROBE = "PROBE"  # HALF_OPEN without a canary in flight: send one canary
    WATCH = "WATCH"  # HALF_OPEN with a canary in flight: look for it in the DLQ
    VERDICT = "VERDICT"  # HALF_OPEN, the canary's window is over: look once more, then judge it
    SKIP = "SKIP"  # OPEN and cooling down: touch nothing (but the retention sweep)
    SWEEP = "SWEEP"  # a run's retention sweep: park the expiring, give back the rest
