"""The retention sweep of runs that do not scan the DLQ: messages about to expire are parked
even while the breaker keeps re-drives away."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import SweepStore
from sqs_redriver.runtime.decide.pacing import out_of_time
from sqs_redriver.runtime.decide.retention import sweep_interval
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.report import StopReason, Tally
from sqs_redriver.runtime.run.drain import Drainer
from sqs_redriver.runtime.run.part import Done
from sqs_redriver.runtime.settings import Settings


class RetentionSweep:
    """Sweeps the DLQ when due, at most every half of EXPIRY_MARGIN_SECONDS (recorded in the table)."""

    def __init__(
        self,
        settings: Settings,
        *,
        sweeps: SweepStore,
        drainer: Drainer,
        clock: Callable[[], float],
        logger: Any,
    ) -> None:
        self.settings = settings
        self.sweeps = sweeps
        self.drainer = drainer
        self.clock = clock
        self.log = logger

    def sweep_if_due(self, parts: list[Done], remaining_ms: Callable[[], int]) -> Tally:
        """The retention guard of runs that do not scan the DLQ (breaker OPEN, WATCH, re-drives held
        by the source backlog; with several sources, none of the parts scanned: a part that scans
        parks any source's expiring messages): when due, receive every message, park the expiring,
        give the rest back at once, re-drive nothing."""
        if any(done.scanned for done in parts):
            return Tally()
        settings = self.settings
        key, now, tally = settings.sweep_key, int(self.clock()), Tally()
        first = parts[0]
        every_source = replace(first.part, source=None, limit=settings.max_messages_per_run)
        try:
            if now < self.sweeps.load_sweep_due(key) or self._out_of_time(remaining_ms):
                return tally
            drained = self.drainer.drain(Mode.SWEEP, first.passage.breaker, remaining_ms, every_source)
            tally = self.drainer.released(drained)
            if drained.stop is StopReason.DLQ_EMPTY:  # else unfinished: the next run sweeps again
                self.sweeps.save_sweep_due(key, now + sweep_interval(settings.expiry_margin_seconds))
        except AwsCallError as exc:
            self.log.error("retention sweep failed", extra={"error": str(exc)})
            tally += Tally(errors=1)
        return tally

    def _out_of_time(self, remaining_ms: Callable[[], int]) -> bool:
        return out_of_time(remaining_ms(), self.settings.time_margin_seconds)
