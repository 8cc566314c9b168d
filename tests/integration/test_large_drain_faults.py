"""Faults in a large drain (issue 34): a chain of runs starts a drain that fans out to workers; a
worker is lost between its send and its delete; a worker starts after its pace went stale; two runs
step the pace at once; an operator's pause and a breaker another worker opened stop every worker
mid-drain.

moto runs in process under one frozen clock (freezegun) that only the test and the runs' own waits
move, so a lease expires and a received message shows again when that clock says, as in AWS. Each
run is its own invocation, composed as in Lambda (``wiring.compose_redriver``, through
``local_aws.compose``; its rate limiter on the same clock), and runs are played as Lambda starts
them: one at a time, or, where they must overlap, together in lockstep (tests/support/lockstep.py:
they take turns at every AWS call, the same way every time). The consumer takes the source queue
after every run.

The books of every case: each message of the DLQ reached the source queue, and more than once only
if a worker was lost between its send and its delete (then exactly the batch it sent); no slot ever
had two live runs, no more than MAX_WORKERS - 1 worker leases were held at any moment; every write
of the drain's record moved its version one on; and at the end the drain has ended, no lease or
continuation is held and the DLQ is empty. The figures are printed at the end of the session.
"""

from __future__ import annotations

import functools
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError
from freezegun import freeze_time
from moto import mock_aws

from local_aws.clients import ClientProxy
from local_aws.compose import local_redriver
from local_aws.queues import drain, queue_counts
from local_aws.server import moto_sqs_sped_up
from local_aws.simulated_time import SIM_EPOCH, UNFROZEN
from sqs_redriver.core.breaker import BreakerPolicy, Evidence, State
from sqs_redriver.core.table import DrainRecord, Pause, Resume, StateTable
from sqs_redriver.core.transfer import TokenBucket
from sqs_redriver.protocol.keys import RecordKind, worker_key
from sqs_redriver.protocol.limits import DRAIN_STALE_SECONDS, SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime import workers
from sqs_redriver.runtime.pace import CONTROL_SECONDS
from sqs_redriver.runtime.report import RunReport, StopReason
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.settings import Settings
from tests.support.aws import REMAINING, Aws, create_aws, make_settings
from tests.support.faults import FIGURES, Outcome, SimulatedCrash
from tests.support.lockstep import Lockstep

MAX_WORKERS = 4
FAN_OUT_BACKLOG = 50
PER_RUN = 20  # two batches: every run of the chain and of a worker continues
MESSAGES = 400
# A drain the size of a test: a worker for every 20 messages left (the product's: 2,000).
MESSAGES_PER_WORKER = 20
# The chain's rate and the drain's first pace: one worker's. The first pace step doubles it to two
# workers' (slot 1 starts), the second to four (slots 2 and 3).
START_RATE = workers.WORKER_RATE
MAX_RATE = 8 * workers.WORKER_RATE
HOLD = 120  # DLQ_VISIBILITY_TIMEOUT_SECONDS: a received message hides, and a worker holds its lease
RUN_SECONDS = 2  # a run of the scaled-down drain, with Lambda starting the next one
MOST_RUNS = 200  # a drain still going after this many runs is stuck


def now() -> int:
    return int(time.time())


def drain_settings(aws: Aws) -> Settings:
    return make_settings(
        aws,
        max_workers=MAX_WORKERS,
        fan_out_backlog=FAN_OUT_BACKLOG,
        max_messages_per_run=PER_RUN,
        max_redrives_per_second=START_RATE,
        max_drain_rate=MAX_RATE,
        dlq_visibility_timeout_seconds=HOLD,
        consumer_verdicts=True,  # a drain fans out only where failures are heard within seconds
        # What came back of a lost worker's batch must not open it: the breaker has tests of its own.
        breaker=BreakerPolicy(failure_threshold=100, minimum_volume=1000),
    )


@dataclass(frozen=True)
class DrainWrite:
    """One attempt to write the drain's record: the version it expected, whether it won, what it wrote."""

    expected: int
    won: bool
    record: dict[str, Any]

    def number(self, name: str) -> int:
        return int(self.record[name]["N"])


