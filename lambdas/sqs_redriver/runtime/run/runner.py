"""One scheduled run of the re-driver: pass the gate, then the steps the breaker allows.

A step is one mode's work (re-drive, probe, watch, judge the canary). When a step moves the
breaker (a canary's verdict), the run goes on with the mode the new record allows: a canary that
passed is followed by the next canary at once, and a breaker that closed by a re-drive, in the
same invocation. A run that stopped on its time budget or per-run limit with work left is
followed at once by another (``RunReport.continue_with``; decide/continuation.py says when). A DLQ
shared by several sources is handled one source at a time, each part under that source's own
breaker (decide/fairness.py says which goes first). The run talks to AWS only through the ports
it is given (adapters/ports.py). It deletes a DLQ message only after the message was sent
somewhere else and the send succeeded.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sqs_redriver.protocol.keys import breaker_key, run_verdict_key
from sqs_redriver.runtime.act.breaker_writer import BreakerWriter
from sqs_redriver.runtime.act.executor import Executor
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import RunRecords
from sqs_redriver.runtime.decide import breaker as circuit
from sqs_redriver.runtime.decide.breaker import Breaker, RunOutcome
from sqs_redriver.runtime.decide.canary import expects_verdicts
from sqs_redriver.runtime.decide.continuation import continues
from sqs_redriver.runtime.decide.fairness import turn_order
from sqs_redriver.runtime.decide.pacing import out_of_time
from sqs_redriver.runtime.decide.retention import sweep_interval
from sqs_redriver.runtime.model.breaker_state import Mode, State
from sqs_redriver.runtime.model.continuation import Resume
from sqs_redriver.runtime.model.history import run_summary
from sqs_redriver.runtime.model.report import RunReport, StopReason, Tally, combine
from sqs_redriver.runtime.run.canary_verdict import CanaryJudge, Step
from sqs_redriver.runtime.run.consumer_watch import ConsumerWatch
from sqs_redriver.runtime.run.gate import Passage, pass_gate
from sqs_redriver.runtime.run.loop import BatchLoop, Drained
from sqs_redriver.runtime.run.parallel import drain_in_parallel
from sqs_redriver.runtime.run.wave import SlowStart, Wave
from sqs_redriver.runtime.settings import Settings

# Every step but the last changes the breaker, so a run has few: verdict, probe, verdict, probe,
# re-drive at most.
MAX_STEPS = 8
# Lambda keeps a queued continuation at most the function's max_event_age (10 minutes, set by the
# construct) while runs hold its one concurrency: an offer older than this was lost, and another run
# may offer again (a late one that still arrives finds another token and does nothing).
CONTINUATION_STALE_SECONDS = 900


@dataclass
class Ramp:
    """Whether the run's re-drives have finished their slow start (a continuation inherits it)."""

    full_rate: bool = False


@dataclass(frozen=True)
class Part:
    """What one source's part of a run works with: the source (None: the only one), the writer of
    its breaker, its slow start, and the room left of the run's per-run limit."""

    owner: str | None
    writer: BreakerWriter
    ramp: Ramp
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


