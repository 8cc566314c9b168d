"""One received batch: resolve identities, plan, move the breaker, execute, count canaries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.runtime.act.books import Executed
from sqs_redriver.runtime.act.breaker_writer import BreakerWriter
from sqs_redriver.runtime.act.decision_log import log_decision
from sqs_redriver.runtime.act.executor import Executor
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import GroupMarkStore, MessageStore, Queue
from sqs_redriver.runtime.decide import canary
from sqs_redriver.runtime.decide.breaker import Breaker, with_canary
from sqs_redriver.runtime.decide.identity import counted_in_table, screened, track
from sqs_redriver.runtime.decide.plan import BatchState, Planner
from sqs_redriver.runtime.decide.retention import Retention, guarded
from sqs_redriver.runtime.decide.routing import Routes
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.evidence import Evidence
from sqs_redriver.runtime.model.intents import BatchPlan, VerdictTag
from sqs_redriver.runtime.model.report import StopReason, Tally
from sqs_redriver.runtime.model.tracked import Tracked
from sqs_redriver.runtime.run.consumer_watch import ConsumerWatch


@dataclass(frozen=True)
class Handled:
    tally: Tally
    breaker: Breaker
    # Received but not acted on: given back at the end of the run.
    leave: tuple[Tracked, ...]
    canary_may_hide: bool
    stop: StopReason


class BatchHandler:
    def __init__(
        self,
        *,
        planner: Planner,
        executor: Executor,
        messages: MessageStore,
        group_marks: GroupMarkStore,
        sources: dict[str, Queue],
        routes: Routes,
        fifo: bool,
        logger: Any,
        clock: Callable[[], float],
        dlq: Queue,
        expiry_margin_seconds: int,
        watch: ConsumerWatch,
        consumer_verdicts: bool,
    ) -> None:
        self.planner = planner
        self.watch = watch
        self.consumer_verdicts = consumer_verdicts
        self.dlq = dlq
        self.expiry_margin_seconds = expiry_margin_seconds
        self.executor = executor
        self.messages = messages
        self.group_marks = group_marks
        self.sources = sources
        self.routes = routes
        self.fifo = fifo
        self.log = logger
        self.clock = clock

    def handle(
        self,
        batch: list[DlqMessage],
        mode: Mode,
        breaker: Breaker,
        so_far: Tally,
        writer: BreakerWriter,
        tag: VerdictTag | None = None,
        source: str | None = None,
    ) -> Handled:
        """Decide and act on one batch. ``so_far`` includes this batch's receive; ``tag`` tags its
        re-drives for the consumer kit's verdicts; ``source`` is the source whose part of the run
        this is (None: all of them). AWS errors of the planning reads propagate; those of acting
        end the batch with stop AWS_ERROR."""
        now = int(self.clock())
        breaker = writer.newest(breaker)
        batch = [screened(message, now) for message in batch]
        rejected = Tally(rejected_marks=self._log_rejected_marks(batch))
        counted = counted_in_table(batch)
        recorded = self.messages.load_marks(counted) if counted else {}
        tracking = track(batch, recorded, now)
        for duplicate in tracking.duplicates:
            log_decision(self.log, "duplicate in batch: left for a later run", duplicate)
        # An operator's retry and park marks, read only for a batch with consumer failures.
        fingerprints = {t.mark.failure.fingerprint for t in tracking.unique if t.mark.failure}
        groups = self.group_marks.load_group_marks(fingerprints) if fingerprints else {}

        breaker, errors = self._hear_returns(tracking.unique, breaker, writer, source)
        retention = self.retention()
        signals = self.watch.for_failures(breaker, tracking.unique)
        state = BatchState(mode, breaker, so_far, now, groups, tag, retention, source, signals)
        plan = self.planner.plan(tracking, state)
        if plan.open_breaker:
            if plan.canaries_back:
                log_decision(self.log, "canary came back: opening the circuit", plan.canaries_back[0])
            opened = breaker.opened(now, plan.evidence)
            if plan.canaries_back:
                opened = canary.silenced(breaker, opened, consumer_verdicts=self.consumer_verdicts)
            breaker, failed_write = writer.transition(breaker, opened)
            errors += failed_write
        elif plan.canaries:
            try:
                breaker, plan = self._claim_probe(plan, breaker, writer, now)
            except AwsCallError as exc:
                seen = rejected + Tally(returned=plan.returned, others=plan.others, unjudged=plan.unjudged)
                return self._stopped_by(exc, seen, breaker, plan, leave=())

        executed = self.executor.execute(plan, now)
        tally = (
            rejected
            + Tally(returned=plan.returned, others=plan.others, unjudged=plan.unjudged, errors=errors)
            + executed.tally
        )
        if plan.stop is StopReason.CANARY_SENT:
            breaker, tally = self._account_canaries(executed, breaker, tally, writer)
        if executed.failure:
            return self._stopped_by(executed.failure, tally, breaker, plan, leave=plan.leave)
        return Handled(tally, breaker, plan.leave, plan.canary_may_hide, plan.stop)

    def _hear_returns(
        self, batch: list[Tracked], breaker: Breaker, writer: BreakerWriter, source: str | None
    ) -> tuple[Breaker, int]:
        """Whether the batch's messages came back in the consumer kit's words (decide/canary.py,
        ``heard_in_returns``): the breaker judging the consumer as silent, or no longer, is written
        before the batch is planned, so the plan already reads the metrics. Returns the breaker and
        the errors met (0 or 1)."""
        own = [t for t in batch if source is None or self.routes.source_url(t) in (source, None)]
        rules = self.planner.rules
        after = canary.heard_in_returns(
            breaker, own, consumer_verdicts=self.consumer_verdicts, fifo=rules.fifo, policy=rules.breaker
        )
        if after is None:
            return breaker, 0
        return writer.transition(breaker, after)

    def _log_rejected_marks(self, batch: list[DlqMessage]) -> int:
        """A mark (or its consumer failure) that failed validation was left out: say which field.
        Returns how many were."""
        rejected = [(m, m.mark_rejection) for m in batch if m.mark_rejection is not None]
        for message, rejection in rejected:
            self.log.warning(
                "re-drive mark not valid: the message is treated as unmarked"
                if message.mark is None
                else "consumer failure in a re-drive mark not valid: left out",
                extra={
                    "message_id": message.message_id,
                    "field": rejection.field,
                    "problem": rejection.problem,
                },
            )
        return len(rejected)

    def retention(self) -> Retention:
        """The DLQ's retention (read once per execution environment) and the guard's margin."""
        retention = guarded(self.dlq.retention_seconds(), self.expiry_margin_seconds)
        if retention.margin_seconds != self.expiry_margin_seconds:
            self.log.error(
                "EXPIRY_MARGIN_SECONDS is not shorter than the DLQ's retention: using a quarter of it",
                extra={"margin": self.expiry_margin_seconds, "retention": retention.seconds},
            )
        return retention

    def _claim_probe(
        self, plan: BatchPlan, breaker: Breaker, writer: BreakerWriter, now: int
    ) -> tuple[Breaker, BatchPlan]:
        """Write the canaries into the breaker before sending them: of overlapping runs, only the
        one whose conditional write wins sends a canary. The window is read from the source queue."""
        source = self.sources[self.routes.source_url(plan.canaries[0]) or self.routes.urls[0]]
        probe = canary.claim(
            plan.canaries, window_seconds=source.redrive_window().seconds, now=now, fifo=self.fifo
        )
        claimed = with_canary(breaker, probe)
        if not writer.save(claimed, breaker):
            return breaker, plan.with_probe_taken()
        for tracked in plan.canaries:
            log_decision(self.log, "canary", tracked, verdict_at=probe.verdict_at)
        return claimed, plan.with_claimed_canaries(probe.verdict_key)

    def _account_canaries(
        self, executed: Executed, breaker: Breaker, tally: Tally, writer: BreakerWriter
    ) -> tuple[Breaker, Tally]:
        """A canary that could not be sent is a failure: the consumer's side is unknown, and an
        AWS error counts against the breaker like any other."""
        if executed.sent_to_source and not executed.failure:
            return breaker, tally + Tally(canaries=len(executed.sent_to_source))
        self.log.warning("canary could not be sent: opening the circuit")
        breaker, errors = writer.transition(breaker, breaker.opened(int(self.clock()), Evidence.ERRORS))
        return breaker, tally + Tally(errors=errors)

    def _stopped_by(
        self,
        error: AwsCallError | str,
        tally: Tally,
        breaker: Breaker,
        plan: BatchPlan,
        leave: tuple[Tracked, ...],
    ) -> Handled:
        self.log.error("run stopped by an AWS error", extra={"error": str(error)})
        return Handled(tally + Tally(errors=1), breaker, leave, plan.canary_may_hide, StopReason.AWS_ERROR)