class TableBook:
    """What the runs wrote to the state table that a drain's books need: every attempt to write the
    drain's record, and the most worker leases held at any moment (counted after every lease write)."""

    def __init__(self, aws: Aws, settings: Settings) -> None:
        self.aws = aws
        self.drain_key = settings.drain_key
        self.drain_writes: list[DrainWrite] = []
        self.most_leases = 0

    def wrap(self, client: Any) -> Any:
        return ClientProxy(client, put_item=functools.partial(self._put_item, client))

    def _put_item(self, client: Any, **kwargs: Any) -> Any:
        item, key = kwargs["Item"], kwargs["Item"]["pk"]["S"]
        expected = int(kwargs.get("ExpressionAttributeValues", {}).get(":expected", {"N": "-1"})["N"])
        try:
            response = client.put_item(**kwargs)
        except ClientError as exc:
            if key == self.drain_key and exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                self.drain_writes.append(DrainWrite(expected, won=False, record=item))
            raise
        if key == self.drain_key:
            self.drain_writes.append(DrainWrite(expected, won=True, record=item))
        if key.startswith(RecordKind.WORKER.value):
            self.most_leases = max(self.most_leases, len(held_leases(self.aws)))
        return response

    def steps(self, since: int = 0) -> list[DrainWrite]:
        """The pace steps that won (not the drain's start nor its end), from the ``since``-th write on."""
        return [w for w in self.drain_writes[since:] if w.won and w.expected > 0 and not w.number("ended_at")]


def held_leases(aws: Aws) -> dict[str, dict[str, Any]]:
    """The worker leases in the state table that have not expired, by key."""
    at = now()
    pages = aws.dynamodb.get_paginator("scan").paginate(
        TableName=aws.table_name,
        FilterExpression="begins_with(pk, :worker)",
        ExpressionAttributeValues={":worker": {"S": RecordKind.WORKER.value}},
        ConsistentRead=True,
    )
    leases = [item for page in pages for item in page["Items"]]
    return {item["pk"]["S"]: item for item in leases if int(item["expires_at"]["N"]) >= at}


@dataclass(frozen=True)
class Played:
    resume: Resume | None  # None: a scheduled tick
    report: RunReport | None  # None: the run was lost mid-batch
    at: int

    @property
    def slot(self) -> int:
        return self.resume.slot if self.resume is not None else 0


@dataclass(frozen=True)
class Start:
    slot: int
    token: str
    at: int


