"""One received batch, in three steps the batch loop (batch_loop.py) takes side by side:
``BatchHandler.plan`` resolves identities, plans the batch (plan.py) and moves the breaker as the
plan says; ``Executor.execute`` carries the plan out (holds, re-drives, parkings, and the delete of
what arrived); ``BatchHandler.settle`` counts what that made of the batch (the canaries sent, an
AWS call that failed) and says whether the batch loop stops."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqs_redriver.core.breaker import Breaker, Evidence, with_canary
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.message import counted_in_table, screened, track
from sqs_redriver.core.transfer import Transfer
from sqs_redriver.runtime import canary, held
from sqs_redriver.runtime.plan import BatchState, Planner
from sqs_redriver.runtime.report import StopReason, Tally, log_decision
from sqs_redriver.runtime.retention import Retention, guarded

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from sqs_redriver.core.breaker import BreakerWriter, Mode
    from sqs_redriver.core.message import Tracked
    from sqs_redriver.core.table import GroupMark, HeldGroup
    from sqs_redriver.protocol.envelope import DlqMessage
    from sqs_redriver.runtime.consumer_health import ConsumerWatch
    from sqs_redriver.runtime.held import HeldGroups
    from sqs_redriver.runtime.parking import Parker
    from sqs_redriver.runtime.plan import BatchPlan, Hold, Park, VerdictTag
    from sqs_redriver.runtime.ports import GroupMarkStore, MessageStore, Queue, Target
    from sqs_redriver.runtime.redrive import RedriveSender
    from sqs_redriver.runtime.routing import Routes


# The books of one plan's execution, and what the execution returns.


@dataclass(frozen=True)
class Executed:
    tally: Tally
    sent_to_source: tuple[Tracked, ...] = ()
    # A whole AWS call failed; what did arrive was still deleted.
    failure: str | None = None
    # Delivered and failed at once: canaries a function probed synchronously answered with its error.
    failed_at_target: tuple[Tracked, ...] = ()


@dataclass
class ExecutionBooks:
    """Kept while one plan is carried out: the transfer out of the DLQ (what arrived, to delete),
    what was sent to a source, what the source refused for good (to park), and the counts."""

    now: int
    transfer: Transfer
    sent: list[Tracked] = field(default_factory=list)
    failed_at_target: list[Tracked] = field(default_factory=list)
    rejected: list[Park] = field(default_factory=list)
    redriven: int = 0
    parked: int = 0
    expiring: int = 0  # of the parked: by the retention guard
    unparkable: int = 0
    unarchived: int = 0
    errors: int = 0

    def result(self, failure: str | None) -> Executed:
        tally = Tally(
            redriven=self.redriven,
            parked=self.parked,
            expiring=self.expiring,
            unparkable=self.unparkable,
            unarchived=self.unarchived,
            errors=self.errors,
        )
        return Executed(tally, tuple(self.sent), failure, tuple(self.failed_at_target))


# Carry out a batch's plan: holds, re-drives, parkings, then delete what arrived.


class Executor:
    """Carries out batch plans (shared by parallel batches: it keeps no state of a batch)."""

    def __init__(self, *, dlq: Queue, redrives: RedriveSender, parker: Parker, logger: Any) -> None:
        self.dlq = dlq
        self.redrives = redrives
        self.parker = parker
        self.log = logger

    def execute(self, plan: BatchPlan, now: int) -> Executed:
        """Hold, re-drive, park, delete. An AWS call that fails as a whole ends the execution and is
        named in ``failure``; what arrived before it is deleted all the same."""
        try:
            self._hold(plan.hold)
        except AwsCallError as exc:
            return Executed(Tally(), failure=str(exc))
        books = ExecutionBooks(now, Transfer(self.dlq))
        failure = None
        try:
            try:
                redrive_error = self.redrives.send(plan.redrive, books)
                park_error = self.parker.park([*plan.park, *books.rejected], books)
                failure = redrive_error or park_error
            except AwsCallError as exc:
                failure = str(exc)
        finally:
            # Even when parking fails after the re-drives went out: what arrived leaves the DLQ.
            failure = self._delete_arrived(books) or failure
        return books.result(failure)

    def release(self, held: dict[str, str]) -> int:
        """Give back messages the run received but did not act on; return the errors met (0 or 1)."""
        if not held:
            return 0
        try:
            self.dlq.change_visibility({key: (handle, 0) for key, handle in held.items()})
        except AwsCallError as exc:
            # Not a loss: they become visible again when their visibility timeout ends.
            self.log.warning("could not release held messages", extra={"error": str(exc)})
            return 1
        return 0

    def _hold(self, holds: Sequence[Hold]) -> None:
        for hold in holds:
            log_decision(self.log, "backing off in the DLQ", hold.tracked, wait_seconds=hold.seconds)
        if holds:
            self.dlq.change_visibility(
                {h.tracked.message_id: (h.tracked.receipt_handle, h.seconds) for h in holds}
            )

    def _delete_arrived(self, books: ExecutionBooks) -> str | None:
        """Delete from the DLQ what arrived; return the error of a delete call that failed whole.
        A message whose delete failed will be seen again (a duplicate): logged, counted."""
        deleted = books.transfer.delete_arrived()
        if deleted.call_error:
            return deleted.call_error
        for key, failure in deleted.failed.items():
            books.errors += 1
            self.log.error(
                "delete from the DLQ failed: the message will be seen again (a duplicate)",
                extra={"message_id": key, "code": failure.code},
            )
        return None


@dataclass(frozen=True)
class PlannedBatch:
    """A batch decided, its breaker moved, ready to be carried out (``Executor.execute``)."""

    plan: BatchPlan
    breaker: Breaker
    now: int
    tally: Tally  # counted before acting: rejected marks, returns, failed breaker writes


@dataclass(frozen=True)
class HandledBatch:
    """One batch, planned and carried out: what the batch loop adds up and whether it stops."""

    tally: Tally
    breaker: Breaker
    # Received but not acted on: given back at the end of the run.
    leave: tuple[Tracked, ...]
    canary_may_hide: bool
    stop: StopReason


class BatchHandler:
    """Plans a batch before anything is sent, and settles it once the executor carried it out."""

    def __init__(
        self,
        *,
        planner: Planner,
        messages: MessageStore,
        group_marks: GroupMarkStore,
        sources: dict[str, Target],
        routes: Routes,
        fifo: bool,
        logger: Any,
        clock: Callable[[], float],
        dlq: Queue,
        expiry_margin_seconds: int,
        watch: ConsumerWatch,
        consumer_verdicts: bool,
        held_groups: HeldGroups | None = None,
    ) -> None:
        self.planner = planner
        self.held = held_groups
        self.watch = watch
        self.consumer_verdicts = consumer_verdicts
        self.dlq = dlq
        self.expiry_margin_seconds = expiry_margin_seconds
        self.messages = messages
        self.group_marks = group_marks
        self.sources = sources
        self.routes = routes
        self.fifo = fifo
        self.log = logger
        self.clock = clock

    def plan(
        self,
        batch: list[DlqMessage],
        mode: Mode,
        breaker: Breaker,
        so_far: Tally,
        writer: BreakerWriter,
        tag: VerdictTag | None = None,
        source: str | None = None,
        *,
        drain: bool = False,
    ) -> PlannedBatch | HandledBatch:
        """Decide one batch and move the breaker as the plan says, before anything is sent.
        ``so_far`` includes this batch's receive; ``tag`` tags its re-drives for the consumer kit's
        verdicts; ``source`` is the source whose part of the run this is (None: all of them);
        ``drain``: a batch of a large drain's worker. AWS
        errors of the planning reads propagate; a probe that could not be claimed ends the batch
        here, handled (stop AWS_ERROR)."""
        now = int(self.clock())
        breaker = writer.newest(breaker)
        batch = [screened(message, now) for message in batch]
        rejected = Tally(rejected_marks=self._log_rejected_marks(batch))
        counted = counted_in_table(batch)
        recorded = self.messages.load_marks(counted) if counted else {}
        tracking = track(batch, recorded, now)
        for duplicate in tracking.duplicates:
            log_decision(self.log, "duplicate in batch: left for a later run", duplicate)
        # An operator's retry and park marks, read only for a batch with consumer failures; the
        # held groups (held.py), once a run, for a batch with failures named transient: together.
        fingerprints = {t.mark.failure.fingerprint for t in tracking.unique if t.mark.failure}
        groups, held_groups = self._failure_groups(tracking.unique, fingerprints, now)

        breaker, errors = self._hear_returns(tracking.unique, breaker, writer, source)
        retention = self.retention()
        signals = self.watch.for_failures(breaker, tracking.unique)
        state = BatchState(
            mode, breaker, so_far, now, groups, tag, retention, source, signals, drain, held_groups
        )
        plan = self.planner.plan(tracking, state)
        if plan.held and self.held is not None:
            self.held.update([self._verdict_time(g, plan, now) for g in plan.held], now)
        seen = rejected + Tally(returned=plan.returned, others=plan.others, unjudged=plan.unjudged)
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
                return self._stopped_by(exc, seen, breaker, plan, leave=())
        return PlannedBatch(plan, breaker, now, seen + Tally(errors=errors))

    def settle(self, planned: PlannedBatch, executed: Executed, writer: BreakerWriter) -> HandledBatch:
        """What carrying out a planned batch made of it: its counts, the canaries it sent (one
        not sent opens the breaker), and why the batch loop stops after it, if it does."""
        plan, breaker = planned.plan, planned.breaker
        tally = planned.tally + executed.tally
        if plan.group_canaries:
            self._account_group_canaries(plan, executed, planned.now)
        if plan.stop is StopReason.CANARY_SENT:
            breaker, tally = self._account_canaries(executed, breaker, tally, writer)
        if executed.failure:
            return self._stopped_by(executed.failure, tally, breaker, plan, leave=plan.leave)
        return HandledBatch(tally, breaker, plan.leave, plan.canary_may_hide, plan.stop)

    def _failure_groups(
        self, batch: list[Tracked], fingerprints: set[str], now: int
    ) -> tuple[Mapping[str, GroupMark], Mapping[str, HeldGroup]]:
        """The operator's marks of the batch's fingerprints, and the held groups when a failure of
        the batch is named transient (not on FIFO); the held record is read with the marks, once
        a run."""
        named = self.held is not None and not self.fifo and any(held.failure_group(t) for t in batch)
        if not named or self.held is None:
            return (self.group_marks.load_group_marks(fingerprints) if fingerprints else {}), {}
        if self.held.loaded:
            marks = self.group_marks.load_group_marks(fingerprints) if fingerprints else {}
            return marks, self.held.current(now)
        marks, record = self.group_marks.load_failure_groups(fingerprints, self.held.key)
        return marks, self.held.current(now, record)

    def _verdict_time(self, group: HeldGroup, plan: BatchPlan, now: int) -> HeldGroup:
        """A held group's canary sent by this plan is judged after its source's canary window (at
        once, for a target whose answer is the verdict: the next batch)."""
        if not group.canary or group.sent_at != now or group.verdict_at:
            return group
        tracked = next(t for t in plan.group_canaries if t.mark.identity == group.canary)
        source = self.sources[self.routes.source_url(tracked) or self.routes.urls[0]]
        return replace(group, verdict_at=now + max(source.canary_window_seconds(), 1))

    def _account_group_canaries(self, plan: BatchPlan, executed: Executed, now: int) -> None:
        """A held group's canary that was not delivered: failed at once by its target (a failed
        canary), or not sent (the next a step later)."""
        assert self.held is not None, "only a plan with held groups has their canaries"
        sent = {t.message_id for t in executed.sent_to_source}
        failed = {t.message_id for t in executed.failed_at_target}
        canaries = {t.mark.identity: t for t in plan.group_canaries if t.message_id not in sent}
        current = self.held.known()
        changed = [
            held.not_sent(
                g, failed_at_target=canaries[g.canary].message_id in failed, now=now, rules=self.held.rules
            )
            for g in current.values()
            if g.held and g.canary in canaries and g.sent_at == now
        ]
        self.held.update(changed, now)

    def _hear_returns(
        self, batch: list[Tracked], breaker: Breaker, writer: BreakerWriter, source: str | None
    ) -> tuple[Breaker, int]:
        """Whether the batch's messages came back in the consumer kit's words (canary.py,
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
        one whose conditional write wins sends a canary. The window is the source's (its queue's
        redrive window; 0 for a target whose answer is the verdict)."""
        source = self.sources[self.routes.source_url(plan.canaries[0]) or self.routes.urls[0]]
        probe = canary.claim(
            plan.canaries, window_seconds=source.canary_window_seconds(), now=now, fifo=self.fifo
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
        AWS error counts against the breaker like any other. One the target answered with its error
        (a function probed synchronously) failed, as if it had come back at once."""
        if executed.failed_at_target:
            self.log.warning("the target failed the canary: opening the circuit")
            opened = breaker.opened(int(self.clock()), Evidence.RETURNS)
        elif executed.sent_to_source and not executed.failure:
            return breaker, tally + Tally(canaries=len(executed.sent_to_source))
        else:
            self.log.warning("canary could not be sent: opening the circuit")
            opened = breaker.opened(int(self.clock()), Evidence.ERRORS)
        breaker, errors = writer.transition(breaker, opened)
        return breaker, tally + Tally(canaries=len(executed.sent_to_source), errors=errors)

    def _stopped_by(
        self,
        error: AwsCallError | str,
        tally: Tally,
        breaker: Breaker,
        plan: BatchPlan,
        leave: tuple[Tracked, ...],
    ) -> HandledBatch:
        self.log.error("run stopped by an AWS error", extra={"error": str(error)})
        stop = StopReason.AWS_ERROR
        return HandledBatch(tally + Tally(errors=1), breaker, leave, plan.canary_may_hide, stop)
