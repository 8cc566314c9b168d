"""Slow start: a REDRIVE run does not send the backlog back on trust.

Every message in the DLQ was failed by this consumer. With the consumer kit, a run first sends a
trial (``minimum_volume`` messages, no delay) and waits for their verdicts: a broken consumer
trips the breaker after a handful of deliveries, a healthy one lets the run go on at the full
rate. Without verdicts (no kit, or the kit does not answer in time) slow start can only follow
time: the run's rate doubles from 1 message a second up to the rate limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.runtime.decide.breaker import BreakerPolicy, RunOutcome, ratio_failed


class Phase(StrEnum):
    TRIAL = "trial"  # the trial's messages are out: wait for their verdicts
    FULL = "full"  # the consumer answered well: the rate limit alone paces the run
    TIMED = "timed"  # no verdicts to go by: the rate rises with time


@dataclass(frozen=True)
class TrialResult:
    """What the trial's verdicts say: trip the breaker, go to ``phase``, or keep waiting (None)."""

    trip: bool = False
    phase: Phase | None = None


def judge_trial(verdicts: VerdictCounts, *, trial_sent: int, policy: BreakerPolicy) -> TrialResult:
    """Enough transient failures, and a large enough share (the breaker's ratio rule): trip.
    More successes than transient failures: full rate. Terminal verdicts say nothing about the
    consumer: once the whole trial has answered without either, another trial goes out."""
    if ratio_failed(verdict_outcome(verdicts), policy):
        return TrialResult(trip=True)
    if verdicts.ok > verdicts.transient:
        return TrialResult(phase=Phase.FULL)
    if verdicts.total >= trial_sent:
        return TrialResult(phase=Phase.TRIAL)
    return TrialResult()


def verdict_outcome(verdicts: VerdictCounts) -> RunOutcome:
    """The consumer kit's verdicts as the breaker's failure signal."""
    return RunOutcome(
        received=0, returned=0, errors=0, ok_verdicts=verdicts.ok, transient_verdicts=verdicts.transient
    )


def time_allowance(elapsed: float, *, max_rate: float, slow_start_seconds: float) -> float:
    """How many re-drives a run may have sent ``elapsed`` seconds in, without verdicts: the first
    at once, then a rate that doubles from 1/s and reaches ``max_rate`` after
    ``slow_start_seconds`` (0 turns slow start off)."""
    if slow_start_seconds <= 0 or max_rate <= 1:
        return math.inf
    doubling = slow_start_seconds / math.log2(max_rate)
    rising = min(elapsed, slow_start_seconds)
    risen = doubling / math.log(2) * (2 ** (rising / doubling) - 1)
    return 1 + risen + max(0.0, elapsed - slow_start_seconds) * max_rate


def seconds_until_allowed(
    wanted: float, elapsed: float, *, max_rate: float, slow_start_seconds: float
) -> float:
    """How long until the time allowance reaches ``wanted`` re-drives (0 when it already has)."""
    if time_allowance(elapsed, max_rate=max_rate, slow_start_seconds=slow_start_seconds) >= wanted:
        return 0.0
    doubling = slow_start_seconds / math.log2(max_rate)
    at_full = time_allowance(slow_start_seconds, max_rate=max_rate, slow_start_seconds=slow_start_seconds)
    if wanted > at_full:
        return slow_start_seconds + (wanted - at_full) / max_rate - elapsed
    return doubling * math.log2((wanted - 1) * math.log(2) / doubling + 1) - elapsed
