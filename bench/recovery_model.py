"""A model of how long a design takes to drain a backlog once it re-drives at full speed (after
recovery and, for this re-driver, after its breaker closed), validated against the simulated world
at sizes moto handles and used for sizes it does not (40,000).

Runs start every ``schedule_seconds`` (today) or back to back (``schedule_seconds=None``: run
continuation, each run followed by the next after ``continuation_seconds``). A run re-drives up to
``per_run`` messages: after ``trial_seconds`` (the kit's trial waiting for its verdicts), at
``rate`` a second, or along the slow start's time allowance (``sqs_redriver.runtime.slow_start``) when
``slow_start_seconds`` is set, within ``budget_seconds``. A re-driven message is visible after its
DelaySeconds, between half its backoff step and the step (equal jitter; a fixed delay when
``jitter`` is off). The consumer takes visible messages at ``consumer_rate`` a second. Assumed:
the whole backlog is in the DLQ when the first of these runs starts, and nothing fails any more.
A continued run inherits its predecessor's finished slow start: only the chain's first run sends a
trial or slow-starts; a run a tick starts slow-starts again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sqs_redriver.runtime.slow_start import seconds_until_allowed, time_allowance


@dataclass(frozen=True)
class Drainer:
    """How a design re-drives a backlog, as the model sees it."""

    per_run: float  # math.inf: no per-run limit
    rate: float  # re-drives a second at full speed
    schedule_seconds: float | None  # between runs' starts; None: back to back (continuation)
    delay_step_seconds: float  # the re-drive's backoff step
    jitter: bool = True  # the delay is between half the step and the step
    trial_seconds: float = 0.0
    slow_start_seconds: float = 0.0
    continuation_seconds: float = 0.0  # back to back: from a run's end to the next one's start
    budget_seconds: float = math.inf  # a run's time to re-drive in (its timeout minus the margin)

    def continued(self, overhead_seconds: float = 0.0) -> Drainer:
        """The same design with run continuation."""
        return replace(self, schedule_seconds=None, continuation_seconds=overhead_seconds)


def run_seconds(messages: float, drainer: Drainer) -> float:
    """How long a run takes to re-drive ``messages``."""
    if drainer.slow_start_seconds > 0:
        sending = seconds_until_allowed(
            messages, 0.0, max_rate=drainer.rate, slow_start_seconds=drainer.slow_start_seconds
        )
    else:
        sending = messages / drainer.rate
    return drainer.trial_seconds + sending


def run_capacity(drainer: Drainer) -> float:
    """Messages a run can re-drive: its per-run limit, or what its time budget allows."""
    if math.isinf(drainer.budget_seconds):
        return drainer.per_run
    sending = max(0.0, drainer.budget_seconds - drainer.trial_seconds)
    if drainer.slow_start_seconds > 0:
        allowed = time_allowance(
            sending, max_rate=drainer.rate, slow_start_seconds=drainer.slow_start_seconds
        )
    else:
        allowed = sending * drainer.rate
    return min(drainer.per_run, math.floor(allowed))


def drain_seconds(backlog: int, drainer: Drainer, *, consumer_rate: float) -> float:
    """Seconds from the first re-driving run's start until the consumer took the last message."""
    low = drainer.delay_step_seconds / 2 if drainer.jitter else drainer.delay_step_seconds
    start, consumed = 0.0, 0.0
    for share, run in _runs(backlog, drainer):
        took = run_seconds(share, run)
        first_visible = start + run.trial_seconds + low
        last_visible = start + took + drainer.delay_step_seconds
        consumed = max(last_visible, max(consumed, first_visible) + share / consumer_rate)
        if drainer.schedule_seconds is None:
            start += took + drainer.continuation_seconds
        else:
            start += drainer.schedule_seconds * max(1, math.ceil(took / drainer.schedule_seconds))
    return consumed


def redrive_seconds(backlog: int, drainer: Drainer) -> float:
    """Seconds from the first re-driving run's start until the last message left the DLQ."""
    start = end = 0.0
    for share, run in _runs(backlog, drainer):
        end = start + run_seconds(share, run)
        if drainer.schedule_seconds is None:
            start = end + drainer.continuation_seconds
        else:
            start += drainer.schedule_seconds * max(1, math.ceil((end - start) / drainer.schedule_seconds))
    return end


def runs_needed(backlog: int, drainer: Drainer) -> int:
    """Runs that re-drive the backlog."""
    return len(_runs(backlog, drainer))


def _runs(backlog: int, drainer: Drainer) -> list[tuple[float, Drainer]]:
    """Each run's share of the backlog, and how it re-drives: a continued run at full rate."""
    at_full_rate = replace(drainer, trial_seconds=0.0, slow_start_seconds=0.0)
    runs: list[tuple[float, Drainer]] = []
    left = float(backlog)
    while left > 0:
        run = drainer if not runs or drainer.schedule_seconds is not None else at_full_rate
        share = min(left, run_capacity(run))
        runs.append((share, run))
        left -= share
    return runs