@dataclass
class LargeDrain:
    """One re-driver's runs, started as Lambda starts them (a scheduled tick, the chain's
    continuations, the workers a fan-out starts) and played with the consumer after each; the
    slots' live runs, and what went wrong along the way."""

    aws: Aws
    frozen: Any
    settings: Settings
    book: TableBook
    state: StateTable
    pending: deque[Resume | None] = field(default_factory=deque)
    played: list[Played] = field(default_factory=list)
    starts: list[Start] = field(default_factory=list)
    live: dict[int, str] = field(default_factory=dict)  # slot -> token of its run, started or running
    consumed: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def seed(self, count: int) -> list[str]:
        bodies = [f"m-{n:04}" for n in range(count)]
        for start in range(0, count, SQS_MAX_BATCH_SIZE):
            entries = [
                {"Id": str(i), "MessageBody": b}
                for i, b in enumerate(bodies[start : start + SQS_MAX_BATCH_SIZE])
            ]
            self.aws.sqs.send_message_batch(QueueUrl=self.aws.dlq_url, Entries=entries)
        self.pending.append(None)  # the scheduled tick that finds them
        return bodies

    def redriver(self, sqs: Any, dynamodb: Any) -> Redriver:
        """One invocation's re-driver, on the frozen clock (its waits move it)."""
        limiter = TokenBucket(START_RATE, burst=SQS_MAX_BATCH_SIZE, clock=time.time, sleep=self.frozen.tick)
        return local_redriver(
            self.settings,
            sqs=sqs,
            dynamodb=dynamodb,
            s3=self.aws.s3,
            clock=time.time,
            sleep=self.frozen.tick,
            limiter=limiter,
        )

    def start_worker(self, resume: Resume) -> None:
        """What the function's invocation of a worker does here: the run waits its turn."""
        if resume.slot in self.live:
            self.problems.append(f"slot {resume.slot} started again while a run of it is live")
        if not 1 <= resume.slot < MAX_WORKERS:
            self.problems.append(f"a worker started in slot {resume.slot}")
        self.live[resume.slot] = resume.token
        self.starts.append(Start(resume.slot, resume.token, now()))
        self.pending.append(resume)

    def play(self, resume: Resume | None, sqs: Any = None) -> RunReport | None:
        """One run; None when it was lost (its environment died). Then the consumer, and time passes."""
        at = now()
        redriver = self.redriver(sqs or self.aws.sqs, self.book.wrap(self.aws.dynamodb))
        try:
            report: RunReport | None = redriver.run(REMAINING, resume, self.start_worker)
        except SimulatedCrash:
            report = None
        self.ended(Played(resume, report, at))
        self.consume()
        self.frozen.tick(RUN_SECONDS)
        return report

    def together(self, sqs: Callable[[Any, int], Any] = lambda client, _: client) -> list[RunReport]:
        """Every pending run at once, in lockstep; ``sqs`` wraps the SQS client of the n-th."""
        runs, lockstep = list(self.pending), Lockstep()
        self.pending.clear()
        at = now()
        redrivers = [
            self.redriver(
                lockstep.client(sqs(self.aws.sqs, n)), lockstep.client(self.book.wrap(self.aws.dynamodb))
            )
            for n in range(len(runs))
        ]
        with lockstep.pool(len(runs)) as pool:
            futures = [
                pool.submit(functools.partial(r.run, REMAINING, resume, self.start_worker))
                for r, resume in zip(redrivers, runs, strict=True)
            ]
            reports: list[RunReport] = [future.result() for future in futures]
        for resume, report in zip(runs, reports, strict=True):
            self.ended(Played(resume, report, at))
        self.consume()
        self.frozen.tick(RUN_SECONDS)
        return reports

    def ended(self, played: Played) -> None:
        """A run ended (or died): its slot is free, or its continuation's."""
        self.played.append(played)
        resume, report = played.resume, played.report
        if resume is not None and resume.slot and self.live.get(resume.slot) == resume.token:
            del self.live[resume.slot]
        following = report.continue_with if report is not None else None
        if following is None:
            return
        if following.slot:
            if following.slot in self.live:
                self.problems.append(f"a continuation in slot {following.slot}, which another run holds")
            self.live[following.slot] = following.token
        self.pending.append(following)

    def consume(self) -> None:
        self.consumed.update(m["Body"] for m in drain(self.aws.sqs, self.aws.source_url))

    def play_until(self, done: Callable[[], bool]) -> None:
        while self.pending and not done():
            self.play(self.pending.popleft())
        assert done(), "the drain ended before the moment the case needs"

    def play_all(self) -> None:
        while self.pending:
            if len(self.played) >= MOST_RUNS:
                self.problems.append(f"still {len(self.pending)} runs to go after {MOST_RUNS}")
                return
            self.play(self.pending.popleft())

    def take(self, slot: int) -> Resume:
        """The pending run of ``slot``, to be played by the test."""
        resume = next(r for r in self.pending if r is not None and r.slot == slot)
        self.pending.remove(resume)
        return resume

    def pending_slots(self) -> set[int]:
        return {r.slot if r is not None else 0 for r in self.pending}

    def drain_record(self) -> DrainRecord | None:
        return self.state.load_drain(self.settings.drain_key)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[LargeDrain]:
    monkeypatch.setattr(workers, "MESSAGES_PER_WORKER", MESSAGES_PER_WORKER)
    with (
        freeze_time(datetime.fromtimestamp(SIM_EPOCH, UTC), ignore=UNFROZEN) as frozen,
        mock_aws(),
        moto_sqs_sped_up(),  # moto's clock read once per message scan: the same clock, frozen
    ):
        aws = create_aws()
        settings = drain_settings(aws)
        state = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=1, clock=time.time)
        yield LargeDrain(aws, frozen, settings, TableBook(aws, settings), state)


