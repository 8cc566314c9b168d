"""The batch loop of one part of a run in one mode, in parallel batches when re-driving, stopped by
the DLQ, the per-run limit, the time budget, back-pressure, the breaker, a large drain's check or an
AWS error; what it received but did not act on is given back at the end."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqs_redriver.core.breaker import Evidence, Mode
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime.batch import HandledBatch
from sqs_redriver.runtime.budget import backlog_check_due, batch_size, limit_reached, out_of_time
from sqs_redriver.runtime.report import StopReason, Tally
from sqs_redriver.runtime.workers import Check, drains_in_workers, looks_for_drain

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sqs_redriver.core.breaker import Breaker, BreakerWriter
    from sqs_redriver.runtime.batch import BatchHandler, Executor
    from sqs_redriver.runtime.consumer_health import ConsumerWatch
    from sqs_redriver.runtime.ports import Queue, Target
    from sqs_redriver.runtime.run import Part
    from sqs_redriver.runtime.settings import Settings
    from sqs_redriver.runtime.slow_start import SlowStart
    from sqs_redriver.runtime.source_growth import GrowthWatch
    from sqs_redriver.runtime.workers import Fleet


# The batch loop of a run (or of one of its parallel batches): receive, handle, until something says stop.


@dataclass(frozen=True)
class LoopResult:
    tally: Tally
    breaker: Breaker  # as this loop left it
    stop: StopReason
    held: dict[str, str] = field(default_factory=dict)  # DLQ MessageId -> receipt handle
    canary_may_hide: bool = False


@dataclass
class _Loop:
    """One loop's terms (mode, limit, time, breaker writer, halt, slow start, source, large drain)
    and its progress."""

    mode: Mode
    limit: int
    remaining_ms: Callable[[], int]
    writer: BreakerWriter
    halt: threading.Event
    slow_start: SlowStart | None
    source: str | None
    fleet: Fleet | None  # the large drain this run is a worker of
    breaker: Breaker  # as this loop left it so far
    growth: GrowthWatch | None = None  # its source's growth, for a large backlog without the kit
    tally: Tally = field(default_factory=Tally)
    held: dict[str, str] = field(default_factory=dict)  # DLQ MessageId -> receipt handle
    may_hide: bool = False
    looked_for_drain: bool = False  # the DLQ's depth was read for a large drain (workers.py)

    def add(self, handled: HandledBatch) -> None:
        """What a batch handled adds up to."""
        self.tally += handled.tally
        self.breaker = handled.breaker
        self.held.update((t.message_id, t.receipt_handle) for t in handled.leave)
        self.may_hide |= handled.canary_may_hide


class BatchLoop:
    """Takes DLQ batches for one part of a run and hands each to the batch handler, in
    ``PARALLEL_BATCHES`` threads when re-driving; what it received but did not act on is given
    back before it returns."""

    def __init__(
        self,
        *,
        dlq: Queue,
        sources: Sequence[Target],
        handler: BatchHandler,
        executor: Executor,
        watch: ConsumerWatch,
        settings: Settings,
        logger: Any,
        growth: Callable[[], GrowthWatch] | None = None,
    ) -> None:
        self.growth = growth  # a run's watch of its source's growth (None: not watched)
        self.dlq = dlq
        self.sources = sources
        self.handler = handler
        self.executor = executor
        self.watch = watch
        self.settings = settings
        self.log = logger

    def run(
        self,
        mode: Mode,
        breaker: Breaker,
        part: Part,
        remaining_ms: Callable[[], int],
        slow_start: SlowStart | None = None,
        *,
        share: tuple[threading.Event, int] | None = None,
        growth: GrowthWatch | None = None,
    ) -> LoopResult:
        """Take batches until the DLQ is empty, the limit or the time is reached, back-pressure
        holds, the breaker opens, AWS fails or another thread halts the run. In REDRIVE mode the
        ``slow_start`` paces the batches and may trip the breaker on the consumer's verdicts.
        With ``part.source`` (a shared DLQ, a breaker per source) only that source's messages are
        acted on and its queue alone gives back-pressure; the others' are held and given back.
        ``share``: the halt event and share of the limit of one of several parallel threads, and
        ``growth`` the run's watch of its source they share."""
        if share is None:
            self.watch.heard_for(breaker)  # read before any thread starts: they share it
            growth = self._growth_watch(mode, part)
            if mode is Mode.REDRIVE and self.settings.parallel_batches > 1:
                parallel = run_in_parallel(self, breaker, part, remaining_ms, slow_start, growth)
                return self._given_back(parallel)
        halt, limit = share or (threading.Event(), part.limit)
        loop = _Loop(
            mode, limit, remaining_ms, part.writer, halt, slow_start, part.source, part.fleet, breaker, growth
        )
        stop = StopReason.NONE
        while not stop:
            stop = StopReason.HALTED if halt.is_set() else self._stop_before_batch(loop)
            if not stop:
                stop = self._batch(loop)
        if stop.stops_the_run:
            halt.set()  # the breaker opened, AWS failed, time or back-pressure: every thread stops
        drained = LoopResult(loop.tally, loop.breaker, stop, loop.held, loop.may_hide)
        return drained if share is not None else self._given_back(drained)

    def _growth_watch(self, mode: Mode, part: Part) -> GrowthWatch | None:
        """A chain's re-drives watch their source's growth (runtime/source_growth.py); a drain's
        workers, probes and scans do not."""
        if self.growth is None or mode is not Mode.REDRIVE or part.fleet is not None:
            return None
        return self.growth().begin()

    def _given_back(self, drained: LoopResult) -> LoopResult:
        """Give back what the loop received but did not act on; its errors join the tally."""
        released = Tally(errors=self.executor.release(drained.held))
        return replace(drained, tally=drained.tally + released, held={})

    def _batch(self, loop: _Loop) -> StopReason:
        """Take and handle one batch, as large as the slow start admits (when there is one); the
        reason to stop after it (NONE: go on)."""
        slow_start, room, tag = loop.slow_start, batch_size(loop.tally.received, loop.limit), None
        admitted = redriven = 0
        try:
            if slow_start is not None:
                admission = slow_start.admit(
                    lambda: loop.halt.is_set() or self._out_of_time(loop.remaining_ms)
                )
                admitted = admission.room
                if admission.trip:
                    return self._trip(loop)
                if not admission.room:
                    return StopReason.HALTED if loop.halt.is_set() else StopReason.TIME_BUDGET
                room, tag = min(room, admission.room), admission.tag
            batch = self.dlq.receive(
                room,
                wait_seconds=self.settings.receive_wait_seconds,
                visibility_timeout=self.settings.dlq_visibility_timeout_seconds,
            )
            loop.tally += Tally(received=len(batch))
            if not batch:
                return StopReason.DLQ_EMPTY
            planned = self.handler.plan(
                batch,
                loop.mode,
                loop.breaker,
                loop.tally,
                loop.writer,
                tag,
                loop.source,
                drain=loop.fleet is not None or (loop.growth is not None and loop.growth.large),
            )
            if isinstance(planned, HandledBatch):  # stopped before anything was sent
                handled = planned
            else:
                executed = self.executor.execute(planned.plan, planned.now)
                handled = self.handler.settle(planned, executed, loop.writer)
            redriven = handled.tally.redriven
        except AwsCallError as exc:
            self.log.error("run stopped by an AWS error", extra={"error": str(exc)})
            loop.tally += Tally(errors=1)
            return StopReason.AWS_ERROR
        finally:
            if slow_start is not None and admitted:
                slow_start.settle(admitted, redriven)
        loop.add(handled)
        return handled.stop

    def _trip(self, loop: _Loop) -> StopReason:
        """The consumer kit's verdicts say the consumer is broken: open the breaker."""
        self.log.warning("the consumer kit's verdicts say the consumer is broken: opening the circuit")
        opened = loop.breaker.opened(int(self.handler.clock()), Evidence.VERDICTS)
        loop.breaker, errors = loop.writer.transition(loop.breaker, opened)
        loop.tally += Tally(errors=errors)
        return StopReason.BREAKER_OPENED

    def _stop_before_batch(self, loop: _Loop) -> StopReason:
        if limit_reached(loop.tally.received, loop.limit):
            return StopReason.PER_RUN_LIMIT
        if self._out_of_time(loop.remaining_ms):
            return StopReason.TIME_BUDGET
        if loop.mode is not Mode.REDRIVE:
            return StopReason.NONE
        if loop.fleet is not None:
            checked = self._fleet_check(loop)
            if checked.stop or checked.paced:  # the pace keeps the source's backlog down
                return checked.stop
        if self._source_backlogged(loop.tally.received, loop.source):
            return StopReason.SOURCE_BACKLOG
        if loop.growth is not None and loop.growth.stops(loop.tally.redriven):
            return StopReason.SOURCE_BACKLOG
        if self._large_backlog(loop):
            return StopReason.LARGE_BACKLOG
        return StopReason.NONE

    def _large_backlog(self, loop: _Loop) -> bool:
        """A chain's run at full rate that finds FAN_OUT_BACKLOG in the DLQ stops there: its
        continuation starts the drain now rather than at the end of its time budget. Read once a
        loop; an unknown depth lets the run go on (its end looks again)."""
        at_full_rate = loop.slow_start is None or loop.slow_start.at_full_rate
        if not looks_for_drain(
            drains=drains_in_workers(self.settings),
            in_drain=loop.fleet is not None,
            at_full_rate=at_full_rate,
            redriven=loop.tally.redriven,
            looked=loop.looked_for_drain,
        ):
            return False
        loop.looked_for_drain = True
        try:
            left = self.dlq.backlog()
        except AwsCallError as exc:
            self.log.warning("DLQ depth unknown: the run goes on", extra={"error": str(exc)})
            return False
        if left < self.settings.fan_out_backlog:
            return False
        self.log.info("large backlog: the run stops for its continuation to drain it", extra={"left": left})
        return True

    def _fleet_check(self, loop: _Loop) -> Check:
        """A large drain's check before a batch (workers.py), once the batch's share of the pace is
        waited for (what it sends was checked just before); the verdicts it read, judged (a worker
        that hears its consumer fail opens the breaker). An AWS error stops the run as one in a
        batch would."""
        assert loop.fleet is not None
        slow_start = loop.slow_start
        at_full_rate = slow_start is None or slow_start.at_full_rate
        judged = slow_start.judged_key if slow_start is not None else None
        try:
            loop.fleet.limiter.prepay(SQS_MAX_BATCH_SIZE)
            checked = loop.fleet.check(loop.writer.key, at_full_rate=at_full_rate, verdict_key=judged)
        except AwsCallError as exc:
            self.log.error("run stopped by an AWS error", extra={"error": str(exc)})
            loop.tally += Tally(errors=1)
            return Check(StopReason.AWS_ERROR)
        if checked.breaker is not None and checked.breaker.version > loop.breaker.version:
            # another run wrote it since (a worker's view of what came back, a pace's neighbour):
            # the run goes on from the record as it stands, not a write doomed to conflict
            loop.breaker = checked.breaker
        if checked.verdicts is not None and slow_start is not None and slow_start.heard(checked.verdicts):
            return Check(self._trip(loop))
        return checked

    def _out_of_time(self, remaining_ms: Callable[[], int]) -> bool:
        return out_of_time(remaining_ms(), self.settings.time_margin_seconds)

    def _source_backlogged(self, received: int, source: str | None) -> bool:
        """Back-pressure: is a source queue's backlog (``source``'s, when given) above the limit?"""
        limit = self.settings.source_backlog_limit
        if not backlog_check_due(received, limit):
            return False
        for queue in self.sources:
            if source is not None and queue.url != source:
                continue
            try:
                backlog = queue.backlog()
            except AwsCallError as exc:
                # Unknown backlog: go on, the rate limit still holds (a missing queue is parked).
                self.log.warning("source backlog unknown", extra={"queue": queue.url, "error": str(exc)})
                continue
            if backlog > limit:
                self.log.info(
                    "source backlog above the limit: re-drives wait",
                    extra={"queue": queue.url, "backlog": backlog},
                )
                return True
        return False


