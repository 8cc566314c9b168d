"""The steps of one part of a run: one mode's work each (re-drive, probe, watch, judge the
canary). When a step moves the breaker (a canary's verdict), the part goes on with the mode the
new record allows: a canary that passed is followed by the next canary at once, and a breaker
that closed by a re-drive, in the same invocation."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sqs_redriver.protocol.keys import run_verdict_key
from sqs_redriver.runtime.adapters.ports import VerdictStore
from sqs_redriver.runtime.decide import breaker as circuit
from sqs_redriver.runtime.decide.breaker import Breaker, RunOutcome
from sqs_redriver.runtime.decide.canary import expects_verdicts
from sqs_redriver.runtime.decide.pacing import out_of_time
from sqs_redriver.runtime.model.breaker_state import Mode, State
from sqs_redriver.runtime.model.report import StopReason, Tally
from sqs_redriver.runtime.run.canary_verdict import CanaryJudge, Step
from sqs_redriver.runtime.run.consumer_watch import ConsumerWatch
from sqs_redriver.runtime.run.drain import Drainer
from sqs_redriver.runtime.run.gate import Passage
from sqs_redriver.runtime.run.loop import Drained
from sqs_redriver.runtime.run.part import Part
from sqs_redriver.runtime.run.slow_start import SlowStart, SlowStartRules
from sqs_redriver.runtime.settings import Settings

# Every step but the last changes the breaker, so a run has few: verdict, probe, verdict, probe,
# re-drive at most.
MAX_STEPS = 8


class ModeSteps:
    """The work of each mode a breaker allows, from the gate's mode on."""

    def __init__(
        self,
        settings: Settings,
        *,
        verdicts: VerdictStore,
        drainer: Drainer,
        judge: CanaryJudge,
        watch: ConsumerWatch,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        logger: Any,
    ) -> None:
        self.settings = settings
        self.verdicts = verdicts
        self.drainer = drainer
        self.judge = judge
        self.watch = watch
        self.clock = clock
        self.sleep = sleep
        self.log = logger

    def now(self) -> int:
        return int(self.clock())

    def work(self, passage: Passage, part: Part, remaining_ms: Callable[[], int]) -> Step:
        """The part's steps, from the mode the gate let through until one leads nowhere (or the
        time budget ends); their tallies added up, the breaker and stop of the last."""
        steps: dict[Mode, Callable[[Breaker, Callable[[], int], Part], Step]] = {
            Mode.REDRIVE: self.redrive,
            Mode.PROBE: self.probe,
            Mode.WATCH: self.watch_canary,
            Mode.VERDICT: self.verdict,
        }
        mode, breaker, stop, tally = passage.mode, passage.breaker, passage.stop, Tally()
        for _ in range(MAX_STEPS):
            if mode is Mode.SKIP:
                break
            if self._out_of_time(remaining_ms):
                stop = stop or StopReason.TIME_BUDGET
                break
            step = steps[mode](breaker, remaining_ms, part)
            tally, breaker, stop = tally + step.tally, step.breaker, step.stop
            if step.then is None:
                break
            mode = step.then
        return Step(tally, breaker, stop)

    def redrive(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Step:
        """Re-drive at the slow start's pace; the run's outcome may then move the breaker."""
        self.watch.heard_for(breaker)  # read before the workers start: they share it
        slow_start = SlowStart(
            self._slow_start(breaker),
            verdict_key=run_verdict_key(self.now(), uuid.uuid4().hex[:8]),
            state=self.verdicts,
            clock=self.clock,
            sleep=self.sleep,
            logger=self.log,
            full_rate=part.slow_start.full_rate,
        )
        drained = self.drainer.redrive(breaker, remaining_ms, part, slow_start)
        tally = self.drainer.released(drained)
        part.slow_start.full_rate = slow_start.at_full_rate
        return self._end_redrives(drained, tally, slow_start, part)

    def _end_redrives(self, drained: Drained, tally: Tally, slow_start: SlowStart, part: Part) -> Step:
        """What the re-drives' returns, errors and verdicts make of the breaker."""
        verdicts = slow_start.verdicts
        outcome = RunOutcome(
            received=tally.received_judged,
            returned=tally.returned,
            errors=tally.errors,
            ok_verdicts=verdicts.ok,
            transient_verdicts=verdicts.transient,
        )
        after = circuit.end_redrive_run(drained.breaker, outcome, self.now(), self.settings.breaker)
        if after is not None:
            _, errors = part.writer.transition(drained.breaker, after)
            tally += Tally(errors=errors)
        return Step(tally, drained.breaker, drained.stop)

    def probe(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Step:
        """The source queue's metrics first: a consumer seen failing since the breaker opened gets
        no canary, one seen deleting again closes it. Else a canary goes; with consumer verdicts
        the run waits a while for the kit's."""
        heard = self.judge.hear_metrics(Step(Tally(), breaker), part.writer, part.source)
        if heard.breaker is not breaker:
            return heard
        drained = self.drainer.drain(Mode.PROBE, breaker, remaining_ms, part)
        step = Step(self.drainer.released(drained), drained.breaker, drained.stop)
        if drained.stop is not StopReason.CANARY_SENT or not self._expects_verdicts(breaker):
            return step
        out_of_time = lambda: self._out_of_time(remaining_ms)  # noqa: E731
        return self.judge.await_verdict(step, out_of_time, part.writer, part.source)

    def watch_canary(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Step:
        """The canary's window is not over: only the consumer kit's verdict can say more now.
        The DLQ is not scanned: a failing canary cannot be back before its window ends."""
        return self.judge.hear(Step(Tally(), breaker), part.writer, part.source)

    def verdict(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Step:
        """The canary's window is over: its verdict from the kit or the metrics, else a scan that
        stops at it."""
        heard = self.judge.hear(Step(Tally(), breaker), part.writer, part.source)
        if heard.breaker is not breaker:
            return heard
        drained = self.drainer.drain(Mode.VERDICT, breaker, remaining_ms, part)
        tally = self.drainer.released(drained)
        step = Step(tally, drained.breaker, drained.stop)
        if drained.breaker.state is not State.HALF_OPEN or tally.errors:
            return step
        return self.judge.after_scan(step, drained.canary_may_hide, part.writer)

    def _out_of_time(self, remaining_ms: Callable[[], int]) -> bool:
        return out_of_time(remaining_ms(), self.settings.time_margin_seconds)

    def _expects_verdicts(self, breaker: Breaker) -> bool:
        return expects_verdicts(breaker, self.settings.consumer_verdicts)

    def _slow_start(self, breaker: Breaker) -> SlowStartRules:
        """A trial that waits for the consumer kit's verdicts, when it is expected to report them;
        else by time."""
        settings = self.settings
        return SlowStartRules(
            consumer_verdicts=self._expects_verdicts(breaker),
            verdict_wait_seconds=settings.verdict_wait_seconds,
            slow_start_seconds=settings.slow_start_seconds,
            max_rate=settings.max_redrives_per_second,
            breaker=settings.breaker,
        )