# -- the books -------------------------------------------------------------------------------------


def books(
    world: LargeDrain, case: str, seeded: list[str], duplicates: frozenset[str] = frozenset()
) -> Outcome:
    """Where every message went, and what is wrong with the drain at its end; for the figures."""
    world.consume()
    outcome = Outcome(fault=case, call=0, operation="-", messages=len(seeded), drain_runs=len(world.played))
    outcome.lost = sorted(body for body in seeded if not world.consumed[body])
    outcome.duplicates = sorted(body for body, n in world.consumed.items() if n > 1)
    problems = outcome.problems
    problems += world.problems
    if unknown := set(world.consumed) - set(seeded):
        problems.append(f"unknown messages in the source queue: {sorted(unknown)}")
    if unexplained := set(outcome.duplicates) - duplicates:
        problems.append(f"duplicates without a send whose delete did not happen: {sorted(unexplained)}")
    if (left := queue_counts(world.aws.sqs, world.aws.dlq_url)).total:
        problems.append(f"left in the DLQ: {left}")
    if world.book.most_leases > MAX_WORKERS - 1:
        problems.append(f"{world.book.most_leases} worker leases held at once")
    problems += drain_problems(world)
    FIGURES.append(outcome)
    return outcome


def drain_problems(world: LargeDrain) -> list[str]:
    """The drain's record ended, each of its writes one version on; no lease or continuation held."""
    problems = []
    versions = [w.number("version") for w in world.book.drain_writes if w.won]
    if versions != list(range(1, len(versions) + 1)):
        problems.append(f"the drain's writes that won carry versions {versions}")
    record = world.drain_record()
    if record is None or record.going or record.messages_left or record.ended_at < record.started_at:
        problems.append(f"the drain did not end as it should: {record}")
    if leases := held_leases(world.aws):
        problems.append(f"worker leases still held: {sorted(leases)}")
    if world.live or world.pending:
        problems.append(f"runs still live {world.live} or pending {list(world.pending)}")
    continuation = {"pk": {"S": RecordKind.CONTINUATION.key(world.settings.dlq_url)}}
    if world.aws.dynamodb.get_item(TableName=world.aws.table_name, Key=continuation).get("Item"):
        problems.append("the chain's continuation slot is still held")
    return problems


# -- 1. a chain starts a large drain --------------------------------------------------------------


def test_a_chain_starts_a_large_drain_that_fans_out_and_ends_with_nothing_lost(world: LargeDrain) -> None:
    seeded = world.seed(MESSAGES)

    world.play_all()

    outcome = books(world, "healthy", seeded)
    assert outcome.lost == [] and outcome.duplicates == [] and outcome.problems == [], outcome
    # the chain's first run met its per-run limit and did not look (a DLQ that size is the usual
    # one); its second started the drain, its third stepped the pace and fanned out: one worker at
    # the first step, three at the second
    first, second = world.played[0].report, world.played[1].report
    assert first is not None and first.continue_with is not None and not first.continue_with.drain
    assert second is not None and second.continue_with is not None and second.continue_with.drain
    assert [s.slot for s in world.starts[:3]] == [1, 2, 3]
    assert world.book.most_leases == MAX_WORKERS - 1
    by_slot = Counter[int]()
    for played in world.played:
        if played.report is not None:
            by_slot[played.slot] += played.report.redriven
    assert sorted(by_slot) == [0, 1, 2, 3] and all(by_slot.values()), by_slot
    assert sum(by_slot.values()) == MESSAGES


# -- 2. a worker lost mid-batch -------------------------------------------------------------------


class LostMidBatch(ClientProxy):
    """A worker's SQS client whose Lambda environment dies after ``deletes`` DeleteMessageBatch
    calls, before the next: the batch it sent last is in the source queue and still in the DLQ,
    hidden there until its visibility timeout ends."""

    def __init__(self, client: Any, *, deletes: int) -> None:
        super().__init__(client)
        self.deletes_left = deletes
        self.sent_last: list[str] = []
        self.died_at = 0.0

    def send_message_batch(self, **kwargs: Any) -> Any:
        response = self._client.send_message_batch(**kwargs)
        self.sent_last = [entry["MessageBody"] for entry in kwargs["Entries"]]
        return response

    def delete_message_batch(self, **kwargs: Any) -> Any:
        if not self.deletes_left:
            self.died_at = time.time()
            raise SimulatedCrash("the worker's environment died between its send and its delete")
        self.deletes_left -= 1
        return self._client.delete_message_batch(**kwargs)