# REDRIVE with several batches in flight at once, so the rate limit is reachable at real AWS
# latency. SQS hands each message to one receive, the breaker writes are conditional, and the
# threads share the client, the rate limit and the run's limit (a share each).


def run_in_parallel(
    loop: BatchLoop,
    breaker: Breaker,
    part: Part,
    remaining_ms: Callable[[], int],
    slow_start: SlowStart | None,
    growth: GrowthWatch | None = None,
) -> LoopResult:
    """Each thread keeps its own tally and breaker copy, merged at the end. When one opens the
    breaker, fails on AWS, meets the time budget or back-pressure, or dies, all stop before their
    next batch."""
    threads = loop.settings.parallel_batches
    halt = threading.Event()
    share = -(-part.limit // threads)

    def work() -> LoopResult:
        try:
            return loop.run(
                Mode.REDRIVE, breaker, part, remaining_ms, slow_start, share=(halt, share), growth=growth
            )
        except BaseException:
            halt.set()  # this thread died: the others stop before their next batch
            raise

    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(work) for _ in range(threads)]
        results = [future.result() for future in futures]
    return merge(results)


def merge(results: list[LoopResult]) -> LoopResult:
    """The run's result from its threads': the first reason that is not the end of a share, and
    the breaker record with the highest version."""
    tally = Tally()
    held: dict[str, str] = {}
    for result in results:
        tally += result.tally
        held.update(result.held)
    reasons = [r.stop for r in results]
    stop = next((r for r in reasons if r not in (StopReason.DLQ_EMPTY, StopReason.HALTED)), reasons[0])
    return LoopResult(
        tally=tally,
        breaker=max((r.breaker for r in results), key=lambda b: b.version),
        stop=stop,
        held=held,
        canary_may_hide=any(r.canary_may_hide for r in results),
    )
