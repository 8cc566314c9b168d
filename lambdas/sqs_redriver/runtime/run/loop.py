"""The batch loop of a run (or of one parallel worker): receive, handle, until something says stop."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqs_redriver.runtime.act.breaker_writer import BreakerWriter
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import Queue
from sqs_redriver.runtime.decide.breaker import Breaker
from sqs_redriver.runtime.decide.pacing import backlog_check_due, batch_size, limit_reached, out_of_time
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.evidence import Evidence
from sqs_redriver.runtime.model.report import StopReason, Tally
from sqs_redriver.runtime.run.batch import BatchHandler
from sqs_redriver.runtime.run.wave import Wave


@dataclass(frozen=True)
class LoopSettings:
    receive_wait_seconds: int
    dlq_visibility_timeout_seconds: int
    time_margin_seconds: int
    source_backlog_limit: int


@dataclass(frozen=True)
class Drained:
    tally: Tally
    breaker: Breaker  # as this loop left it
    stop: StopReason
    held: dict[str, str] = field(default_factory=dict)  # DLQ MessageId -> receipt handle
    canary_may_hide: bool = False


class BatchLoop:
    def __init__(
        self,
        *,
        dlq: Queue,
        sources: Sequence[Queue],
        handler: BatchHandler,
        settings: LoopSettings,
        logger: Any,
    ) -> None:
        self.dlq = dlq
        self.sources = sources
        self.handler = handler
        self.settings = settings
        self.log = logger

    def drain(
        self,
        mode: Mode,
        breaker: Breaker,
        *,
        limit: int,
        remaining_ms: Callable[[], int],
        writer: BreakerWriter,
        halt: threading.Event,
        wave: Wave | None = None,
        owner: str | None = None,
    ) -> Drained:
        """Take batches until the DLQ is empty, the limit or the time is reached, back-pressure
        holds, the breaker opens, AWS fails or another worker halts the run. In REDRIVE mode the
        ``wave`` paces the batches (slow start) and may trip the breaker on the consumer's verdicts.
        With ``owner`` (a shared DLQ, a breaker per source) only that source's messages are acted
        on and its queue alone gives back-pressure; the others' are held and given back."""
        tally = Tally()
        held: dict[str, str] = {}
        may_hide = False
        stop = StopReason.NONE
        while not stop:
            stop = (
                StopReason.HALTED
                if halt.is_set()
                else self._stop_before_batch(mode, tally, limit, remaining_ms, owner)
            )
            if stop:
                break
            room, tag = batch_size(tally.received, limit), None
            admitted = redriven = 0
            try:
                if wave is not None:
                    admission = wave.admit(lambda: halt.is_set() or self._out_of_time(remaining_ms))
                    admitted = admission.room
                    if admission.trip:
                        self.log.warning("the consumer failed the probes: opening the circuit")
                        breaker, errors = writer.transition(
                            breaker, breaker.opened(int(self.handler.clock()), Evidence.VERDICTS)
                        )
                        tally += Tally(errors=errors)
                        stop = StopReason.BREAKER_OPENED
                        break
                    if not admission.room:
                        stop = StopReason.HALTED if halt.is_set() else StopReason.TIME_BUDGET
                        break
                    room, tag = min(room, admission.room), admission.tag
                batch = self.dlq.receive(
                    room,
                    wait_seconds=self.settings.receive_wait_seconds,
                    visibility_timeout=self.settings.dlq_visibility_timeout_seconds,
                )
                tally += Tally(received=len(batch))
                if not batch:
                    stop = StopReason.DLQ_EMPTY
                    break
                handled = self.handler.handle(batch, mode, breaker, tally, writer, tag, owner)
                redriven = handled.tally.redriven
            except AwsCallError as exc:
                self.log.error("run stopped by an AWS error", extra={"error": str(exc)})
                tally += Tally(errors=1)
                stop = StopReason.AWS_ERROR
                break
            finally:
                if wave is not None and admitted:
                    wave.settle(admitted, redriven)
            tally += handled.tally
            breaker = handled.breaker
            held.update((t.message_id, t.receipt_handle) for t in handled.leave)
            may_hide |= handled.canary_may_hide
            stop = handled.stop
        if stop.stops_every_worker:
            halt.set()  # the breaker opened, AWS failed, time or back-pressure: every worker stops
        return Drained(tally, breaker, stop, held, may_hide)

    def _stop_before_batch(
        self, mode: Mode, tally: Tally, limit: int, remaining_ms: Callable[[], int], owner: str | None
    ) -> StopReason:
        if limit_reached(tally.received, limit):
            return StopReason.PER_RUN_LIMIT
        if self._out_of_time(remaining_ms):
            return StopReason.TIME_BUDGET
        if mode is Mode.REDRIVE and self._source_backlogged(tally.received, owner):
            return StopReason.SOURCE_BACKLOG
        return StopReason.NONE

    def _out_of_time(self, remaining_ms: Callable[[], int]) -> bool:
        return out_of_time(remaining_ms(), self.settings.time_margin_seconds)

    def _source_backlogged(self, received: int, owner: str | None) -> bool:
        """Back-pressure: is a source queue's backlog (the owner's, when given) above the limit?"""
        limit = self.settings.source_backlog_limit
        if not backlog_check_due(received, limit):
            return False
        for source in self.sources:
            if owner is not None and source.url != owner:
                continue
            try:
                backlog = source.backlog()
            except AwsCallError as exc:
                # Unknown backlog: go on, the rate limit still holds (a missing queue is parked).
                self.log.warning("source backlog unknown", extra={"queue": source.url, "error": str(exc)})
                continue
            if backlog > limit:
                self.log.info(
                    "source backlog above the limit: re-drives wait",
                    extra={"queue": source.url, "backlog": backlog},
                )
                return True
        return False