def test_a_worker_lost_mid_batch_keeps_its_slot_until_its_lease_expires_and_its_batch_comes_back(
    world: LargeDrain,
) -> None:
    seeded = world.seed(MESSAGES)
    world.play_until(lambda: 1 in world.pending_slots())  # the first pace step started slot 1
    lost, sqs = world.take(slot=1), LostMidBatch(world.aws.sqs, deletes=1)
    started_at = now()

    # WHEN the worker dies after its second batch's send, before that batch's delete
    assert world.play(lost, sqs=sqs) is None
    expires_at = started_at + HOLD
    lease = held_leases(world.aws)[worker_key(world.settings.dlq_url, 1)]
    assert (lease["token"]["S"], int(lease["expires_at"]["N"])) == (lost.token, expires_at)

    # THEN the drain goes on without it: a pace step fans out to the width it wants while the
    # lease is held, and leaves slot 1 to its lease
    since, crashed = len(world.book.drain_writes), len(world.starts)
    world.play_until(lambda: any(step.number("workers") > 1 for step in world.book.steps(since)))
    assert now() < expires_at
    assert 1 not in [start.slot for start in world.starts[crashed:]]
    # once the lease has expired (and the batch it held is visible again), a fan-out starts a
    # new worker in slot 1, and the batch is re-driven again: duplicates, as SQS's at-least-once
    world.frozen.move_to(datetime.fromtimestamp(sqs.died_at + HOLD + 1, UTC))
    world.play_all()
    assert [start for start in world.starts if start.slot == 1 and start.at > expires_at], world.starts
    redriven_after = sum(
        p.report.redriven for p in world.played if p.slot == 1 and p.at > expires_at and p.report
    )
    assert redriven_after > 0
    outcome = books(world, "a worker lost mid-batch", seeded, duplicates=frozenset(sqs.sent_last))
    assert outcome.lost == [] and outcome.problems == [], outcome
    assert outcome.duplicates == sorted(sqs.sent_last) and len(sqs.sent_last) == SQS_MAX_BATCH_SIZE


# -- a worker started after its pace went stale ---------------------------------------------------


def test_a_worker_whose_own_pace_step_leaves_its_slot_out_stops_before_its_batch(world: LargeDrain) -> None:
    seeded = world.seed(MESSAGES)
    world.play_until(lambda: {1, 2, 3} <= world.pending_slots())  # four workers wanted
    # Lambda held the invocations over a minute (throttled): the pace is stale, and its next step
    # starts over at the chain's rate, two workers' worth
    world.frozen.tick(DRAIN_STALE_SECONDS + 1)

    report = world.play(world.take(slot=3))

    assert report is not None and report.stopped_because is StopReason.FEWER_WORKERS
    drain_record = world.drain_record()
    assert drain_record is not None and drain_record.workers == 2  # its own step
    assert report.received == 0  # not one batch beyond the width its own step wrote
    world.play_all()
    outcome = books(world, "a worker delayed past a stale pace", seeded)
    assert outcome.lost == [] and outcome.duplicates == [] and outcome.problems == [], outcome


# -- 3. two pace steps at once --------------------------------------------------------------------


def test_two_runs_stepping_the_pace_at_once_write_one_step_and_start_one_worker_a_slot(
    world: LargeDrain,
) -> None:
    seeded = world.seed(MESSAGES)
    world.play_until(lambda: 1 in world.pending_slots())  # the first step: two workers wanted
    # slot 1's worker and the chain's next run start together, a pace step due for both
    world.frozen.tick(CONTROL_SECONDS)
    assert world.pending_slots() == {0, 1}
    writes, starts = len(world.book.drain_writes), len(world.starts)

    world.together()

    # both read the drain's record before either wrote: one step won, the other read the winner's
    first = world.book.drain_writes[writes]
    overlapped = [w.won for w in world.book.drain_writes[writes:] if w.expected == first.expected]
    assert overlapped == [True, False] and first.number("workers") == MAX_WORKERS
    # and the winner's fan-out started the two slots no run held, once each
    assert sorted(start.slot for start in world.starts[starts:]) == [2, 3]
    world.play_all()
    outcome = books(world, "two pace steps at once", seeded)
    assert outcome.lost == [] and outcome.duplicates == [] and outcome.problems == [], outcome