class Redriver:
    """The re-driver for one DLQ; ``run`` is one scheduled run."""

    def __init__(
        self,
        settings: Settings,
        *,
        state: RunRecords,
        loop: BatchLoop,
        executor: Executor,
        logger: logging.Logger | Any,
        clock: Callable[[], float],
        pause: Callable[[float], None],
        watch: ConsumerWatch,
    ) -> None:
        """Composed by ``sqs_redriver.runtime.wiring.compose_redriver``; ``watch`` reads the source queues'
        CloudWatch metrics once per run (the batch handler reads the same)."""
        self.settings = settings
        self.state = state
        self.loop = loop
        self.executor = executor
        self.log = logger
        self.clock = clock
        self.pause = pause
        self.watch = watch
        self.judge = CanaryJudge(settings, state=state, clock=clock, pause=pause, logger=logger, watch=watch)

    def now(self) -> int:
        return int(self.clock())

    def run(self, remaining_ms: Callable[[], int], resume: Resume | None = None) -> RunReport:
        """Do one run; ``remaining_ms`` is the Lambda context's time left, ``resume`` the
        continuation this run was started with (None for a scheduled tick). A DLQ shared by
        several sources is handled source by source, each under its own breaker. A run that ran
        (paused ones too) adds its summary to the run history."""
        settings = self.settings
        started = self.clock()
        self.watch.begin_run()
        if resume is not None and not self.state.take_continuation(settings.dlq_url, resume.token):
            self.log.info("continuation already taken: nothing to do", extra={"token": resume.token})
            breaker = self.state.load_breaker(settings.breaker_key)
            return RunReport(Mode.SKIP, breaker.state, stopped_because=StopReason.CONTINUATION_TAKEN)
        report = self._run(remaining_ms, resume)
        self._record(report, started, continuation=resume is not None)
        return report

    def _run(self, remaining_ms: Callable[[], int], resume: Resume | None) -> RunReport:
        settings = self.settings
        full_rate = resume is not None and resume.full_rate
        paused = self._paused()
        urls = settings.source_queue_urls
        if len(urls) == 1:
            parts = [self._part(None, settings.max_messages_per_run, remaining_ms, full_rate, paused)]
            report = parts[0].report
        else:
            generation = resume.generation if resume is not None else 0
            parts = []
            for index in turn_order(len(urls), generation=generation, now=self.now()):
                room = settings.max_messages_per_run - sum(done.report.received for done in parts)
                parts.append(self._part(urls[index], room, remaining_ms, full_rate, paused))
            report = combine([done.report for done in parts], first_source=urls[0])
        report = replace(report, tally=report.tally + self._sweep_if_due(parts, remaining_ms))
        return replace(report, continue_with=self._continuation(report, resume))

    def _part(
        self, owner: str | None, limit: int, remaining_ms: Callable[[], int], full_rate: bool, paused: bool
    ) -> Done:
        """The run's work under one breaker: the owner's (None: the only source's). Paused, it
        touches neither the DLQ nor the breaker (time does not move an OPEN one either)."""
        key = breaker_key(owner or self.settings.source_queue_url)
        writer = BreakerWriter(self.state, key, self.log)
        if paused:
            passage = Passage(self.state.load_breaker(key), Mode.SKIP, StopReason.PAUSED)
        else:
            passage = pass_gate(self.state, writer, key, self.settings.breaker, self.now())
        # Only a breaker CLOSED since the run before keeps its full rate: one that closes during
        # this run starts its re-drives slowly, whatever the other sources did.
        ramp = Ramp(full_rate=full_rate and passage.mode is Mode.REDRIVE)
        part = Part(owner, writer, ramp, max(limit, 0))
        steps: dict[Mode, Callable[[Breaker, Callable[[], int], Part], Step]] = {
            Mode.REDRIVE: self._redrive,
            Mode.PROBE: self._probe,
            Mode.WATCH: self._watch,
            Mode.VERDICT: self._verdict,
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
        report = RunReport(
            mode=passage.mode,
            breaker_state=writer.last_state or passage.breaker.state,
            tally=tally,
            stopped_because=stop,
            breaker_transitions=list(writer.transitions),
            full_rate=part.ramp.full_rate,
            source=owner,
        )
        return Done(report, passage, part)

    def _paused(self) -> bool:
        """Whether an operator paused re-drives (the PAUSE# item); logged with who and why."""
        pause = self.state.load_pause(self.settings.pause_key)
        if pause is not None:
            self.log.warning(
                "re-drives paused by an operator",
                extra={"by": pause.by, "reason": pause.reason, "since": pause.at},
            )
        return pause is not None

    def _record(self, report: RunReport, started: float, *, continuation: bool) -> None:
        """Add the run's summary to the history the operator's tool reads. A failed write only
        loses that line: logged, never a run error, and the run's result stands."""
        summary = run_summary(
            report,
            at=int(started),
            duration_ms=max(int((self.clock() - started) * 1000), 0),
            continuation=continuation,
            first_source=self.settings.source_queue_url,
        )
        try:
            self.state.record_run(self.settings.runs_key, summary)
        except AwsCallError as exc:
            self.log.warning("run history not recorded", extra={"error": str(exc)})

    def _continuation(self, report: RunReport, resume: Resume | None) -> Resume | None:
        """The run to start now, if draining goes on; at most one is ever pending."""
        generation = resume.generation if resume is not None else 0
        if not continues(report, generation=generation, max_continuations=self.settings.max_continuations):
            return None
        token = uuid.uuid4().hex
        try:
            offered = self.state.offer_continuation(
                self.settings.dlq_url, token, stale_after=CONTINUATION_STALE_SECONDS
            )
        except AwsCallError as exc:
            self.log.warning("no continuation: the next tick goes on", extra={"error": str(exc)})
            return None
        if not offered:
            self.log.info("a continuation is already pending")
            return None
        return Resume(token=token, generation=generation + 1, full_rate=report.full_rate)

    def release_continuation(self, resume: Resume) -> None:
        """Free the slot of a continuation that could not be started, so the next run may offer."""
        try:
            self.state.take_continuation(self.settings.dlq_url, resume.token)
        except AwsCallError as exc:
            self.log.warning("continuation slot not freed: it goes stale", extra={"error": str(exc)})

    # -- steps -------------------------------------------------------------------------------

    def _redrive(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Step:
        settings, writer = self.settings, part.writer
        self.watch.heard_for(breaker)  # read before the workers start: they share it
        wave = Wave(
            self._slow_start(breaker),
            verdict_key=run_verdict_key(self.now(), uuid.uuid4().hex[:8]),
            state=self.state,
            clock=self.clock,
            pause=self.pause,
            logger=self.log,
            ramped=part.ramp.full_rate,
        )
        limit = part.limit
        if settings.parallel_batches > 1:
            drained = drain_in_parallel(
                self.loop,
                breaker,
                workers=settings.parallel_batches,
                limit=limit,
                remaining_ms=remaining_ms,
                writer=writer,
                wave=wave,
                owner=part.owner,
            )
        else:
            drained = self.loop.drain(
                Mode.REDRIVE,
                breaker,
                limit=limit,
                remaining_ms=remaining_ms,
                writer=writer,
                halt=threading.Event(),
                wave=wave,
                owner=part.owner,
            )
        tally = self._released(drained)
        part.ramp.full_rate = wave.at_full_rate
        verdicts = wave.verdicts
        outcome = RunOutcome(
            received=tally.received_judged,
            returned=tally.returned,
            errors=tally.errors,
            ok_verdicts=verdicts.ok,
            transient_verdicts=verdicts.transient,
        )
        after = circuit.end_redrive_run(drained.breaker, outcome, self.now(), settings.breaker)
        if after is not None:
            _, errors = writer.transition(drained.breaker, after)
            tally += Tally(errors=errors)
        return Step(tally, drained.breaker, drained.stop)

    def _probe(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Step:
        """The source queue's metrics first: a consumer seen failing since the breaker opened gets
        no canary, one seen deleting again closes it. Else a canary goes; with consumer verdicts
        the run waits a while for the kit's."""
        heard = self.judge.hear_metrics(Step(Tally(), breaker), part.writer, part.owner)
        if heard.breaker is not breaker:
            return heard
        drained = self._drain(Mode.PROBE, breaker, remaining_ms, part)
        step = Step(self._released(drained), drained.breaker, drained.stop)
        if drained.stop is not StopReason.CANARY_SENT or not self._expects_verdicts(breaker):
            return step
        out_of_time = lambda: self._out_of_time(remaining_ms)  # noqa: E731
        return self.judge.await_verdict(step, out_of_time, part.writer, part.owner)

    def _watch(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Step:
        """The canary's window is not over: only the consumer kit's verdict can say more now.
        The DLQ is not scanned: a failing canary cannot be back before its window ends."""
        return self.judge.hear(Step(Tally(), breaker), part.writer, part.owner)

    def _verdict(self, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Step:
        """The canary's window is over: its verdict from the kit or the metrics, else a scan that
        stops at it."""
        heard = self.judge.hear(Step(Tally(), breaker), part.writer, part.owner)
        if heard.breaker is not breaker:
            return heard
        drained = self._drain(Mode.VERDICT, breaker, remaining_ms, part)
        tally = self._released(drained)
        step = Step(tally, drained.breaker, drained.stop)
        if drained.breaker.state is not State.HALF_OPEN or tally.errors:
            return step
        return self.judge.after_scan(step, drained.canary_may_hide, part.writer)

    def _sweep_if_due(self, parts: list[Done], remaining_ms: Callable[[], int]) -> Tally:
        """The retention guard of runs that do not scan the DLQ (breaker OPEN, WATCH, re-drives held
        by the source backlog; with several sources, none of the parts scanned: a part that scans
        parks any source's expiring messages): when due, receive every message, park the expiring,
        give the rest back at once, re-drive nothing. Due every half of EXPIRY_MARGIN_SECONDS,
        recorded in the table."""
        if any(done.scanned for done in parts):
            return Tally()
        key, now, tally = self.settings.sweep_key, self.now(), Tally()
        first = parts[0]
        every_source = replace(first.part, owner=None, limit=self.settings.max_messages_per_run)
        try:
            if now < self.state.load_sweep_due(key) or self._out_of_time(remaining_ms):
                return tally
            drained = self._drain(Mode.SWEEP, first.passage.breaker, remaining_ms, every_source)
            tally = self._released(drained)
            if drained.stop is StopReason.DLQ_EMPTY:  # else unfinished: the next run sweeps again
                self.state.save_sweep_due(key, now + sweep_interval(self.settings.expiry_margin_seconds))
        except AwsCallError as exc:
            self.log.error("retention sweep failed", extra={"error": str(exc)})
            tally += Tally(errors=1)
        return tally

    # -- helpers -----------------------------------------------------------------------------

    def _drain(self, mode: Mode, breaker: Breaker, remaining_ms: Callable[[], int], part: Part) -> Drained:
        self.watch.heard_for(breaker)
        return self.loop.drain(
            mode,
            breaker,
            limit=part.limit,
            remaining_ms=remaining_ms,
            writer=part.writer,
            halt=threading.Event(),
            owner=part.owner,
        )

    def _released(self, drained: Drained) -> Tally:
        """The drain's tally, after giving back what it received but did not act on."""
        return drained.tally + Tally(errors=self.executor.release(drained.held))

    def _out_of_time(self, remaining_ms: Callable[[], int]) -> bool:
        return out_of_time(remaining_ms(), self.settings.time_margin_seconds)

    def _expects_verdicts(self, breaker: Breaker) -> bool:
        return expects_verdicts(breaker, self.settings.consumer_verdicts)

    def _slow_start(self, breaker: Breaker) -> SlowStart:
        """Probes that wait for the consumer kit's verdicts, when it is expected to report them;
        else the time ramp."""
        settings = self.settings
        return SlowStart(
            consumer_verdicts=self._expects_verdicts(breaker),
            verdict_wait_seconds=settings.verdict_wait_seconds,
            slow_start_seconds=settings.slow_start_seconds,
            max_rate=settings.max_redrives_per_second,
            breaker=settings.breaker,
        )
