"""The books of one plan's execution, and what the execution returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqs_redriver.runtime.model.intents import Park
from sqs_redriver.runtime.model.report import Tally
from sqs_redriver.runtime.model.tracked import Tracked


@dataclass(frozen=True)
class Executed:
    tally: Tally
    sent_to_source: tuple[Tracked, ...] = ()
    # A whole AWS call failed; what did arrive was still deleted.
    failure: str | None = None


@dataclass
class ExecutionBooks:
    """Kept while one plan is carried out: what arrived (to delete), what was sent to a source,
    what the source refused for good (to park), and the counts."""

    now: int
    arrived: dict[str, str] = field(default_factory=dict)  # DLQ MessageId -> receipt handle
    sent: list[Tracked] = field(default_factory=list)
    rejected: list[Park] = field(default_factory=list)
    redriven: int = 0
    parked: int = 0
    expiring: int = 0  # of the parked: by the retention guard
    unparkable: int = 0
    unarchived: int = 0
    errors: int = 0

    def result(self, failure: str | None) -> Executed:
        tally = Tally(
            redriven=self.redriven,
            parked=self.parked,
            expiring=self.expiring,
            unparkable=self.unparkable,
            unarchived=self.unarchived,
            errors=self.errors,
        )
        return Executed(tally, tuple(self.sent), failure)
