"""One scheduled run, top to bottom (``Redriver.run``): honour the operator's pause, then for each
source's part pass the breaker's gate and take the steps its mode allows (re-drive, probe, watch,
judge the canary), sweep what is about to expire, offer a continuation, and record the run in the
history the operator's tool reads."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqs_redriver.core import breaker as circuit
from sqs_redriver.core.breaker import (
    Breaker,
    BreakerPolicy,
    BreakerWriter,
    Evidence,
    Mode,
    RunOutcome,
    State,
    begin_run,
    expects_verdicts,
)
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import COUNTS, RunSummary
from sqs_redriver.protocol.keys import RecordKind, run_verdict_key
from sqs_redriver.runtime import canary
from sqs_redriver.runtime.budget import out_of_time
from sqs_redriver.runtime.consumer_breaker import ConsumerGate
from sqs_redriver.runtime.consumer_health import health
from sqs_redriver.runtime.continuation import Continuations, continues
from sqs_redriver.runtime.report import RunReport, StopReason, Tally, combine
from sqs_redriver.runtime.retention import sweep_interval
from sqs_redriver.runtime.routing import turn_order
from sqs_redriver.runtime.slow_start import VERDICT_POLL_SECONDS, SlowStart, SlowStartRules
from sqs_redriver.runtime.workers import is_worker

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable

    from sqs_redriver.core.breaker import BreakerStore
    from sqs_redriver.core.table import Resume
    from sqs_redriver.runtime.batch_loop import BatchLoop, LoopResult
    from sqs_redriver.runtime.consumer_breaker import ConsumerBreakerReader
    from sqs_redriver.runtime.consumer_health import ConsumerWatch
    from sqs_redriver.runtime.held import HeldGroups
    from sqs_redriver.runtime.ports import PauseStore, RunHistoryStore, RunRecords, SweepStore, VerdictStore
    from sqs_redriver.runtime.settings import Settings
    from sqs_redriver.runtime.workers import Drains, Fleet


# The gate every part of a run passes first: the operator's pause, then the breaker, say what
# the part may do.


@dataclass(frozen=True)
class GateDecision:
    breaker: Breaker
    mode: Mode
    # Set when the run may not touch the DLQ at all.
    stop: StopReason = StopReason.NONE


def paused_by_operator(pauses: PauseStore, key: str, logger: Any) -> bool:
    """Whether an operator paused re-drives (the PAUSE# item); logged with who and why."""
    pause = pauses.load_pause(key)
    if pause is not None:
        logger.warning(
            "re-drives paused by an operator",
            extra={"by": pause.by, "reason": pause.reason, "since": pause.at},
        )
    return pause is not None


def pass_gate(
    state: BreakerStore, writer: BreakerWriter, key: str, policy: BreakerPolicy, now: int, *, paused: bool
) -> GateDecision:
    """Read the breaker and let time move it (an OPEN breaker whose cooldown ended becomes
    HALF_OPEN). When another run wrote that move first, this run does nothing. ``paused`` (by
    an operator): the part touches neither the DLQ nor the breaker (time does not move an OPEN
    one either)."""
    if paused:
        return GateDecision(state.load_breaker(key), Mode.SKIP, StopReason.PAUSED)
    stored = state.load_breaker(key)
    breaker, mode = begin_run(stored, now, policy)
    if breaker is not stored and not writer.save(breaker, stored):
        return GateDecision(breaker, Mode.SKIP)
    if mode is Mode.SKIP:
        return GateDecision(breaker, mode, StopReason.BREAKER_OPEN)
    return GateDecision(breaker, mode)


# What one source's part of a run works with, and what it leaves for the run's later phases.


@dataclass
class SlowStartProgress:
    """Whether the run's re-drives have finished their slow start (a continuation inherits it)."""

    full_rate: bool = False


@dataclass(frozen=True)
class Part:
    """What one source's part of a run works with: the source (None: the only one), the writer of
    its breaker, its slow start, the room left of the run's per-run limit, and the large drain the
    run is a worker of (None: it is not)."""

    source: str | None
    writer: BreakerWriter
    slow_start: SlowStartProgress
    limit: int
    fleet: Fleet | None = None


@dataclass(frozen=True)
class FinishedPart:
    """One part of a run, done: its report, the gate it passed, what it worked with."""

    report: RunReport
    gate: GateDecision
    part: Part

    @property
    def scanned(self) -> bool:
        """Whether it read the DLQ through; runs that did not may owe the retention a sweep."""
        gate, stop = self.gate, self.report.stopped_because
        not_scanning = (
            StopReason.BREAKER_OPEN,
            StopReason.PAUSED,
            StopReason.CONSUMER_BREAKER_OPEN,
            StopReason.CONSUMER_BREAKER_PROBE,
        )
        scans = gate.stop not in not_scanning and gate.mode is not Mode.WATCH
        return scans and stop is not StopReason.SOURCE_BACKLOG


@dataclass(frozen=True)
class StepResult:
    """What one step of a part did: its counts, the breaker it left, why it stopped."""

    tally: Tally
    breaker: Breaker
    stop: StopReason = StopReason.NONE
    # The mode the run goes on with, when the step moved the breaker to one that allows more.
    then: Mode | None = None


# The run's report, added to the run history the operator's tool reads.


def record_in_history(
    runs: RunHistoryStore,
    key: str,
    report: RunReport,
    *,
    started: float,
    ended: float,
    continuation: bool,
    source_queue_url: str,
    logger: Any,
) -> None:
    """Add the run's summary to the history ``key``. A failed write only loses that line: logged,
    never a run error, and the run's result stands."""
    summary = run_summary(
        report,
        at=int(started),
        duration_ms=max(int((ended - started) * 1000), 0),
        continuation=continuation,
        source_queue_url=source_queue_url,
    )
    try:
        runs.record_run(key, summary)
    except AwsCallError as exc:
        logger.warning("run history not recorded", extra={"error": str(exc)})


def run_summary(
    report: RunReport, *, at: int, duration_ms: int, continuation: bool, source_queue_url: str
) -> dict[str, Any]:
    """The history line of a run that started at ``at`` (epoch seconds) and took ``duration_ms``;
    ``continuation``: it was started by a continuation; ``source_queue_url`` names the only source of
    a run with one (its report has no parts)."""
    return RunSummary(
        at=at,
        duration_ms=duration_ms,
        mode=report.mode.value,
        breaker_state=report.breaker_state.value,
        stopped_because=report.stopped_because.value,
        **{name: getattr(report, name) for name in COUNTS},
        breaker_transitions=tuple(report.breaker_transitions),
        paused=report.stopped_because is StopReason.PAUSED,
        continuation=continuation,
        sources={part.source or source_queue_url: part.breaker_state.value for part in report.by_source},
    ).to_dict()


# The canary's verdict: first-hand from the consumer kit, or from a scan after its window.


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
        self, step: StepResult, out_of_time: Callable[[], bool], writer: BreakerWriter, source: str | None
    ) -> StepResult:
        """A probe run waits a bounded time inside its invocation for the kit's verdict; without
        one, the canary's window decides in a later run."""
        deadline = self.clock() + self.settings.verdict_wait_seconds
        while not out_of_time():
            heard = self.hear(step, writer, source)
            if heard.breaker is not step.breaker or self.clock() >= deadline:
                return heard
            self.sleep(VERDICT_POLL_SECONDS)
        return step

    def hear(self, step: StepResult, writer: BreakerWriter, source: str | None) -> StepResult:
        """The evidence on a HALF_OPEN breaker, in order: the consumer kit's verdict on the canary
        in flight (when consumers report verdicts), then the source queue's metrics."""
        heard = self.hear_kit(step, writer)
        if heard.breaker is not step.breaker:
            return heard
        return self.hear_metrics(step, writer, source)

    def hear_kit(self, step: StepResult, writer: BreakerWriter) -> StepResult:
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

    def hear_metrics(self, step: StepResult, writer: BreakerWriter, source: str | None) -> StepResult:
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

    def taken_at_once(self, step: StepResult, writer: BreakerWriter) -> StepResult:
        """A canary with a window of 0, taken: the target's answer to its delivery was the verdict
        (a rule target, a subscription's endpoint, a function probed synchronously). One success
        now, in the run that sent it; the part goes on with the next canary, or re-drives."""
        breaker = step.breaker
        self.log.info("the target took the canary: one success")
        after = circuit.canary_passed(breaker, self.now(), self.settings.breaker, Evidence.RETURNS)
        return self._moved(step, breaker, self._silence(breaker, after), writer)

    def after_scan(self, step: StepResult, may_have_hidden: bool, writer: BreakerWriter) -> StepResult:
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

    def _moved(self, step: StepResult, before: Breaker, after: Breaker, writer: BreakerWriter) -> StepResult:
        """Write the breaker's move; the run goes on with the mode the new record allows."""
        breaker, errors = writer.transition(before, after)
        tally = step.tally + Tally(errors=errors)
        if breaker is not after:
            return StepResult(tally, breaker, step.stop)
        _, mode = circuit.begin_run(after, self.now(), self.settings.breaker)
        return StepResult(tally, after, step.stop, then=mode)


