"""One scheduled run of the re-driver: its phases, in order.

Each source's part of the run passes the gate (gate.py), then works through the steps its
breaker allows (steps.py: re-drive, probe, watch, judge the canary; drain.py drains the DLQ for
them). A run that scanned nothing owes the retention a sweep (sweep.py). A run that stopped on its
time budget or per-run limit with work left is followed at once by another (continuation.py;
``RunReport.continue_with``). Every run that ran (paused ones too) adds its summary to the run
history (history.py). A DLQ shared by several sources is handled one source at a time, each part
under that source's own breaker (decide/fairness.py says which goes first). The run talks to AWS
only through the ports it is given (adapters/ports.py). It deletes a DLQ message only after the
message was sent somewhere else and the send succeeded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqs_redriver.protocol.keys import breaker_key
from sqs_redriver.runtime.act.breaker_writer import BreakerWriter
from sqs_redriver.runtime.act.executor import Executor
from sqs_redriver.runtime.adapters.ports import RunRecords
from sqs_redriver.runtime.decide.fairness import turn_order
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.continuation import Resume
from sqs_redriver.runtime.model.report import RunReport, StopReason, combine
from sqs_redriver.runtime.run.canary_verdict import CanaryJudge
from sqs_redriver.runtime.run.consumer_watch import ConsumerWatch
from sqs_redriver.runtime.run.continuation import Continuations
from sqs_redriver.runtime.run.drain import Drainer
from sqs_redriver.runtime.run.gate import pass_gate, paused_by_operator
from sqs_redriver.runtime.run.history import record_in_history
from sqs_redriver.runtime.run.loop import BatchLoop
from sqs_redriver.runtime.run.part import Done, Part, SlowStartProgress
from sqs_redriver.runtime.run.steps import ModeSteps
from sqs_redriver.runtime.run.sweep import RetentionSweep
from sqs_redriver.runtime.settings import Settings


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
        sleep: Callable[[float], None],
        watch: ConsumerWatch,
    ) -> None:
        """Composed by ``sqs_redriver.runtime.wiring.compose_redriver``; ``watch`` reads the source
        queues' CloudWatch metrics once per run (the batch handler reads the same). Each phase gets
        the records it uses of ``state``."""
        self.settings = settings
        self.state = state
        self.log = logger
        self.clock = clock
        self.watch = watch
        drainer = Drainer(loop, executor, watch, parallel_batches=settings.parallel_batches)
        judge = CanaryJudge(settings, state=state, clock=clock, sleep=sleep, logger=logger, watch=watch)
        self.steps = ModeSteps(
            settings,
            verdicts=state,
            drainer=drainer,
            judge=judge,
            watch=watch,
            clock=clock,
            sleep=sleep,
            logger=logger,
        )
        self.sweep = RetentionSweep(settings, sweeps=state, drainer=drainer, clock=clock, logger=logger)
        self.continuations = Continuations(
            state, dlq_url=settings.dlq_url, max_continuations=settings.max_continuations, logger=logger
        )

    def now(self) -> int:
        return int(self.clock())

    def run(self, remaining_ms: Callable[[], int], resume: Resume | None = None) -> RunReport:
        """Do one run; ``remaining_ms`` is the Lambda context's time left, ``resume`` the
        continuation this run was started with (None for a scheduled tick). A DLQ shared by
        several sources is handled source by source, each under its own breaker. A run that ran
        (paused ones too) adds its summary to the run history."""
        started = self.clock()
        self.watch.begin_run()
        if resume is not None and not self.continuations.take(resume):
            self.log.info("continuation already taken: nothing to do", extra={"token": resume.token})
            breaker = self.state.load_breaker(self.settings.breaker_key)
            return RunReport(Mode.SKIP, breaker.state, stopped_because=StopReason.CONTINUATION_TAKEN)
        report = self._run(remaining_ms, resume)
        record_in_history(
            self.state,
            self.settings.runs_key,
            report,
            started=started,
            ended=self.clock(),
            continuation=resume is not None,
            source_queue_url=self.settings.source_queue_url,
            logger=self.log,
        )
        return report

    def release_continuation(self, resume: Resume) -> None:
        """Free the slot of a continuation that could not be started, so the next run may offer."""
        self.continuations.release(resume)

    def _run(self, remaining_ms: Callable[[], int], resume: Resume | None) -> RunReport:
        settings = self.settings
        full_rate = resume is not None and resume.full_rate
        paused = paused_by_operator(self.state, settings.pause_key, self.log)
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
            report = combine([done.report for done in parts], source_queue_url=urls[0])
        report = replace(report, tally=report.tally + self.sweep.sweep_if_due(parts, remaining_ms))
        return replace(report, continue_with=self.continuations.offer(report, resume))

    def _part(
        self, source: str | None, limit: int, remaining_ms: Callable[[], int], full_rate: bool, paused: bool
    ) -> Done:
        """The run's work under one breaker: ``source``'s (None: the only source's)."""
        key = breaker_key(source or self.settings.source_queue_url)
        writer = BreakerWriter(self.state, key, self.log)
        passage = pass_gate(self.state, writer, key, self.settings.breaker, self.now(), paused=paused)
        # Only a breaker CLOSED since the run before keeps its full rate: one that closes during
        # this run starts its re-drives slowly, whatever the other sources did.
        progress = SlowStartProgress(full_rate=full_rate and passage.mode is Mode.REDRIVE)
        part = Part(source, writer, progress, max(limit, 0))
        worked = self.steps.work(passage, part, remaining_ms)
        report = RunReport(
            mode=passage.mode,
            breaker_state=writer.last_state or passage.breaker.state,
            tally=worked.tally,
            stopped_because=worked.stop,
            breaker_transitions=list(writer.transitions),
            full_rate=part.slow_start.full_rate,
            source=source,
        )
        return Done(report, passage, part)
