"""The canary's verdict: first-hand from the consumer kit, or from a scan after its window.

When the verdict moves the breaker, the step says which mode the run goes on with: the next canary
after a success, a re-drive once the breaker closed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqs_redriver.runtime.act.breaker_writer import BreakerWriter
from sqs_redriver.runtime.adapters.ports import VerdictStore
from sqs_redriver.runtime.decide import breaker as circuit
from sqs_redriver.runtime.decide import canary
from sqs_redriver.runtime.decide.breaker import Breaker
from sqs_redriver.runtime.decide.consumer_health import health
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.evidence import Evidence
from sqs_redriver.runtime.model.report import StopReason, Tally
from sqs_redriver.runtime.run.consumer_watch import ConsumerWatch
from sqs_redriver.runtime.run.slow_start import VERDICT_POLL_SECONDS
from sqs_redriver.runtime.settings import Settings


@dataclass(frozen=True)
class Step:
    tally: Tally
    breaker: Breaker
    stop: StopReason = StopReason.NONE
    # The mode the run goes on with, when the step moved the breaker to one that allows more.
    then: Mode | None = None


class CanaryJudge:
    """Hears or judges the canary in flight, and moves the breaker by the verdict."""

    def __init__(
        self,
        settings: Settings,
        *,
        state: VerdictStore,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        logger: Any,
        watch: ConsumerWatch,
    ) -> None:
        self.settings = settings
        self.watch = watch
        self.state = state
        self.clock = clock
        self.sleep = sleep
        self.log = logger

    def now(self) -> int:
        return int(self.clock())

    def await_verdict(
        self, step: Step, out_of_time: Callable[[], bool], writer: BreakerWriter, source: str | None
    ) -> Step:
        """A probe run waits a bounded time inside its invocation for the kit's verdict; without
        one, the canary's window decides in a later run."""
        deadline = self.clock() + self.settings.verdict_wait_seconds
        while not out_of_time():
            heard = self.hear(step, writer, source)
            if heard.breaker is not step.breaker or self.clock() >= deadline:
                return heard
            self.sleep(VERDICT_POLL_SECONDS)
        return step

    def hear(self, step: Step, writer: BreakerWriter, source: str | None) -> Step:
        """The evidence on a HALF_OPEN breaker, in order: the consumer kit's verdict on the canary
        in flight (when consumers report verdicts), then the source queue's metrics."""
        heard = self.hear_kit(step, writer)
        if heard.breaker is not step.breaker:
            return heard
        return self.hear_metrics(step, writer, source)

    def hear_kit(self, step: Step, writer: BreakerWriter) -> Step:
        """The consumer kit's verdict on the canary in flight, when consumers report verdicts."""
        breaker = step.breaker
        if not self.settings.consumer_verdicts or breaker.canary is None:
            return step
        verdicts = self.state.load_verdicts(breaker.canary.verdict_key)
        after = canary.after_consumer_verdicts(breaker, verdicts, self.now(), self.settings.breaker)
        if after is None:
            return step
        self.log.info("the consumer judged the canary", extra={"verdicts": vars(verdicts)})
        return self._moved(step, breaker, canary.heard_elsewhere(breaker, after, from_kit=True), writer)

    def hear_metrics(self, step: Step, writer: BreakerWriter, source: str | None) -> Step:
        """What the source queue's metrics say of the consumer since they were last judged (and
        since the canary in flight was sent): received and never deleted reopens, deletes close."""
        breaker = step.breaker
        signal = self.watch.heard_for(breaker).get(source or self.settings.source_queue_url)
        if signal is None:
            return step
        since = max(breaker.judged_until, breaker.canary.sent_at if breaker.canary else 0)
        reading = health(signal.activity, since=since)
        after = canary.after_health(breaker, reading, self.now())
        if after is None:
            return step
        self.log.info("the source queue's metrics judged the consumer", extra={"reading": reading.describe()})
        return self._moved(step, breaker, self._silence(breaker, after), writer)

    def after_scan(self, step: Step, may_have_hidden: bool, writer: BreakerWriter) -> Step:
        """The scan after the canary's window did not find it (and hit no error)."""
        breaker = step.breaker
        probe = breaker.canary
        assert probe is not None, "a HALF_OPEN breaker in VERDICT has a canary"
        now = self.now()
        verdict = canary.judge(probe, may_have_hidden=may_have_hidden, now=now)
        if verdict is canary.Verdict.PASSED:
            self.log.info("canary stayed away: one success")
            after = circuit.canary_passed(breaker, now, self.settings.breaker, Evidence.RETURNS)
        elif verdict is canary.Verdict.FAILED:
            self.log.warning("canary hidden behind its FIFO group for two windows: opening the circuit")
            after = breaker.opened(now, Evidence.RETURNS)
        else:
            self.log.info("canary may be hidden behind its FIFO group: verdict postponed")
            return step
        return self._moved(step, breaker, self._silence(breaker, after), writer)

    def _silence(self, before: Breaker, after: Breaker) -> Breaker:
        """A verdict not from the kit, while the kit's was expected, counts one silent probe."""
        return canary.silenced(before, after, consumer_verdicts=self.settings.consumer_verdicts)

    def _moved(self, step: Step, before: Breaker, after: Breaker, writer: BreakerWriter) -> Step:
        """Write the breaker's move; the run goes on with the mode the new record allows."""
        breaker, errors = writer.transition(before, after)
        tally = step.tally + Tally(errors=errors)
        if breaker is not after:
            return Step(tally, breaker, step.stop)
        _, mode = circuit.begin_run(after, self.now(), self.settings.breaker)
        return Step(tally, after, step.stop, then=mode)
