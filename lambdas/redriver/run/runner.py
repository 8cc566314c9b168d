"""One scheduled run of the re-driver: pass the gate, drain the DLQ, then the breaker's verdict.

The run talks to AWS only through the ports it is given (adapters/ports.py). It deletes a DLQ
message only after the message was sent somewhere else and the send succeeded.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from redriver.act.breaker_writer import BreakerWriter
from redriver.act.executor import Executor
from redriver.adapters.ports import StateStore
from redriver.decide import breaker as circuit
from redriver.decide import canary
from redriver.decide.breaker import Breaker, Mode, RunOutcome, State
from redriver.model.report import RunReport, StopReason, Tally
from redriver.run.gate import pass_gate
from redriver.run.loop import BatchLoop
from redriver.run.parallel import drain_in_parallel
from redriver.settings import Settings


class Redriver:
    """The re-driver for one DLQ; ``run`` is one scheduled run."""

    def __init__(
        self,
        settings: Settings,
        *,
        state: StateStore,
        loop: BatchLoop,
        executor: Executor,
        logger: logging.Logger | Any,
        clock: Callable[[], float],
    ) -> None:
        """Composed by ``redriver.wiring.compose_redriver``."""
        self.settings = settings
        self.state = state
        self.loop = loop
        self.executor = executor
        self.log = logger
        self.clock = clock

    def now(self) -> int:
        return int(self.clock())

    def run(self, remaining_ms: Callable[[], int]) -> RunReport:
        """Do one scheduled run; ``remaining_ms`` is the Lambda context's time left."""
        settings = self.settings
        writer = BreakerWriter(self.state, settings.breaker_key, self.log)
        passage = pass_gate(self.state, writer, settings.breaker_key, settings.breaker, self.now())
        if passage.mode is Mode.SKIP:
            return self._report(passage.mode, passage.breaker, writer, passage.stop, Tally())

        limit = settings.max_messages_per_run
        if passage.mode is Mode.REDRIVE and settings.parallel_batches > 1:
            drained = drain_in_parallel(
                self.loop,
                passage.breaker,
                workers=settings.parallel_batches,
                limit=limit,
                remaining_ms=remaining_ms,
                writer=writer,
            )
        else:
            drained = self.loop.drain(
                passage.mode,
                passage.breaker,
                limit=limit,
                remaining_ms=remaining_ms,
                writer=writer,
                halt=threading.Event(),
            )

        tally = drained.tally + Tally(errors=self.executor.release(drained.held))
        if passage.mode is Mode.REDRIVE:
            tally += self._end_redrive_run(drained.breaker, tally, writer)
        elif passage.mode is Mode.VERDICT and drained.breaker.state is State.HALF_OPEN and not tally.errors:
            tally += self._judge_canary(drained.breaker, drained.canary_may_hide, writer)
        return self._report(passage.mode, passage.breaker, writer, drained.stop, tally)

    def _end_redrive_run(self, breaker: Breaker, tally: Tally, writer: BreakerWriter) -> Tally:
        """The breaker's verdict on a REDRIVE run; written only when it changes the record."""
        outcome = RunOutcome(received=tally.received, returned=tally.returned, errors=tally.errors)
        after = circuit.end_redrive_run(breaker, outcome, self.now(), self.settings.breaker)
        if after is None:
            return Tally()
        _, errors = writer.transition(breaker, after)
        return Tally(errors=errors)

    def _judge_canary(self, breaker: Breaker, may_have_hidden: bool, writer: BreakerWriter) -> Tally:
        """The scan after the canary's window did not find it (and hit no error)."""
        probe = breaker.canary
        assert probe is not None, "a HALF_OPEN breaker in VERDICT has a canary"
        now = self.now()
        verdict = canary.judge(probe, may_have_hidden=may_have_hidden, now=now)
        if verdict is canary.Verdict.PASSED:
            self.log.info("canary stayed away: one success")
            after = circuit.canary_passed(breaker, now, self.settings.breaker)
        elif verdict is canary.Verdict.FAILED:
            self.log.warning("canary hidden behind its FIFO group for two windows: opening the circuit")
            after = breaker.opened(now)
        else:
            self.log.info("canary may be hidden behind its FIFO group: verdict postponed")
            return Tally()
        _, errors = writer.transition(breaker, after)
        return Tally(errors=errors)

    @staticmethod
    def _report(
        mode: Mode, breaker: Breaker, writer: BreakerWriter, stop: StopReason, tally: Tally
    ) -> RunReport:
        return RunReport(
            mode=mode,
            breaker_state=writer.last_state or breaker.state,
            tally=tally,
            stopped_because=stop,
            breaker_transitions=list(writer.transitions),
        )
