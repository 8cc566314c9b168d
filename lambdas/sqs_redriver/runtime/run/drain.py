"""The batch drain of one part of a run: the batch loop in one mode (in parallel workers when
re-driving), and what it held given back at the end."""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqs_redriver.runtime.act.executor import Executor
from sqs_redriver.runtime.decide.breaker import Breaker
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.report import Tally
from sqs_redriver.runtime.run.consumer_watch import ConsumerWatch
from sqs_redriver.runtime.run.loop import BatchLoop, Drained
from sqs_redriver.runtime.run.parallel import drain_in_parallel
from sqs_redriver.runtime.run.part import Part
from sqs_redriver.runtime.run.slow_start import SlowStart


class Drainer:
    """Drains the DLQ for one part of a run; ``parallel_batches`` workers when re-driving."""

    def __init__(
        self, loop: BatchLoop, executor: Executor, watch: ConsumerWatch, *, parallel_batches: int
    ) -> None:
        self.loop = loop
        self.executor = executor
        self.watch = watch
        self.parallel_batches = parallel_batches

    def drain(self, mode: Mode, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Drained:
        """One worker's drain in ``mode`` (not REDRIVE), after the consumers' metrics were read."""
        self.watch.heard_for(breaker)
        return self.loop.drain(
            mode,
            breaker,
            limit=part.limit,
            remaining_ms=remaining_ms,
            writer=part.writer,
            halt=threading.Event(),
            source=part.source,
        )

    def redrive(
        self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part, slow_start: SlowStart
    ) -> Drained:
        """The REDRIVE drain, paced by ``slow_start``: in parallel workers when the settings allow."""
        if self.parallel_batches > 1:
            return drain_in_parallel(
                self.loop,
                breaker,
                workers=self.parallel_batches,
                limit=part.limit,
                remaining_ms=remaining_ms,
                writer=part.writer,
                slow_start=slow_start,
                source=part.source,
            )
        return self.loop.drain(
            Mode.REDRIVE,
            breaker,
            limit=part.limit,
            remaining_ms=remaining_ms,
            writer=part.writer,
            halt=threading.Event(),
            slow_start=slow_start,
            source=part.source,
        )

    def released(self, drained: Drained) -> Tally:
        """The drain's tally, after giving back what it received but did not act on."""
        return drained.tally + Tally(errors=self.executor.release(drained.held))
