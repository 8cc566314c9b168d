"""A large drain in simulated time, at the scale of a million messages: the re-driver's own rules
over a model of SQS, Lambda and the consumer that counts batches, not messages.

Why a model: the moto world (local_aws.simulation) costs about 70 ms of wall time a message, so a
million would take a day. What is the re-driver's here is its code, called as the runtime calls it:
the pace (``next_pace``, ``starting_pace``, ``resumed``), the width (``workers_wanted``), the slow
start's trial and its check of the verdicts since the last read (``judge_trial``,
``judge_recent``, ``time_allowance``), the breaker (``begin_run``, ``canary_passed``) and when a
run goes on (``continues``). What is modelled, and how:

- **the workers**: the chain (slot 0) and the workers a pace step fans out to, each a run of at most
  the function's time budget (timeout less the margin) or MAX_MESSAGES_PER_RUN, followed by its
  continuation ``CONTINUATION_GAP_SECONDS`` later; a new worker starts ``WORKER_START_SECONDS`` after
  the fan-out invokes it. A worker moves its share of the pace (its token bucket) in batches of 10,
  at most ``worker_rate`` a second (AWS's latency and the CPU of the function's memory: the CPU a
  message costs, measured by bench.worker_cpu), checks the breaker, the drain's record and its
  run's verdicts before each batch and stops at the first batch after the breaker opened or its
  slot left the width. A drain fans out only with the kit (``fans_out``);
- **SQS**: queues of cohorts (messages sent together, with their receive count and send time);
  a received message is invisible for the source queue's visibility timeout; the one received
  ``maxReceiveCount`` times goes to the DLQ;
- **the consumer**: a Lambda function of ``concurrency`` behind an SQS event source mapping. Its
  pollers scale as AWS documents (``poller_ramp``): five concurrent batches at first, up to 300
  more a minute while messages stay available after they took theirs, at most 1,000 (without
  ``poller_ramp``, they match the concurrency from the start). A poller takes a batch of up to 10
  and invokes the function, which handles its messages one after another, ``seconds_per_batch``
  the batch. In an outage every message handled fails, those of invocations already running
  included; with the consumer kit a re-driven message's transient failure is reported at once
  (its successes at the batch's end), and a drain's re-drive goes back to the DLQ at it. Without
  the kit a failed message comes back after the visibility timeout, one receive older, until
  maxReceiveCount sends it to the DLQ. A backlog of more than a full concurrency's worth of
  batches that stood for ``THROTTLE_AFTER_SECONDS`` has made the pollers outgrow the function,
  and from then on ``POLLER_STEP`` batches every ``POLLER_PERIOD_SECONDS`` are received by pollers
  over the concurrency and throttled (``throttled``): they come back after the visibility
  timeout, one receive older (the second DLQ wave a flooded consumer sends).

Time moves in steps of ``STEP_SECONDS``. Requests are counted per AWS operation as the runtime makes
them (bench.million prices them)."""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqs_redriver.core.breaker import (
    Breaker,
    Canary,
    Evidence,
    Mode,
    State,
    begin_run,
    canary_passed,
    with_canary,
)
from sqs_redriver.core.source_growth import Baseline, judge_growth
from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.protocol.settings import fans_out
from sqs_redriver.runtime.budget import BACKLOG_CHECK_EVERY
from sqs_redriver.runtime.continuation import continues
from sqs_redriver.runtime.pace import (
    CONTROL_SECONDS,
    Pace,
    PaceLimits,
    next_pace,
    resumed,
    stalled,
    starting_pace,
)
from sqs_redriver.runtime.report import RunReport, StopReason, Tally
from sqs_redriver.runtime.slow_start import VERDICT_CHECK_EVERY, judge_recent, judge_trial, time_allowance
from sqs_redriver.runtime.workers import looks_for_drain, workers_wanted

if TYPE_CHECKING:
    from sqs_redriver.runtime.settings import Settings

