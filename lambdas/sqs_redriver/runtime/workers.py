"""Workers: a large drain fans out to parallel invocations of the re-driver's own function, each
draining the same DLQ at a share of one pace (runtime/pace.py).

A drain starts when a chain of runs (its continuations) still finds ``FAN_OUT_BACKLOG`` messages in
the DLQ, at a run's end or as soon as the run is at full rate (``looks_for_drain``: it stops there
for ``LARGE_BACKLOG``): the run writes the drain's record (``DRAIN#<DLQ URL>``). Every run of the
drain (the chain, slot 0, and the workers a fan-out added, slots 1 and up) is a run like any other:
it passes the breaker's gate and the operator's pause, and re-drives only while the breaker is
CLOSED. Before each batch it reads the breaker, the pause and the drain's record in one
BatchGetItem: a pause, a breaker that is no longer CLOSED, a source backlog the cut pace does not
bring down, or fewer workers wanted than its slot stop it there, and its token bucket takes its
share of the pace. Every ``CONTROL_SECONDS`` one of them (whichever writes the record first) steps
the pace from the consumer's source queue, reads how many messages are left, and offers the slots
the new width wants.

A worker's slot is a lease (``WORKER#<DLQ URL>#<n>``; the chain's is its continuation slot):
offered with a conditional write, so two fan-outs never start two workers in one slot; held by the
worker's run until the Lambda timeout and the margin, so a worker that dies frees it for the next
fan-out; passed to its continuation or released at its end. The function's reserved concurrency,
MAX_WORKERS + 1 (the workers and the schedule's tick), bounds every run at once."""

from __future__ import annotations

import math
import threading
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from sqs_redriver.core.breaker import State
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import DrainRecord, Resume
from sqs_redriver.protocol.keys import worker_key
from sqs_redriver.protocol.settings import fans_out
from sqs_redriver.runtime.pace import (
    CONTROL_SECONDS,
    Pace,
    PaceLimits,
    PacePhase,
    next_pace,
    resumed,
    stalled,
    starting_pace,
    worker_share,
)
from sqs_redriver.runtime.report import StopReason

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqs_redriver.core.breaker import Breaker
    from sqs_redriver.core.transfer import TokenBucket
    from sqs_redriver.protocol.failure import VerdictCounts
    from sqs_redriver.runtime.ports import DrainStore, Queue, Target
    from sqs_redriver.runtime.settings import Settings


# What one worker surely re-drives a second (PARALLEL_BATCHES batches in flight; about 230 measured
# at 20 ms an AWS call): the pace is split over enough workers that each can keep its share.
WORKER_RATE = 150
# No more workers than one for every this many messages left: the tail of a drain needs few.
MESSAGES_PER_WORKER = 2_000
# A worker's invocation waits in Lambda's queue at most max_event_age (10 minutes): an offer not
# taken by then was lost, and its slot is free again.
OFFER_SECONDS = 900


def workers_wanted(rate: float, messages_left: int, max_workers: int) -> int:
    """How many workers a drain runs: enough for the pace, few for a short tail, at most MAX_WORKERS."""
    by_rate = math.ceil(rate / WORKER_RATE)
    by_backlog = math.ceil(messages_left / MESSAGES_PER_WORKER)
    return max(1, min(max_workers, by_rate, by_backlog))


def looks_for_drain(*, drains: bool, in_drain: bool, at_full_rate: bool, redriven: int, looked: bool) -> bool:
    """Whether a run's loop reads the DLQ's depth before its next batch, to stop there for a large
    drain (``LARGE_BACKLOG``) rather than at its time budget: once, when a chain's run that is not
    part of a drain reaches full rate, having re-driven something (a run that moved nothing has
    no continuation), in a re-driver that drains in workers."""
    return drains and not in_drain and at_full_rate and redriven > 0 and not looked


def drains_in_workers(settings: Settings) -> bool:
    """Whether this re-driver drains large backlogs in workers (``protocol.settings.fans_out``)."""
    return fans_out(
        settings.max_workers,
        dead_letter_sources=bool(settings.dead_letter_sources),
        consumer_verdicts=settings.consumer_verdicts,
    )


