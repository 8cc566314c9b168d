"""Pace: the rate a large drain's workers re-drive at together, found from the consumer's own
signal (pure).

A fixed rate is wrong both ways: a consumer that takes 2,000 messages a second waits, one that takes
200 is flooded, its source queue's backlog grows and its event source mapping scales past its
concurrency into throttles. The pace climbs while the consumer keeps up and falls the moment it does
not, as TCP's congestion control does: the rate doubles every step until the consumer first falls
behind (CLIMB), then grows by a twentieth of the rate it fell behind at (STEADY), and past that
rate by as much again as it is past it (the consumer grew: its pollers scale up while messages
wait), and is cut to ``DECREASE`` of itself whenever it falls behind again. The consumer keeps
up while its source queue holds no more visible messages than it takes in ``LAG_SECONDS`` at the
current rate: a consumer that keeps up leaves almost none visible (its pollers take them at
once), one that does not leaves the excess, growing by the difference every second."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from sqs_redriver.protocol.limits import DRAIN_STALE_SECONDS

# A pace step every CONTROL_SECONDS: long enough for a change of rate to show in the source queue.
CONTROL_SECONDS = 5
# The consumer keeps up while its source queue holds at most this many seconds of the pace visible.
# What is visible when a consumer breaks is delivered into its outage before any worker can hear of
# it: a tenth of a second (200 messages at 2,000 a second) bounds it (BENCHMARKS.md, "A million").
LAG_SECONDS = 0.1
# ... or this many messages, whatever the pace (one event source mapping batch or two).
BACKLOG_FLOOR = 20
DECREASE = 0.7  # CUBIC's
STEADY_STEP = 0.05  # a STEADY step adds this share of the rate the consumer last fell behind at
MIN_RATE = 1.0


class PacePhase(StrEnum):
    CLIMB = "climb"  # the consumer has not fallen behind yet: the rate doubles each step
    STEADY = "steady"  # it has: the rate grows by a step, and is cut when it falls behind


@dataclass(frozen=True)
class Pace:
    """The drain's rate (messages a second, all workers together), its phase, and the rate the
    consumer last fell behind at (0: not yet)."""

    rate: float
    phase: PacePhase = PacePhase.CLIMB
    fell_behind_at: float = 0.0


@dataclass(frozen=True)
class PaceLimits:
    start_rate: float  # MAX_REDRIVES_PER_SECOND: the rate a single chain drains at
    max_rate: float  # MAX_DRAIN_RATE
    backlog_limit: int = 0  # SOURCE_BACKLOG_LIMIT: never more visible than this (0: no limit)


def keeps_up(visible: int, rate: float, backlog_limit: int = 0) -> bool:
    """Whether the consumer takes what the pace sends: the messages visible in its source queue now
    (GetQueueAttributes, not CloudWatch's late minutes) within the allowance, and the back-pressure
    limit."""
    allowance = max(BACKLOG_FLOOR, rate * LAG_SECONDS)
    return visible <= (min(allowance, backlog_limit) if backlog_limit else allowance)


def next_pace(pace: Pace, visible: int, limits: PaceLimits) -> Pace:
    """The pace of the next CONTROL_SECONDS, from the messages visible in the source queue now."""
    if not keeps_up(visible, pace.rate, limits.backlog_limit):
        return Pace(max(MIN_RATE, pace.rate * DECREASE), PacePhase.STEADY, fell_behind_at=pace.rate)
    if pace.phase is PacePhase.CLIMB:
        return replace(pace, rate=min(limits.max_rate, pace.rate * 2))
    step = max(MIN_RATE, pace.fell_behind_at * STEADY_STEP)
    # Past the rate it fell behind at, the consumer has grown (its pollers scale up while messages
    # wait): what the pace is past it doubles each step, as CUBIC probes past its last maximum.
    beyond = max(0.0, pace.rate - pace.fell_behind_at)
    return replace(pace, rate=min(limits.max_rate, pace.rate + step + beyond))


def starting_pace(limits: PaceLimits) -> Pace:
    return Pace(min(limits.start_rate, limits.max_rate))


def resumed(pace: Pace, *, stepped_at: int, now: int, limits: PaceLimits) -> Pace:
    """The pace to step from: the stored one (within MAX_DRAIN_RATE, which may have been lowered
    since), or the start when nobody stepped it for DRAIN_STALE_SECONDS (the consumer it measured
    may be another now)."""
    if now - stepped_at > DRAIN_STALE_SECONDS:
        return starting_pace(limits)
    return replace(pace, rate=min(max(pace.rate, MIN_RATE), limits.max_rate))


def stalled(visible_before: int, visible: int, *, rate: float, backlog_limit: int) -> bool:
    """Back-pressure for a drain: its source queue held more than SOURCE_BACKLOG_LIMIT visible at two
    steps in a row, and gained at least half of what ``rate`` sent in between: its consumer takes
    less than half the pace (stopped or stuck, not failing, so the breaker stays CLOSED). A climb's
    overshoot never does: the pace doubles only while the consumer keeps up, so it stays under twice
    what the consumer takes."""
    over = visible > backlog_limit and visible_before > backlog_limit
    gained = visible - visible_before >= rate * CONTROL_SECONDS / 2
    return bool(backlog_limit) and over and gained


def worker_share(rate: float, workers: int) -> float:
    """Each worker's token bucket rate: the pace split evenly."""
    return rate / max(1, workers)