# -- 4. a pause or an opened breaker mid-drain -----------------------------------------------------


class StopMidDrain:
    """Writes a stop (the operator's pause, a breaker another worker opened) right after the runs'
    ``after``-th SendMessageBatch."""

    def __init__(self, after: int, write: Callable[[], None]) -> None:
        self.sends_left = after
        self.write = write

    def wrap(self, client: Any, _run: int) -> Any:
        return ClientProxy(client, send_message_batch=functools.partial(self._send, client))

    def _send(self, client: Any, **kwargs: Any) -> Any:
        response = client.send_message_batch(**kwargs)
        self.sends_left -= 1
        if not self.sends_left:
            self.write()
        return response


@dataclass(frozen=True)
class Stop:
    name: str
    reason: StopReason
    write: Callable[[LargeDrain], None]
    lift: Callable[[LargeDrain], None]
    holds: Callable[[LargeDrain], bool]


def move_breaker(world: LargeDrain, move: Callable[[Any, int], Any]) -> None:
    key = world.settings.breaker_key
    stored = world.state.load_breaker(key)
    assert world.state.save_breaker(key, move(stored, now()), expected_version=stored.version)


STOPS = [
    Stop(
        "an operator's pause",
        StopReason.PAUSED,
        write=lambda w: w.state.save_pause(w.settings.pause_key, Pause("incident", "oncall", now())),
        lift=lambda w: w.state.clear_pause(w.settings.pause_key),
        holds=lambda w: w.state.load_pause(w.settings.pause_key) is not None,
    ),
    Stop(
        "a breaker opened",
        StopReason.BREAKER_OPENED,
        write=lambda w: move_breaker(w, lambda b, at: b.opened(at, Evidence.VERDICTS)),
        lift=lambda w: move_breaker(w, lambda b, at: b.closed(at, Evidence.OPERATOR)),
        holds=lambda w: w.state.load_breaker(w.settings.breaker_key).state is State.OPEN,
    ),
]


@pytest.mark.parametrize("stop", STOPS, ids=lambda stop: stop.name)
def test_a_stop_mid_drain_halts_every_worker_before_its_next_batch_and_loses_nothing(
    world: LargeDrain, stop: Stop
) -> None:
    seeded = world.seed(MESSAGES)
    world.play_until(lambda: world.pending_slots() == {0, 1, 2, 3})  # the chain and three workers
    runs = len(world.pending)
    stopper = StopMidDrain(after=runs, write=functools.partial(stop.write, world))

    # WHEN the stop is written while all four run, each with a batch sent
    reports = world.together(sqs=stopper.wrap)

    # THEN each stopped for it before its next batch (taking turns, each had sent its first)
    assert [report.stopped_because for report in reports] == [stop.reason] * runs
    assert [report.redriven for report in reports] == [SQS_MAX_BATCH_SIZE] * runs
    # and gave back what it held: what is left of the DLQ is visible, none of it in flight
    counts = queue_counts(world.aws.sqs, world.aws.dlq_url)
    assert (counts.visible, counts.in_flight) == (MESSAGES - sum(world.consumed.values()), 0)
    # nobody goes on, no lease is held, and the stop stands (no run wrote over it)
    assert not world.pending and held_leases(world.aws) == {} and stop.holds(world)
    # WHEN the operator lifts it: the next scheduled run's chain takes the drain up again
    stop.lift(world)
    world.pending.append(None)
    world.play_all()
    outcome = books(world, stop.name, seeded)
    assert outcome.lost == [] and outcome.duplicates == [] and outcome.problems == [], outcome