def pace_limits(settings: Settings) -> PaceLimits:
    return PaceLimits(
        start_rate=settings.max_redrives_per_second,
        max_rate=settings.max_drain_rate,
        backlog_limit=settings.source_backlog_limit,
    )


def pace_of(record: DrainRecord) -> Pace:
    phase = PacePhase.STEADY if record.phase == PacePhase.STEADY.value else PacePhase.CLIMB
    return Pace(float(record.rate), phase, float(record.fell_behind_at))


def with_pace(record: DrainRecord, pace: Pace) -> DrainRecord:
    rate, fell_behind_at = max(1, round(pace.rate)), round(pace.fell_behind_at)
    return replace(record, rate=rate, phase=pace.phase.value, fell_behind_at=fell_behind_at)


def new_drain(settings: Settings, messages_left: int, now: int) -> DrainRecord:
    """The record of a drain that starts now with ``messages_left`` in the DLQ: its pace starts at
    the chain's rate and is stepped at its first batch."""
    pace = starting_pace(pace_limits(settings))
    return DrainRecord(
        rate=max(1, round(pace.rate)),
        phase=pace.phase.value,
        fell_behind_at=0,
        workers=1,
        messages_left=messages_left,
        stepped_at=now - CONTROL_SECONDS,
        started_at=now,
    )


class Check(NamedTuple):
    """A check before a batch: why the run stops there (NONE: it goes on), whether the batch goes
    at the drain's pace (else at the chain's rate and back-pressure), and the consumer kit's
    verdicts of the run's re-drives, when the check was asked to read them (slow start judges them)."""

    stop: StopReason
    paced: bool = False
    verdicts: VerdictCounts | None = None
    breaker: Breaker | None = None  # the breaker as read (CLOSED): newer than the run's, it is taken