STEP_SECONDS = 0.05
LATENCY_BOUND_RATE = 230.0  # messages a second one run moves at 20 ms an AWS call (make bench)
MB_PER_VCPU = 1769  # Lambda: one vCPU at this much memory
WORKER_START_SECONDS = 1.0  # an asynchronous Invoke and a cold start
CONTINUATION_GAP_SECONDS = 1.0  # a run's continuation starts about a second after it returned
POLLER_STEP = 50  # AWS: up to 300 more concurrent invocations a minute...
POLLER_PERIOD_SECONDS = 10  # ... added every few seconds while messages stay available
FIRST_POLLERS = 5  # AWS: an SQS event source mapping starts with five concurrent batches...
POLLERS_PER_SECOND = 300 / 60  # ... and adds up to 300 a minute while messages stay available
MAX_POLLERS = 1000  # ... up to 1,000 batches at once
THROTTLE_AFTER_SECONDS = 60
# The CPU one re-drive costs a worker, measured by bench.worker_cpu (BENCHMARKS.md); bench.million
# measures it again and passes it in.
MEASURED_CPU_MS_PER_MSG = 1.04
FIRST_STEP_SECONDS = 45  # a first re-drive's DelaySeconds: BASE_DELAY_SECONDS 60, equal jitter


def worker_rate(memory_mb: int, cpu_ms_per_msg: float) -> float:
    """What one worker moves a second: AWS's latency bounds it (LATENCY_BOUND_RATE), and so does
    its CPU, a share of one vCPU by its memory over what a message costs it (bench.worker_cpu)."""
    return min(LATENCY_BOUND_RATE, 1000 * (memory_mb / MB_PER_VCPU) / cpu_ms_per_msg)


@dataclass(frozen=True)
class Consumer:
    """A consumer function behind its source queue's event source mapping: its capacity is
    ``concurrency`` × ``batch_size`` / ``seconds_per_batch`` messages a second."""

    concurrency: int
    seconds_per_batch: float = 1.0
    batch_size: int = SQS_MAX_BATCH_SIZE

    @property
    def capacity(self) -> float:
        return self.concurrency * self.batch_size / self.seconds_per_batch


@dataclass(frozen=True)
class Stack:
    """What the model takes from the deployed stack: the re-driver's settings, the source queue's
    visibility timeout and maxReceiveCount, the schedule and the function."""

    settings: Settings
    source_visibility_timeout: int
    max_receive_count: int
    schedule_seconds: int
    function_timeout: int
    memory_mb: int


@dataclass(frozen=True)
class Outage:
    """The consumer fails every invocation for ``minutes``, from when ``after_fraction`` of the
    messages were re-driven."""

    after_fraction: float
    minutes: float


@dataclass
class Figures:
    messages: int
    capacity: float
    drained_s: float | None = None  # from the first run to an empty DLQ, every message delivered
    peak_rate: float = 0.0  # re-drives a second, the highest second
    mean_rate: float = 0.0
    oldest_age_max_s: float = 0.0  # the source queue's oldest message, its highest age
    throttled: int = 0  # consumer invocations throttled
    stalls: int = 0  # pace steps that found the consumer stalled (every worker stopped)
    workers_max: int = 0
    delivered: float = 0.0
    deliveries: float = 0.0  # every delivery to the consumer, failed ones included
    outage_start_s: float | None = None
    deliveries_into_outage: float = 0.0  # deliveries of re-driven messages while the consumer was down
    in_progress_at_outage: float = 0.0  # re-driven messages delivered before it, handled in it
    backlog_at_outage: float = 0.0  # re-driven messages visible in the source queue when it began
    redrives_into_outage: float = 0.0  # re-drives sent while it was down
    breaker_opened_s: float | None = None
    resumed_after_s: float | None = None  # from the outage's end to re-drives again
    at_capacity_after_s: float | None = None  # ... to half the consumer's capacity again
    runs: int = 0
    run_seconds: float = 0.0
    requests: Counter[str] = field(default_factory=Counter)
    rate_by_minute: list[float] = field(default_factory=list)


@dataclass
class Cohort:
    count: float
    receives: int
    sent_at: float
    run: int  # the run that re-drove it (its verdicts go there)
    visible_at: float = 0.0
    back_at_first_failure: bool = False  # a drain's re-drive with the kit: its first failure returns


@dataclass
class Invocation:
    """A batch the function handles one message after another, from ``started`` to ``done_at``."""

    count: float
    started: float
    done_at: float
    cohort: Cohort
    handled: int = 0  # messages it has finished
    failed: float = 0.0  # of them, those that failed

    @property
    def slots(self) -> int:
        return max(1, math.ceil(self.count - 1e-9))