# The steps of one part of a run: one mode's work each (re-drive, probe, watch, judge the
# canary). When a step moves the breaker (a canary's verdict), the part goes on with the mode the
# new record allows: a canary that passed is followed by the next canary at once, and a breaker
# that closed by a re-drive, in the same invocation.


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
        loop: BatchLoop,
        judge: CanaryJudge,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        logger: Any,
    ) -> None:
        self.settings = settings
        self.verdicts = verdicts
        self.loop = loop
        self.judge = judge
        self.clock = clock
        self.sleep = sleep
        self.log = logger

    def now(self) -> int:
        return int(self.clock())

    def by_mode(self) -> dict[Mode, Callable[[Breaker, Callable[[], int], Part], StepResult]]:
        """The step of each mode a part can take (SKIP takes none)."""
        return {
            Mode.REDRIVE: self.redrive,
            Mode.PROBE: self.probe,
            Mode.WATCH: self.watch_canary,
            Mode.VERDICT: self.verdict,
        }

    def redrive(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> StepResult:
        """Re-drive at the slow start's pace; the run's outcome may then move the breaker."""
        slow_start = SlowStart(
            self._slow_start(breaker),
            verdict_key=run_verdict_key(self.now(), uuid.uuid4().hex[:8]),
            state=self.verdicts,
            clock=self.clock,
            sleep=self.sleep,
            logger=self.log,
            full_rate=part.slow_start.full_rate,
            drain=part.fleet is not None,
        )
        drained = self.loop.run(Mode.REDRIVE, breaker, part, remaining_ms, slow_start)
        part.slow_start.full_rate = slow_start.at_full_rate
        return self._end_redrives(drained, slow_start, part)

    def _end_redrives(self, drained: LoopResult, slow_start: SlowStart, part: Part) -> StepResult:
        """What the re-drives' returns, errors and verdicts make of the breaker."""
        verdicts, tally = slow_start.verdicts, drained.tally
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
        return StepResult(tally, drained.breaker, drained.stop)

    def probe(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> StepResult:
        """The source queue's metrics first: a consumer seen failing since the breaker opened gets
        no canary, one seen deleting again closes it. Else a canary goes; with consumer verdicts
        the run waits a while for the kit's."""
        heard = self.judge.hear_metrics(StepResult(Tally(), breaker), part.writer, part.source)
        if heard.breaker is not breaker:
            return heard
        if self._probe_outlasts_run(part, remaining_ms):
            return StepResult(Tally(), breaker, StopReason.TIME_BUDGET)
        drained = self.loop.run(Mode.PROBE, breaker, part, remaining_ms)
        step = StepResult(drained.tally, drained.breaker, drained.stop)
        if drained.stop is not StopReason.CANARY_SENT:
            return step
        probe = drained.breaker.canary
        if probe is not None and probe.verdict_at <= probe.sent_at:
            return self.judge.taken_at_once(step, part.writer)
        if not self._expects_verdicts(breaker):
            return step
        out_of_time = lambda: self._out_of_time(remaining_ms)  # noqa: E731
        return self.judge.await_verdict(step, out_of_time, part.writer, part.source)

    def watch_canary(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> StepResult:
        """The canary's window is not over: only the consumer kit's verdict can say more now.
        The DLQ is not scanned: a failing canary cannot be back before its window ends."""
        return self.judge.hear(StepResult(Tally(), breaker), part.writer, part.source)

    def verdict(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> StepResult:
        """The canary's window is over: its verdict from the kit or the metrics, else a scan that
        stops at it."""
        heard = self.judge.hear(StepResult(Tally(), breaker), part.writer, part.source)
        if heard.breaker is not breaker:
            return heard
        drained = self.loop.run(Mode.VERDICT, breaker, part, remaining_ms)
        step = StepResult(drained.tally, drained.breaker, drained.stop)
        if drained.breaker.state is not State.HALF_OPEN or drained.tally.errors:
            return step
        return self.judge.after_scan(step, drained.canary_may_hide, part.writer)

    def _out_of_time(self, remaining_ms: Callable[[], int]) -> bool:
        return out_of_time(remaining_ms(), self.settings.time_margin_seconds)

    def _probe_outlasts_run(self, part: Part, remaining_ms: Callable[[], int]) -> bool:
        """A function probed synchronously is waited on for up to its timeout: it is not probed with
        less time left than that and the margin (a run ended mid-probe would leave its canary
        hidden, unjudged)."""
        seconds = self.settings.probe_timeout_of(part.source or self.settings.source_queue_url)
        return seconds > 0 and out_of_time(remaining_ms() - seconds * 1000, self.settings.time_margin_seconds)

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


# The retention sweep of runs that do not scan the DLQ: messages about to expire are parked
# even while the breaker keeps re-drives away.


class RetentionSweep:
    """Sweeps the DLQ when due, at most every half of EXPIRY_MARGIN_SECONDS (recorded in the table)."""

    def __init__(
        self,
        settings: Settings,
        *,
        sweeps: SweepStore,
        loop: BatchLoop,
        clock: Callable[[], float],
        logger: Any,
    ) -> None:
        self.settings = settings
        self.sweeps = sweeps
        self.loop = loop
        self.clock = clock
        self.log = logger

    def sweep_if_due(self, parts: list[FinishedPart], remaining_ms: Callable[[], int]) -> Tally:
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
            drained = self.loop.run(Mode.SWEEP, first.gate.breaker, every_source, remaining_ms)
            tally = drained.tally
            if drained.stop is StopReason.DLQ_EMPTY:  # else unfinished: the next run sweeps again
                self.sweeps.save_sweep_due(key, now + sweep_interval(settings.expiry_margin_seconds))
        except AwsCallError as exc:
            self.log.error("retention sweep failed", extra={"error": str(exc)})
            tally += Tally(errors=1)
        return tally

    def _out_of_time(self, remaining_ms: Callable[[], int]) -> bool:
        return out_of_time(remaining_ms(), self.settings.time_margin_seconds)


# One scheduled run of the re-driver: its phases, in order.


class Redriver:
    """The re-driver for one DLQ; ``run`` is one scheduled run."""

    def __init__(
        self,
        settings: Settings,
        *,
        state: RunRecords,
        loop: BatchLoop,
        logger: logging.Logger | Any,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        watch: ConsumerWatch,
        drains: Drains,
        breaker_reader: ConsumerBreakerReader | None = None,
        held: HeldGroups | None = None,
    ) -> None:
        """Composed by ``sqs_redriver.runtime.wiring.compose_redriver``; ``watch`` reads the source
        queues' CloudWatch metrics once per run (the batch handler reads the same); ``drains``
        starts, ends and fans out large drains (workers.py); ``breaker_reader`` reads the
        Powertools breakers targets keep (consumer_breaker.py). Each phase gets the records it uses
        of ``state``."""
        self.settings = settings
        self.state = state
        self.log = logger
        self.clock = clock
        self.watch = watch
        self.held = held
        judge = CanaryJudge(settings, state=state, clock=clock, sleep=sleep, logger=logger, watch=watch)
        self.steps = ModeSteps(
            settings,
            verdicts=state,
            loop=loop,
            judge=judge,
            clock=clock,
            sleep=sleep,
            logger=logger,
        )
        self.sweep = RetentionSweep(settings, sweeps=state, loop=loop, clock=clock, logger=logger)
        self.continuations = Continuations(
            state,
            dlq_url=settings.dlq_url,
            max_continuations=settings.max_continuations,
            hold_seconds=settings.dlq_visibility_timeout_seconds,
            logger=logger,
        )
        self.drains = drains
        self.breaker_reader = breaker_reader
        self.consumer_breakers = {
            source.address: source.breaker for source in settings.dead_letter_sources if source.breaker
        }

    def now(self) -> int:
        return int(self.clock())

    def run(
        self,
        remaining_ms: Callable[[], int],
        resume: Resume | None = None,
        start_worker: Callable[[Resume], None] | None = None,
    ) -> RunReport:
        """Do one run; ``remaining_ms`` is the Lambda context's time left, ``resume`` the
        continuation this run was started with (None for a scheduled tick), ``start_worker`` starts
        a large drain's worker (None: the run starts none). A DLQ shared by several sources is
        handled source by source, each under its own breaker. A run that ran (paused ones too) adds
        its summary to the run history, unless it is a large drain's worker."""
        started, settings = self.clock(), self.settings
        self.watch.begin_run()
        if self.held is not None:
            self.held.begin_run()
        if resume is not None and not self._take(resume):
            self.log.info("continuation already taken: nothing to do", extra={"token": resume.token})
            breaker = self.state.load_breaker(settings.breaker_key)
            return RunReport(Mode.SKIP, breaker.state, stopped_because=StopReason.CONTINUATION_TAKEN)
        fleet = self.drains.fleet(resume, start_worker)
        full_rate = resume is not None and resume.full_rate
        paused = paused_by_operator(self.state, settings.pause_key, self.log)
        parts: list[FinishedPart] = []
        for source in self._sources_in_turn(resume):
            room = settings.max_messages_per_run - sum(done.report.received for done in parts)
            parts.append(self._part(source, room, remaining_ms, full_rate, paused, fleet))
        urls = settings.source_queue_urls
        report = parts[0].report if len(urls) == 1 else combine([d.report for d in parts], urls[0])
        if not is_worker(resume):  # the chain and the ticks guard retention; the workers drain
            report = replace(report, tally=report.tally + self.sweep.sweep_if_due(parts, remaining_ms))
        report = replace(report, continue_with=self._next_run(report, resume, fleet))
        if fleet is not None:
            report = replace(report, drain=fleet.last)
        if not is_worker(resume):  # a drain's workers are its status, not lines of the history
            record_in_history(
                self.state,
                settings.runs_key,
                report,
                started=started,
                ended=self.clock(),
                continuation=resume is not None,
                source_queue_url=settings.source_queue_url,
                logger=self.log,
            )
        return report

    def release_continuation(self, resume: Resume) -> None:
        """Free the slot of a continuation that could not be started, so the next run may offer."""
        if is_worker(resume):
            self.drains.release(resume)
        else:
            self.continuations.release(resume)

    def _take(self, resume: Resume) -> bool:
        """Take the slot this run was started in: the chain's, or a worker's lease."""
        return self.drains.hold(resume) if is_worker(resume) else self.continuations.take(resume)

    def _next_run(self, report: RunReport, resume: Resume | None, fleet: Fleet | None) -> Resume | None:
        """The run that follows this one at once, if any: a worker's continuation in its own slot,
        while the drain wants it; the chain's, in a large drain when the chain started or joined
        one. A run that found the DLQ empty ends the drain it was part of."""
        drain = fleet.last if fleet is not None else None
        if report.stopped_because is StopReason.DLQ_EMPTY:
            self.drains.end(drain)
        in_drain = drain is not None and drain.going
        if resume is not None and fleet is not None and is_worker(resume):
            wanted = drain is not None and drain.going and resume.slot < drain.workers
            limit = self.settings.max_continuations
            goes_on = wanted and continues(report, generation=resume.generation, max_continuations=limit)
            successor = replace(
                resume, token=uuid.uuid4().hex, generation=resume.generation + 1, full_rate=report.full_rate
            )
            return self.drains.pass_on(resume, successor if goes_on else None)
        offered = self.continuations.offer(report, resume)
        if offered is None:
            return None
        joins = in_drain or self.drains.joins_or_starts(
            report.stopped_because, generation=offered.generation - 1
        )
        return replace(offered, drain=joins)

    def _sources_in_turn(self, resume: Resume | None) -> list[str | None]:
        """The sources whose parts this run does, in order: None (the only one) for one source;
        several take turns going first, so none waits behind the others every run."""
        urls = self.settings.source_queue_urls
        if len(urls) == 1:
            return [None]
        generation = resume.generation if resume is not None else 0
        return [urls[index] for index in turn_order(len(urls), generation=generation, now=self.now())]

    def _consumer_gate(self, source: str, gate: GateDecision, limit: int) -> tuple[GateDecision, int]:
        """A target that keeps its own Powertools breaker has the last word over what the gate
        let through: OPEN, it gets nothing; letting a probe through, a canary's worth at most."""
        breaker = self.consumer_breakers.get(source)
        if breaker is None or self.breaker_reader is None or gate.mode is Mode.SKIP:
            return gate, limit
        reading = self.breaker_reader.read(breaker, self.now())
        if reading.gate is ConsumerGate.SEND:
            return gate, limit
        self.log.info("the target's own breaker holds re-drives back", extra={"reason": reading.reason})
        if reading.gate is ConsumerGate.HOLD:
            return replace(gate, mode=Mode.SKIP, stop=StopReason.CONSUMER_BREAKER_OPEN), limit
        if gate.mode is not Mode.REDRIVE:
            # A probe or a verdict of the re-driver's own breaker is a canary's worth already, and a
            # verdict's scan must read the DLQ through.
            return gate, limit
        # Re-drives held to a canary's worth read no further into the DLQ: the part does not count as
        # a scan, so the retention sweep still guards what lies deeper.
        probing = replace(gate, stop=StopReason.CONSUMER_BREAKER_PROBE)
        return probing, min(limit, self.settings.canary_size)

    def _part(
        self,
        source: str | None,
        limit: int,
        remaining_ms: Callable[[], int],
        full_rate: bool,
        paused: bool,
        fleet: Fleet | None,
    ) -> FinishedPart:
        """The run's work under one breaker, ``source``'s (None: the only source's): the gate, then
        the steps of each mode, from the gate's mode on, until one leads nowhere or the time
        budget ends. A large drain's worker only re-drives: probes and verdicts are the chain's."""
        key = RecordKind.BREAKER.key(source or self.settings.source_queue_url)
        writer = BreakerWriter(self.state, key, self.log)
        gate = pass_gate(self.state, writer, key, self.settings.breaker, self.now(), paused=paused)
        gate, limit = self._consumer_gate(source or self.settings.source_queue_url, gate, limit)
        if fleet is not None and fleet.slot and gate.mode is not Mode.REDRIVE:
            gate = replace(gate, mode=Mode.SKIP, stop=gate.stop or StopReason.BREAKER_OPEN)
        # Only a breaker CLOSED since the run before keeps its full rate: one that closes during
        # this run starts its re-drives slowly, whatever the other sources did.
        progress = SlowStartProgress(full_rate=full_rate and gate.mode is Mode.REDRIVE)
        part = Part(source, writer, progress, max(limit, 0), fleet)
        steps = self.steps.by_mode()
        mode, worked = gate.mode, StepResult(Tally(), gate.breaker, gate.stop)
        for _ in range(MAX_STEPS):
            if mode is Mode.SKIP:
                break
            if out_of_time(remaining_ms(), self.settings.time_margin_seconds):
                worked = replace(worked, stop=worked.stop or StopReason.TIME_BUDGET)
                break
            step = steps[mode](worked.breaker, remaining_ms, part)
            worked = StepResult(worked.tally + step.tally, step.breaker, step.stop)
            if step.then is None:
                break
            mode = step.then
        report = RunReport(
            mode=gate.mode,
            breaker_state=writer.last_state or gate.breaker.state,
            tally=worked.tally,
            stopped_because=worked.stop,
            breaker_transitions=list(writer.transitions),
            full_rate=part.slow_start.full_rate,
            source=source,
        )
        return FinishedPart(report, gate, part)