class Fleet:
    """One run's place in a large drain: the check before each of its batches, the pace step when
    one is due, and the fan-out to the width the pace wants."""

    def __init__(self, drains: Drains, *, start_worker: Callable[[Resume], None] | None, slot: int) -> None:
        """A run in ``slot`` of one of ``drains``; ``start_worker`` starts a worker in a slot it won."""
        self.settings = drains.settings
        self.state = drains.state
        self.dlq = drains.dlq
        self.sources = drains.sources
        self.limiter = drains.limiter
        self.chain_rate = drains.chain_rate
        self.clock = drains.clock
        self.log = drains.log
        self.start_worker = start_worker
        self.slot = slot
        self.limits = pace_limits(self.settings)
        self._lock = threading.Lock()  # one pace step at a time among the run's parallel batches
        self.last: DrainRecord | None = None  # the drain as this run last read or wrote it

    def check(self, breaker_key: str, *, at_full_rate: bool, verdict_key: str | None = None) -> Check:
        """Before a batch: stop for a pause, a breaker no longer CLOSED, a consumer the last step
        found stalled, or a width below this slot (stepped first if due: a step may leave this slot
        out); else take this worker's share of the pace. With no drain going (it ended, or its record
        is gone) a worker stops and the chain goes at its own rate and back-pressure, as in its slow
        start (not ``paced``). With ``verdict_key`` the same read brings the kit's verdicts of the
        run's re-drives: a drain hears its consumer fail before every batch, at no extra request."""
        settings = self.settings
        view = self.state.load_fleet_view(breaker_key, settings.pause_key, settings.drain_key, verdict_key)
        if view.paused:
            return Check(StopReason.PAUSED)
        if view.breaker.state is not State.CLOSED:
            return Check(StopReason.BREAKER_OPENED)
        drain = self._newest(view.drain)
        if drain is None or not drain.going or not at_full_rate:
            self.limiter.set_rate(self.chain_rate)
            stop = (
                StopReason.FEWER_WORKERS
                if self.slot and (drain is None or not drain.going)
                else StopReason.NONE
            )
            return Check(stop, verdicts=view.verdicts, breaker=view.breaker)
        if self.clock() - drain.stepped_at >= CONTROL_SECONDS:
            drain = self.step(drain)
        if drain.stalled_at and drain.stalled_at == drain.stepped_at:
            return Check(StopReason.SOURCE_BACKLOG)
        if self.slot >= drain.workers:
            return Check(StopReason.FEWER_WORKERS)
        self.limiter.set_rate(worker_share(min(drain.rate, self.limits.max_rate), drain.workers))
        return Check(StopReason.NONE, paced=True, verdicts=view.verdicts, breaker=view.breaker)

    def _newest(self, read: DrainRecord | None) -> DrainRecord | None:
        """The drain as read, unless another of the run's parallel batches already knows a newer one."""
        with self._lock:
            if read is None or self.last is None or read.version >= self.last.version:
                self.last = read
            return self.last

    def step(self, drain: DrainRecord) -> DrainRecord:
        """Step the pace from the consumer's source queue and fan out to the width it wants; the
        drain as it stands after (another worker's step, when it wrote first). The run's parallel
        batches step it once: one that waited for another's step takes that one."""
        with self._lock:
            if self.last is not None and self.last.version > drain.version:
                return self.last
            self.last = self._step_now(drain)
            return self.last

    def _step_now(self, drain: DrainRecord) -> DrainRecord:
        now = int(self.clock())
        try:
            visible = max((queue.backlog() for queue in self.sources), default=0)
            left = self.dlq.backlog()
        except AwsCallError as exc:
            self.log.warning("pace not stepped: queue depth unknown", extra={"error": str(exc)})
            return drain
        pace = resumed(pace_of(drain), stepped_at=drain.stepped_at, now=now, limits=self.limits)
        pace = next_pace(pace, visible, self.limits)
        width = workers_wanted(pace.rate, left, self.settings.max_workers)
        limit = self.settings.source_backlog_limit
        recent = now - drain.stepped_at <= 2 * CONTROL_SECONDS  # the reading before is this pace's
        stuck = recent and stalled(drain.source_visible, visible, rate=drain.rate, backlog_limit=limit)
        looked = replace(
            drain,
            workers=width,
            messages_left=left,
            stepped_at=now,
            source_visible=visible,
            stalled_at=now if stuck else 0,
        )
        stepped = with_pace(looked, pace)
        if not self.state.save_drain(self.settings.drain_key, stepped, expected_version=drain.version):
            return self.state.load_drain(self.settings.drain_key) or drain
        self.log.info(
            "drain paced",
            extra={"rate": stepped.rate, "workers": width, "messages_left": left, "visible": visible},
        )
        self.fan_out(width, now)
        return replace(stepped, version=drain.version + 1)

    def fan_out(self, width: int, now: int) -> int:
        """Offer every slot below ``width`` that no worker holds, and start a worker in each one
        won; how many started."""
        if self.start_worker is None:
            return 0
        started = 0
        for slot in range(1, width):
            key, token = worker_key(self.settings.dlq_url, slot), uuid.uuid4().hex
            try:
                if not self.state.offer_worker(key, token, expires_at=now + OFFER_SECONDS):
                    continue
            except AwsCallError as exc:
                self.log.warning("slot not offered", extra={"slot": slot, "error": str(exc)})
                continue
            try:
                self.start_worker(Resume(token=token, generation=0, full_rate=True, slot=slot, drain=True))
            except AwsCallError as exc:
                self.log.warning("worker not started", extra={"slot": slot, "error": str(exc)})
                release_quietly(self.state, key, token, self.log)
                continue
            started += 1
        return started


