"""A batch's plan: what to do with each message, and what the breaker should do, before any of it
is done. The planner (decide/plan.py) makes it; the executor (act/executor.py) carries it out."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqs_redriver.runtime.model.evidence import Evidence
from sqs_redriver.runtime.model.reasons import ParkReason
from sqs_redriver.runtime.model.report import StopReason
from sqs_redriver.runtime.model.tracked import Tracked


@dataclass(frozen=True)
class VerdictTag:
    """Where the consumer kit reports the verdicts of a run's re-drives, and whether their verdicts
    are awaited: the slow start's trial, or a probe's canaries (their first failure goes straight
    back to the DLQ: its verdict is known)."""

    verdict_key: str
    trial: bool = False


@dataclass(frozen=True)
class Redrive:
    tracked: Tracked
    delay_seconds: int
    tag: VerdictTag | None = None


@dataclass(frozen=True)
class Park:
    tracked: Tracked
    reason: ParkReason


@dataclass(frozen=True)
class Hold:
    """Backoff in the DLQ (FIFO, or a standard step past 900 s): hide the message for the rest of its
    wait, or as long as SQS allows."""

    tracked: Tracked
    seconds: int


@dataclass(frozen=True)
class BatchPlan:
    redrive: tuple[Redrive, ...] = ()
    park: tuple[Park, ...] = ()
    hold: tuple[Hold, ...] = ()
    # Given back to the DLQ at the end of the run, for a later run to see.
    leave: tuple[Tracked, ...] = ()
    # HALF_OPEN probe: claim these as canaries; they are re-driven only if the claim is written.
    canaries: tuple[Tracked, ...] = ()
    open_breaker: bool = False
    # What opening it is based on: messages back in the DLQ, counted as returned because they
    # were re-driven in the breaker's period or (METRICS) failed while the consumer deleted nothing.
    evidence: Evidence = Evidence.RETURNS
    canaries_back: tuple[Tracked, ...] = ()
    # Received messages re-driven in the breaker's current period: the consumer failed them again.
    returned: int = 0
    # Received messages of another source than the part's (a shared DLQ); see Tally.others.
    others: int = 0
    # Parked for an operator's PARK# record of their failure group; see Tally.unjudged.
    unjudged: int = 0
    canary_may_hide: bool = False
    stop: StopReason = StopReason.NONE

    def with_claimed_canaries(self, verdict_key: str) -> BatchPlan:
        """The probe is this run's: the canaries go now, with no delay (the cooldown was theirs)."""
        tag = VerdictTag(verdict_key, trial=True)
        return replace(
            self,
            redrive=tuple(Redrive(t, 0, tag) for t in self.canaries),
            stop=StopReason.CANARY_SENT,
        )

    def with_probe_taken(self) -> BatchPlan:
        """Another run claimed the probe first: the canaries stay in the DLQ."""
        return replace(self, leave=self.leave + self.canaries, stop=StopReason.PROBE_TAKEN)
