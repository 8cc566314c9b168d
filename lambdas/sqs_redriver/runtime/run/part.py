"""What one source's part of a run works with, and what it leaves for the run's later phases."""

from __future__ import annotations

from dataclasses import dataclass

from sqs_redriver.runtime.act.breaker_writer import BreakerWriter
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.report import RunReport, StopReason
from sqs_redriver.runtime.run.gate import Passage


@dataclass
class SlowStartProgress:
    """Whether the run's re-drives have finished their slow start (a continuation inherits it)."""

    full_rate: bool = False


@dataclass(frozen=True)
class Part:
    """What one source's part of a run works with: the source (None: the only one), the writer of
    its breaker, its slow start, and the room left of the run's per-run limit."""

    source: str | None
    writer: BreakerWriter
    slow_start: SlowStartProgress
    limit: int


@dataclass(frozen=True)
class Done:
    """One part of a run, done: its report, the gate it passed, what it worked with."""

    report: RunReport
    passage: Passage
    part: Part

    @property
    def scanned(self) -> bool:
        """Whether it read the DLQ through; runs that did not may owe the retention a sweep."""
        passage, stop = self.passage, self.report.stopped_because
        not_scanning = (StopReason.BREAKER_OPEN, StopReason.PAUSED)
        scans = passage.stop not in not_scanning and passage.mode is not Mode.WATCH
        return scans and stop is not StopReason.SOURCE_BACKLOG