class Drains:
    """A re-driver's large drains: when one starts and ends, a worker's lease from its run's start
    to its end, and the Fleet each run of a drain works in."""

    def __init__(
        self,
        settings: Settings,
        *,
        state: DrainStore,
        dlq: Queue,
        sources: list[Target],
        limiter: TokenBucket,
        clock: Callable[[], float],
        logger: Any,
    ) -> None:
        self.settings = settings
        self.state = state
        self.dlq = dlq
        self.sources = sources
        self.limiter = limiter
        self.chain_rate = limiter.rate  # MAX_REDRIVES_PER_SECOND, unless a test or bench set its own
        self.clock = clock
        self.log = logger

    def fleet(self, resume: Resume | None, start_worker: Callable[[Resume], None] | None) -> Fleet | None:
        """The Fleet of a run of a drain (None: the run is not part of one, and re-drives at the
        chain's rate, whatever share of a pace its execution environment last took)."""
        if resume is None or not resume.drain or not drains_in_workers(self.settings):
            self.limiter.set_rate(self.chain_rate)
            return None
        return Fleet(self, start_worker=start_worker, slot=resume.slot)

    def hold(self, resume: Resume) -> bool:
        """A worker's run holds its lease until the Lambda timeout and the margin have passed;
        False when the lease is not its own (a repeated or superseded start)."""
        expires_at = int(self.clock()) + self.settings.dlq_visibility_timeout_seconds
        return self.state.hold_worker(self._key(resume.slot), resume.token, expires_at=expires_at)

    def pass_on(self, resume: Resume, successor: Resume | None) -> Resume | None:
        """At a worker's end: hand its lease to ``successor`` (its continuation), or release it."""
        key = self._key(resume.slot)
        if successor is None:
            release_quietly(self.state, key, resume.token, self.log)
            return None
        expires_at = int(self.clock()) + OFFER_SECONDS
        try:
            passed = self.state.hold_worker(
                key, resume.token, expires_at=expires_at, successor=successor.token
            )
        except AwsCallError as exc:
            self.log.warning("worker lease not passed on: it expires", extra={"error": str(exc)})
            return None
        if not passed:
            self.log.warning("worker lease lost: no continuation", extra={"slot": resume.slot})
            return None
        return successor

    def release(self, resume: Resume) -> None:
        """Free the lease of a worker that could not be started."""
        release_quietly(self.state, self._key(resume.slot), resume.token, self.log)

    def joins_or_starts(self, stop: StopReason, *, generation: int) -> bool:
        """Whether a chain whose ``generation``-th run goes on (it stopped on ``stop``) is a run of
        a drain, while the DLQ holds FAN_OUT_BACKLOG: the drain going on (one nobody stepped for
        DRAIN_STALE_SECONDS starts its pace over), or one it starts. The DLQ's depth is read first:
        a smaller backlog costs one request. A chain's first run that met its per-run limit before
        its time does not look: it may have drained a DLQ that size exactly (the usual small one),
        and its continuation looks instead. One that stopped for ``LARGE_BACKLOG`` found that many
        at full rate already (``looks_for_drain``)."""
        if not drains_in_workers(self.settings):
            return False
        if generation == 0 and stop not in (StopReason.TIME_BUDGET, StopReason.LARGE_BACKLOG):
            return False
        try:
            left = self.dlq.backlog()
            if left < self.settings.fan_out_backlog:
                return False
            stored = self.state.load_drain(self.settings.drain_key)
            if stored is not None and stored.going:
                return True
            # None: over a record that could not be read (the next step would never write it)
            version = stored.version if stored is not None else None
            started = new_drain(self.settings, left, int(self.clock()))
            if not self.state.save_drain(self.settings.drain_key, started, expected_version=version):
                return False
        except AwsCallError as exc:
            self.log.warning("no drain joined or started: the chain goes on alone", extra={"error": str(exc)})
            return False
        self.log.info("large drain started", extra={"messages_left": left})
        return True

    def end(self, drain: DrainRecord | None) -> None:
        """The drain ends (its record says when): a run of it found the DLQ empty, or it was left
        behind."""
        if drain is None or not drain.going:
            return
        now = int(self.clock())
        try:
            for _ in range(2):  # once more over a pace step another worker wrote meanwhile
                finished = replace(drain, ended_at=now, messages_left=0, stepped_at=now)
                if self.state.save_drain(self.settings.drain_key, finished, expected_version=drain.version):
                    self.log.info("large drain ended: the DLQ is empty")
                    return
                drain = self.state.load_drain(self.settings.drain_key) or drain
        except AwsCallError as exc:
            self.log.warning("drain's end not recorded", extra={"error": str(exc)})

    def _key(self, slot: int) -> str:
        return worker_key(self.settings.dlq_url, slot)


def is_worker(resume: Resume | None) -> bool:
    """A run a fan-out started (slot 1 and up), not the chain's nor a tick's."""
    return resume is not None and resume.slot > 0


def release_quietly(state: DrainStore, key: str, token: str, logger: Any) -> None:
    """Free a lease; one that cannot be freed expires."""
    try:
        state.release_worker(key, token)
    except AwsCallError as exc:
        logger.warning("worker lease not freed: it expires", extra={"error": str(exc)})