@dataclass
class Worker:
    slot: int
    run: int
    run_started: float
    starts_at: float  # when its (next) run begins
    generation: int = 0
    drain: bool = True  # a run of the drain: it checks before each batch and steps the pace
    moved_in_run: float = 0.0
    tokens: float = SQS_MAX_BATCH_SIZE
    stopping_at: float | None = None  # a batch ends: it stops there (breaker, width)
    checked_at_sent: float = 0.0
    verdicts_seen: VerdictCounts = field(default_factory=VerdictCounts)
    trial_sent: float = 0.0  # slow start's trial (the first run only)
    phase: str = "full"  # full, trial, timed
    looked_for_drain: bool = False  # it read the DLQ's depth for a large drain (looks_for_drain)
    # its watch of the source's growth (runtime/source_growth.GrowthWatch): None before its first
    # look, then whether it re-drives a large backlog; and when it looks next (messages moved)
    large: bool | None = None
    next_growth_look: float = 0.0


class MillionWorld:
    """One drain of ``messages`` DLQ messages into ``consumer``; ``run()`` moves it to the end."""

    def __init__(
        self,
        stack: Stack,
        consumer: Consumer,
        messages: int,
        *,
        outage: Outage | None = None,
        kit: bool = True,
        max_workers: int | None = None,
        cap_seconds: float = 8 * 3600,
        poller_ramp: bool = True,
        cpu_ms_per_msg: float = MEASURED_CPU_MS_PER_MSG,
    ) -> None:
        self.stack, self.consumer, self.kit, self.outage = stack, consumer, kit, outage
        settings = stack.settings
        self.max_workers = max_workers or settings.max_workers
        # runtime/workers.drains_in_workers: only a consumer that reports verdicts is fanned out to
        self.fans_out = fans_out(self.max_workers, dead_letter_sources=False, consumer_verdicts=kit)
        # runtime/source_growth.watches_growth: a consumer without verdicts, its chain watches its source
        self.watches_growth = not kit and bool(settings.source_backlog_limit)
        self.baseline: Baseline | None = None  # the source's BACKLOG# record
        self.cpu_ms_per_msg = cpu_ms_per_msg
        self.worker_rate = worker_rate(stack.memory_mb, cpu_ms_per_msg)
        self.poller_ramp = poller_ramp
        self.pollers = float(FIRST_POLLERS) if poller_ramp else float(consumer.concurrency)
        self.limits = PaceLimits(
            start_rate=settings.max_redrives_per_second,
            max_rate=settings.max_drain_rate,
            backlog_limit=settings.source_backlog_limit,
        )
        self.run_budget = stack.function_timeout - settings.time_margin_seconds
        self.cap_seconds = cap_seconds
        self.t = 0.0
        self.dlq = float(messages)
        self.dlq_returning: deque[tuple[float, float]] = deque()  # (at, count) coming back to the DLQ
        self.visible: deque[Cohort] = deque()
        self.invisible: list[Cohort] = []  # received, failed or throttled: back at visible_at
        self.running: list[Invocation] = []
        self.flooded_since: float | None = None  # since when the backlog stands over a concurrency's worth
        self.throttle_credit = 0.0
        self.verdicts: dict[int, VerdictCounts] = {}
        self._verdict_sums: dict[int, tuple[float, float]] = {}  # (ok, transient) of a run, unrounded
        self.breaker = Breaker()
        self.pace: Pace | None = None  # the drain's record: None until a chain starts one
        self.stepped_at = -math.inf
        self.visible_at_step = 0  # the source queue's visible messages at the last pace step
        self.width = 1
        self.workers: dict[int, Worker] = {}
        self.next_run_id = 0
        self.next_tick = 0.0
        self.outage_window: tuple[float, float] | None = None
        self.figures = Figures(messages=messages, capacity=consumer.capacity)
        self._moved_this_second = 0.0
        self._second = 0
        self._moved_this_minute = 0.0
        self._total_moved = 0.0

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> Figures:
        while self.t < self.cap_seconds and not self._done():
            self._tick_if_due()
            self._outage_if_due()
            self._consumer_step()
            self._workers_step()
            self._account_second()
            self.t = round(self.t + STEP_SECONDS, 6)
        return self._finish()

    def _done(self) -> bool:
        return self.dlq < 1 and not self.dlq_returning and not self._in_source()

    def _in_source(self) -> float:
        return (
            sum(c.count for c in self.visible)
            + sum(c.count for c in self.invisible)
            + sum(i.count for i in self.running)
        )

    # -- the schedule: ticks start a chain, or probe an open breaker -------------------------

    def _tick_if_due(self) -> None:
        if self.t < self.next_tick:
            return
        self.next_tick += self.stack.schedule_seconds
        if self.workers.get(0) is not None:
            # The chain holds its slot: the tick cannot start another chain. (In Lambda it would
            # still re-drive for its one run at the chain's rate beside the drain; left out.)
            return
        now = int(self.t)
        breaker, mode = begin_run(self.breaker, now, self.stack.settings.breaker)
        self.breaker = breaker
        self._count("GetItem", 2)  # breaker, pause
        if mode is Mode.PROBE:
            self._probe()
            breaker, mode = begin_run(self.breaker, now, self.stack.settings.breaker)
        if mode is Mode.REDRIVE and self.dlq >= 1:
            self._start_worker(0, first_run=True)

    def _probe(self) -> None:
        """Canaries one after another, each judged by the kit's verdict (the run waits for it):
        a healthy consumer closes the breaker after ``success_threshold``, a broken one reopens it."""
        policy = self.stack.settings.breaker
        while self.breaker.state is State.HALF_OPEN and self.dlq >= 1:
            self.dlq -= 1
            self._count("SendMessageBatch", 1)
            self.figures.deliveries += 1
            if self._consumer_down(self.t):
                self.figures.deliveries_into_outage += 1
                self.breaker = self.breaker.opened(int(self.t), Evidence.VERDICTS)
                self._to_dlq_later(1, self.t + self.consumer.seconds_per_batch)
                return
            self.figures.delivered += 1
            now = int(self.t)
            sent = with_canary(self.breaker, Canary(identities=("canary",), verdict_at=now, sent_at=now))
            self.breaker = canary_passed(sent, now, policy, Evidence.VERDICTS)

    # -- the workers ---------------------------------------------------------------------------

    def _start_worker(self, slot: int, *, first_run: bool = False, delay: float = 0.0) -> None:
        worker = Worker(slot=slot, run=self._new_run(), run_started=self.t + delay, starts_at=self.t + delay)
        if first_run:  # a tick's run: slow start first, and no part of a drain
            worker.drain = False
            worker.phase = "trial" if self.kit else "timed"
        self.workers[slot] = worker
        self.figures.runs += 1
        self._count("Invoke", 1 if slot else 0)

    def _new_run(self) -> int:
        self.next_run_id += 1
        return self.next_run_id

    def _workers_step(self) -> None:
        if self.pace is not None and self.t - self.stepped_at >= CONTROL_SECONDS and self._any_running():
            self._step_pace()
        for worker in list(self.workers.values()):
            if worker.starts_at > self.t:
                continue
            if worker.stopping_at is not None and self.t >= worker.stopping_at:
                self._end_run(worker, self._stopped_because())
                continue
            self._move(worker)
        self.figures.workers_max = max(self.figures.workers_max, self._running_count())

    def _stopped_because(self) -> StopReason:
        if self._open():
            return StopReason.BREAKER_OPENED
        return StopReason.SOURCE_BACKLOG if self.figures.stalls else StopReason.FEWER_WORKERS

    def _any_running(self) -> bool:
        return any(w.starts_at <= self.t and w.drain for w in self.workers.values())

    def _running_count(self) -> int:
        return sum(1 for w in self.workers.values() if w.starts_at <= self.t)

    def _open(self) -> bool:
        return self.breaker.state is not State.CLOSED

    def _share(self, worker: Worker) -> float:
        if self.pace is None or not worker.drain or worker.phase != "full":
            return float(self.stack.settings.max_redrives_per_second)
        return self.pace.rate / max(1, self.width)

    def _move(self, worker: Worker) -> None:
        """One step of a worker's run: take what its bucket, its slow start and the DLQ allow."""
        if self.t - worker.run_started >= self.run_budget or worker.moved_in_run >= self._per_run():
            self._end_run(worker, StopReason.TIME_BUDGET)
            return
        rate = min(self._share(worker), self.worker_rate)
        # a bucket of one batch, and what one step brings on top (a thread waits for its batch
        # exactly; a step of the model must not lose what arrived past the batch)
        worker.tokens = min(SQS_MAX_BATCH_SIZE + rate * STEP_SECONDS, worker.tokens + rate * STEP_SECONDS)
        room = worker.tokens
        if worker.phase == "timed":
            allowance = time_allowance(
                self.t - worker.run_started,
                max_rate=self.stack.settings.max_redrives_per_second,
                slow_start_seconds=self.stack.settings.slow_start_seconds,
            )
            room = min(room, max(0.0, allowance - worker.moved_in_run))
        elif worker.phase == "trial":
            room = self._trial_room(worker)
        if self.dlq < 1:
            self._end_run(worker, StopReason.DLQ_EMPTY)
            return
        batch = min(room, self.dlq, SQS_MAX_BATCH_SIZE)
        if batch <= 0:
            return
        if self._source_grew(worker):
            self._end_run(worker, StopReason.SOURCE_BACKLOG)
            return
        if self._large_backlog(worker):
            self._end_run(worker, StopReason.LARGE_BACKLOG)
            return
        checks = worker.stopping_at is None and self._checks_before_batches(worker)
        if checks and worker.phase == "full" and batch < min(SQS_MAX_BATCH_SIZE, self.dlq):
            return  # a worker waits for its batch's tokens, then checks, then sends the batch
        if checks:
            self._count("BatchGetItem", 1)  # breaker, pause, drain, and the run's verdicts
            if self.kit and worker.phase == "full" and self._heard_broken(worker):
                self._trip(worker)
                return
        worker.tokens -= batch
        self._redrive(worker, batch)

    def _undeleted(self) -> float:
        """The source queue's messages waiting and in flight (ApproximateNumberOfMessages and
        ...NotVisible): received ones, failed or throttled, count; a chain's delayed re-drives
        (never received yet) do not."""
        waiting = sum(c.count for c in self.visible) + sum(i.count for i in self.running)
        return waiting + sum(c.count for c in self.invisible if c.receives)

    def _source_grew(self, worker: Worker) -> bool:
        """A chain's look at its source's growth (GrowthWatch): its run reads the DLQ's depth before
        its first batch (a small DLQ: no look), then looks before it and every BACKLOG_CHECK_EVERY."""
        if not self.watches_growth or worker.drain or worker.moved_in_run < worker.next_growth_look:
            return False
        worker.next_growth_look = (worker.moved_in_run // BACKLOG_CHECK_EVERY + 1) * BACKLOG_CHECK_EVERY
        if worker.large is None:
            self._count("GetQueueAttributes", 1)
            worker.large = self.dlq >= self.stack.settings.fan_out_backlog
            self._count("GetQueueAttributes", 1 if worker.large else 0)  # the redrive window
        if not worker.large:
            return False
        self._count("GetQueueAttributes", 1)
        self._count("GetItem", 1)
        window = self.stack.source_visibility_timeout * self.stack.max_receive_count
        growth = judge_growth(
            self.baseline,
            round(self._undeleted()),
            now=int(self.t),
            window_seconds=window,
            limit=self.stack.settings.source_backlog_limit,
            sent=worker.moved_in_run > 0,
        )
        if growth.write is not None:
            self.baseline = growth.write
            self._count("PutItem", 1)
        return growth.stop

    def _large_backlog(self, worker: Worker) -> bool:
        """A chain's run at full rate reads the DLQ's depth once (BatchLoop._large_backlog): with
        FAN_OUT_BACKLOG left it stops, and its continuation starts the drain."""
        at_full_rate = worker.phase == "full" or (
            worker.phase == "timed" and self.t - worker.run_started >= self.stack.settings.slow_start_seconds
        )
        if not looks_for_drain(
            drains=self.fans_out,
            in_drain=self._checks_before_batches(worker),
            at_full_rate=at_full_rate,
            redriven=int(worker.moved_in_run),
            looked=worker.looked_for_drain,
        ):
            return False
        worker.looked_for_drain = True
        self._count("GetQueueAttributes", 1)
        return self.dlq >= self.stack.settings.fan_out_backlog

    def _checks_before_batches(self, worker: Worker) -> bool:
        return self.pace is not None and worker.drain

    def _per_run(self) -> int:
        return self.stack.settings.max_messages_per_run

    def _trial_room(self, worker: Worker) -> float:
        """The trial: three messages, then their verdicts decide (the first run with the kit)."""
        volume = self.stack.settings.breaker.minimum_volume
        if worker.trial_sent < volume:
            return min(worker.tokens, volume - worker.trial_sent)
        verdicts = self.verdicts.get(worker.run, VerdictCounts())
        result = judge_trial(verdicts, trial_sent=int(worker.trial_sent), policy=self.stack.settings.breaker)
        self._count("GetItem", STEP_SECONDS)  # one read a second while waiting
        if result.trip:
            self._trip(worker)
        elif result.phase is not None:
            worker.phase = "full" if result.phase.value == "full" else "trial"
            if worker.phase == "trial":
                worker.trial_sent = 0
        return 0.0

    def _redrive(self, worker: Worker, count: float) -> None:
        self.dlq -= count
        worker.moved_in_run += count
        if worker.phase == "trial":
            worker.trial_sent += count
        self._total_moved += count
        self._moved_this_second += count
        self._moved_this_minute += count
        cohort = Cohort(count, 0, self.t, worker.run, back_at_first_failure=self.kit and worker.drain)
        if worker.drain or worker.phase == "trial" or worker.large:
            self.visible.append(cohort)  # due: a backlog's messages waited their step out in the DLQ
        else:  # a chain's re-drive goes with its first backoff step: 30-60 s (equal jitter)
            cohort.visible_at = self.t + FIRST_STEP_SECONDS
            self.invisible.append(cohort)
        self._count("ReceiveMessage", count / SQS_MAX_BATCH_SIZE)
        self._count("SendMessageBatch", count / SQS_MAX_BATCH_SIZE)
        self._count("DeleteMessageBatch", count / SQS_MAX_BATCH_SIZE)
        if self._consumer_down(self.t):
            self.figures.redrives_into_outage += count
        if self.kit and worker.phase == "full" and not self._checks_before_batches(worker):
            self._check_verdicts(worker)

    def _check_verdicts(self, worker: Worker) -> None:
        """A run outside a drain: every VERDICT_CHECK_EVERY re-drives, the verdicts since the last
        read (slow start's FULL phase)."""
        if worker.moved_in_run - worker.checked_at_sent < VERDICT_CHECK_EVERY:
            return
        worker.checked_at_sent = worker.moved_in_run
        self._count("GetItem", 1)
        if self._heard_broken(worker):
            self._trip(worker)

    def _heard_broken(self, worker: Worker) -> bool:
        """The verdicts since the run's last read say its consumer broke (slow_start.judge_recent)."""
        now = self.verdicts.get(worker.run, VerdictCounts())
        broken = judge_recent(now, worker.verdicts_seen, policy=self.stack.settings.breaker)
        worker.verdicts_seen = now
        return broken

    def _trip(self, worker: Worker) -> None:
        """The worker opens the breaker; every worker stops before its next batch."""
        if not self._open():
            self.breaker = self.breaker.opened(int(self.t), Evidence.VERDICTS)
            self._count("PutItem", 1)
            self.figures.breaker_opened_s = self.figures.breaker_opened_s or self.t
        for other in self.workers.values():
            batch_seconds = SQS_MAX_BATCH_SIZE / max(self._share(other), 1.0)
            other.stopping_at = min(other.stopping_at or math.inf, self.t + min(batch_seconds, 1.0))
        worker.stopping_at = self.t

    def _end_run(self, worker: Worker, stop: StopReason) -> None:
        """A run ends: its continuation follows, in its slot, when the run would go on."""
        self.figures.run_seconds += self.t - worker.run_started
        self._count("PutItem", 2)  # run history, lease or continuation slot
        del self.workers[worker.slot]
        state = State.CLOSED if not self._open() else State.OPEN
        report = RunReport(
            Mode.REDRIVE, state, tally=Tally(redriven=int(worker.moved_in_run)), stopped_because=stop
        )
        limit = self.stack.settings.max_continuations
        goes_on = continues(report, generation=worker.generation, max_continuations=limit)
        if worker.slot >= self.width and worker.slot:
            goes_on = False
        if stop is StopReason.DLQ_EMPTY:
            self.pace = None if self.dlq < 1 and not self.dlq_returning else self.pace
            return
        if not goes_on:
            return
        if worker.slot == 0 and self.pace is None and self.fans_out:
            self._count("GetQueueAttributes", 1)
            if self.dlq >= self.stack.settings.fan_out_backlog:
                self.pace = starting_pace(self.limits)
                self.stepped_at = self.t - CONTROL_SECONDS
                self._count("PutItem", 1)
        follow = Worker(
            slot=worker.slot,
            run=self._new_run(),
            run_started=self.t + CONTINUATION_GAP_SECONDS,
            starts_at=self.t + CONTINUATION_GAP_SECONDS,
            generation=worker.generation + 1,
            drain=self.pace is not None,
        )
        self.workers[worker.slot] = follow
        self.figures.runs += 1
        self._count("Invoke", 1)

    def _step_pace(self) -> None:
        """A pace step, as Fleet.step takes it: the source queue's visible messages, the DLQ's; a
        consumer it finds stalled stops every worker (the chain's next run is the schedule's)."""
        assert self.pace is not None
        visible = int(sum(c.count for c in self.visible))
        limit = self.stack.settings.source_backlog_limit
        if stalled(self.visible_at_step, visible, rate=self.pace.rate, backlog_limit=limit):
            self.figures.stalls += 1
            for worker in self.workers.values():
                worker.stopping_at = self.t
        self.visible_at_step = visible
        pace = resumed(self.pace, stepped_at=int(self.stepped_at), now=int(self.t), limits=self.limits)
        self.pace = next_pace(pace, visible, self.limits)
        self.stepped_at = self.t
        self.width = workers_wanted(self.pace.rate, int(self.dlq), self.max_workers)
        self._count("GetQueueAttributes", 2)
        self._count("PutItem", 1 + max(0, self.width - 1))  # the record, an offer per slot
        for slot in range(1, self.width):
            if slot not in self.workers and not self._open():
                self._start_worker(slot, delay=WORKER_START_SECONDS)
        for worker in self.workers.values():
            if worker.slot >= self.width and worker.stopping_at is None:
                worker.stopping_at = self.t

    # -- the consumer --------------------------------------------------------------------------

    def _consumer_down(self, at: float) -> bool:
        window = self.outage_window
        return window is not None and window[0] <= at < window[1]

    def _outage_if_due(self) -> None:
        outage = self.outage
        if outage is None or self.outage_window is not None:
            return
        if self._total_moved >= outage.after_fraction * self.figures.messages:
            self.outage_window = (self.t, self.t + outage.minutes * 60)
            self.figures.outage_start_s = self.t
            self.figures.backlog_at_outage = sum(c.count for c in self.visible if c.run)
            self.figures.in_progress_at_outage = sum(
                i.count * (1 - i.handled / i.slots) for i in self.running if i.cohort.run
            )

    def _consumer_step(self) -> None:
        self._handle_invocations()
        self._come_back()
        self._poll()
        oldest = min(
            [c.sent_at for c in self.visible]
            + [c.sent_at for c in self.invisible]
            + [i.cohort.sent_at for i in self.running],
            default=self.t,
        )
        self.figures.oldest_age_max_s = max(self.figures.oldest_age_max_s, self.t - oldest)

    def _handle_invocations(self) -> None:
        """Each running invocation's messages handled by now, one after another: in an outage they
        fail (the kit reports a re-driven one's transient failure at once); at its end its
        successes are delivered (and reported), its failures go back."""
        still = []
        for invocation in self.running:
            self._handle_messages(invocation)
            if invocation.done_at > self.t + 1e-9:
                still.append(invocation)
                continue
            cohort = invocation.cohort
            ok = invocation.count - invocation.failed
            self.figures.delivered += ok
            self._add_verdicts(cohort, ok=ok)
            if invocation.failed <= 1e-9:
                continue
            if cohort.back_at_first_failure:  # the kit sends a drain's re-drive to the DLQ
                self._to_dlq_later(invocation.failed, self.t)
            else:
                back = Cohort(invocation.failed, cohort.receives, cohort.sent_at, cohort.run)
                back.visible_at = invocation.started + self._vt()
                self.invisible.append(back)
        self.running = still

    def _handle_messages(self, invocation: Invocation) -> None:
        slots = invocation.slots
        each = (invocation.done_at - invocation.started) / slots
        handled = min(slots, int((self.t - invocation.started) / each + 1e-9))
        for n in range(invocation.handled, handled):
            if self._consumer_down(invocation.started + (n + 1) * each - 1e-9):
                invocation.failed += invocation.count / slots
                self._add_verdicts(invocation.cohort, transient=invocation.count / slots)
        invocation.handled = handled

    def _add_verdicts(self, cohort: Cohort, *, ok: float = 0.0, transient: float = 0.0) -> None:
        """The kit's verdicts of a re-drive's first delivery, under the run that re-drove it."""
        if not (self.kit and cohort.run and cohort.receives == 1):
            return
        was_ok, was_transient = self._verdict_sums.get(cohort.run, (0.0, 0.0))
        sums = (was_ok + ok, was_transient + transient)
        self._verdict_sums[cohort.run] = sums
        self.verdicts[cohort.run] = VerdictCounts(round(sums[0]), round(sums[1]), 0)

    def _vt(self) -> float:
        return float(self.stack.source_visibility_timeout)

    def _come_back(self) -> None:
        back = [c for c in self.invisible if c.visible_at <= self.t]
        if back:
            self.invisible = [c for c in self.invisible if c.visible_at > self.t]
            for cohort in back:
                if cohort.receives >= self.stack.max_receive_count:
                    self._to_dlq_later(cohort.count, self.t)
                else:
                    self.visible.append(cohort)
        while self.dlq_returning and self.dlq_returning[0][0] <= self.t:
            self.dlq += self.dlq_returning.popleft()[1]

    def _to_dlq_later(self, count: float, at: float) -> None:
        self.dlq_returning.append((at, count))

    def _poll(self) -> None:
        """Idle pollers take batches, one invocation each, up to the function's concurrency. A
        backlog of more than a full concurrency's worth of batches that stood for THROTTLE_AFTER
        seconds has made Lambda add pollers past the concurrency: each second after, that many
        more batches are received and throttled."""
        consumer = self.consumer
        visible = sum(c.count for c in self.visible)
        visible_batches = math.ceil(visible / consumer.batch_size - 1e-9)
        concurrency = min(consumer.concurrency, int(self.pollers))
        starts = max(0, min(concurrency - len(self.running), visible_batches))
        for _ in range(starts):
            self._invoke(self._take(consumer.batch_size))
        left = visible - starts * consumer.batch_size
        if self.poller_ramp and left > 1e-9:  # messages still available: Lambda adds pollers
            self.pollers = min(MAX_POLLERS, self.pollers + POLLERS_PER_SECOND * STEP_SECONDS)
        full = consumer.concurrency * consumer.batch_size
        if left <= full or self.pollers < consumer.concurrency:
            self.flooded_since = None
            return
        self.flooded_since = self.t if self.flooded_since is None else self.flooded_since
        if self.t - self.flooded_since < THROTTLE_AFTER_SECONDS:
            return
        self.throttle_credit += POLLER_STEP * STEP_SECONDS / POLLER_PERIOD_SECONDS
        while self.throttle_credit >= 1 and self.visible:
            self.throttle_credit -= 1
            cohort = self._take(consumer.batch_size)
            cohort.visible_at = self.t + self._vt()
            self.invisible.append(cohort)
            self.figures.throttled += 1

    def _take(self, count: int) -> Cohort:
        """Up to ``count`` messages from the head of the visible ones, as one received cohort."""
        taken, receives, sent_at, run, back = 0.0, 0, self.t, 0, False
        while self.visible and taken < count - 1e-9:
            head = self.visible[0]
            part = min(head.count, count - taken)
            taken += part
            receives, sent_at, run = max(receives, head.receives), min(sent_at, head.sent_at), head.run
            back = head.back_at_first_failure
            head.count -= part
            if head.count <= 1e-9:
                self.visible.popleft()
        return Cohort(taken, receives + 1, sent_at, run, back_at_first_failure=back)

    def _invoke(self, cohort: Cohort) -> None:
        self.figures.deliveries += cohort.count
        if self._consumer_down(self.t) and cohort.run:
            self.figures.deliveries_into_outage += cohort.count
        done = self.t + self.consumer.seconds_per_batch
        self.running.append(Invocation(cohort.count, self.t, done, cohort))

    # -- figures -------------------------------------------------------------------------------

    def _count(self, operation: str, n: float) -> None:
        self.figures.requests[operation] += n  # type: ignore[assignment]

    def _account_second(self) -> None:
        second = int(self.t + 1e-9)
        if second != self._second:
            self.figures.peak_rate = max(self.figures.peak_rate, self._moved_this_second)
            self._moved_this_second = 0.0
            if second % 60 == 0:
                self.figures.rate_by_minute.append(self._moved_this_minute / 60)
                self._moved_this_minute = 0.0
            self._second = second
        self._resumed_after_outage()

    def _resumed_after_outage(self) -> None:
        window, figures = self.outage_window, self.figures
        if window is None or self.t < window[1]:
            return
        if figures.resumed_after_s is None and self._moved_this_second > 0 and not self._open():
            figures.resumed_after_s = self.t - window[1]
        busy = len(self.running) * self.consumer.batch_size / self.consumer.seconds_per_batch
        if figures.at_capacity_after_s is None and busy >= self.consumer.capacity / 2 and not self._open():
            figures.at_capacity_after_s = self.t - window[1]

    def _finish(self) -> Figures:
        figures = self.figures
        if self._done():
            figures.drained_s = self.t
        moving = figures.drained_s or self.t
        figures.mean_rate = self._total_moved / moving if moving else 0.0
        for worker in self.workers.values():
            figures.run_seconds += max(0.0, self.t - worker.run_started)
        return figures
