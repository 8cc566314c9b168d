"""Overlapping runs (EventBridge delivers at least once; retries overlap): 2 to 4 runs at once."""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from typing import Any

import pytest

from local_aws.clients import ClientProxy
from local_aws.queues import drain, make_visible
from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Canary, Evidence, State
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.report import RunReport
from tests.support.aws import CANARY_WINDOW, REMAINING, Aws, make_redriver, make_settings, mark_of
from tests.support.factories import LONG_AGO, FakeClock
from tests.support.faults import Faults, breaker_problems
from tests.support.lockstep import Lockstep

MAX_REDRIVE_COUNT = 3


def seed(aws: Aws) -> dict[str, int]:
    """40 messages: fresh ones, ones at their last allowed re-drive, and poison at the limit."""
    counts = {f"fresh-{i}": 0 for i in range(30)} | {f"last-{i}": 2 for i in range(6)}
    counts |= {f"poison-{i}": MAX_REDRIVE_COUNT for i in range(4)}
    for body, count in counts.items():
        attributes = {}
        if count:
            mark = Mark(f"id-{body}", count, LONG_AGO, tuple(range(LONG_AGO + 1, LONG_AGO + count + 1)))
            attributes = {MARK_ATTRIBUTE: {"DataType": "String", "StringValue": mark.to_json()}}
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body, MessageAttributes=attributes)
    return counts


def run_together(
    aws: Aws,
    clock: FakeClock,
    runs: int,
    *,
    dynamodb: Any = None,
    **overrides: object,
) -> list[RunReport]:
    """``runs`` runs at once, taking turns at every AWS call (tests/lockstep.py): they overlap for
    certain, the same way every time, where free threads could let one run drain the DLQ before
    the others start. One thread runs at a time, so moto's receives and conditional writes are
    atomic, as SQS's and DynamoDB's are."""
    lockstep = Lockstep()
    settings = make_settings(aws, max_redrive_count=MAX_REDRIVE_COUNT, **overrides)
    sqs, writes = lockstep.client(aws.sqs), lockstep.client(dynamodb or aws.dynamodb)
    redrivers = [make_redriver(aws, settings, clock, sqs=sqs, dynamodb=writes) for _ in range(runs)]
    with lockstep.pool(runs) as pool:
        futures = [pool.submit(functools.partial(redriver.run, REMAINING)) for redriver in redrivers]
        return [future.result() for future in futures]


@pytest.mark.parametrize("runs", [2, 3, 4])
def test_overlapping_runs_share_the_dlq_without_double_handling(
    aws: Aws, clock: FakeClock, runs: int
) -> None:
    counts = seed(aws)

    reports = run_together(
        aws,
        clock,
        runs,
        breaker=BreakerPolicy(failure_threshold=100, minimum_volume=1000),
    )

    in_source = drain(aws.sqs, aws.source_url)
    parked = drain(aws.sqs, aws.parking_lot_url)
    # every run held a batch at once (each took its first one before any run took a second), yet
    # each message was handled by exactly one run: the DLQ visibility timeout hides it from the others
    assert all(r.received >= 10 for r in reports), [r.received for r in reports]
    assert sum(r.received for r in reports) == len(counts)
    assert sorted(m["Body"] for m in parked) == sorted(b for b, c in counts.items() if c >= MAX_REDRIVE_COUNT)
    assert sorted(m["Body"] for m in in_source) == sorted(
        b for b, c in counts.items() if c < MAX_REDRIVE_COUNT
    )
    for message in in_source:
        mark = mark_of(message)
        assert mark.count == counts[message["Body"]] + 1 <= MAX_REDRIVE_COUNT
    assert drain(aws.sqs, aws.dlq_url) == []


@pytest.mark.parametrize("runs", [2, 4])
def test_overlapping_runs_move_an_open_breaker_once_and_send_one_canary(
    aws: Aws, clock: FakeClock, runs: int
) -> None:
    # GIVEN an OPEN breaker whose cooldown is over, and a DLQ to probe
    settings = make_settings(aws)
    writes = Faults()  # no faults: it records the breaker writes that succeeded
    dynamodb = writes.wrap(aws.dynamodb)
    state = make_redriver(aws, settings, clock, dynamodb=dynamodb).state
    state.save_breaker(
        settings.breaker_key, Breaker().opened(int(clock.now), Evidence.RETURNS), expected_version=0
    )
    counts = seed(aws)
    clock.advance(61)

    # WHEN the runs start together (the breaker writes conditional and atomic, as in DynamoDB)
    reports = run_together(aws, clock, runs, dynamodb=dynamodb)

    # THEN one run moved it to HALF_OPEN, one claimed the probe, and its one canary went out
    transitions = Counter(t for r in reports for t in r.breaker_transitions)
    assert transitions == {"OPEN->HALF_OPEN": 1}
    assert sum(r.canaries for r in reports) == 1
    in_source = drain(aws.sqs, aws.source_url)
    assert len(in_source) == 1
    canary = mark_of(in_source[0])
    assert canary.count == counts[in_source[0]["Body"]] + 1
    # and the stored breaker carries that canary, written once after the transition (version 3)
    stored = state.load_breaker(settings.breaker_key)
    now = int(clock.now)
    assert stored.state is State.HALF_OPEN and stored.version == 3
    assert stored.canary == Canary(identities=(canary.identity,), verdict_at=now + CANARY_WINDOW, sent_at=now)
    problems = breaker_problems(
        aws.dynamodb, aws.table_name, settings.breaker_key, writes.puts, settings.breaker
    )
    assert problems == []
    # nothing else left the DLQ but poison: a run that lost the probe still parks what it received
    # over the limit (every mode does)
    make_visible(aws.dlq_url)
    left = [m["Body"] for m in drain(aws.sqs, aws.dlq_url)]
    parked = [m["Body"] for m in drain(aws.sqs, aws.parking_lot_url)]
    assert set(parked) <= {body for body, count in counts.items() if count >= MAX_REDRIVE_COUNT}
    assert sorted(left + parked + [in_source[0]["Body"]]) == sorted(counts)


def test_parallel_batches_within_one_run_handle_each_message_once(aws: Aws, clock: FakeClock) -> None:
    counts = seed(aws)
    settings = make_settings(
        aws,
        max_redrive_count=MAX_REDRIVE_COUNT,
        parallel_batches=4,
        breaker=BreakerPolicy(failure_threshold=100, minimum_volume=1000),
    )

    # four workers, taking turns at every call: each holds its first batch before any takes a second
    lockstep = Lockstep()
    with lockstep.installed():
        report = make_redriver(aws, settings, clock, sqs=lockstep.client(aws.sqs)).run(REMAINING)

    in_source = drain(aws.sqs, aws.source_url)
    parked = drain(aws.sqs, aws.parking_lot_url)
    assert (report.received, report.redriven, report.parked) == (40, 36, 4)
    assert sorted(m["Body"] for m in in_source) == sorted(
        b for b, c in counts.items() if c < MAX_REDRIVE_COUNT
    )
    assert sorted(m["Body"] for m in parked) == sorted(b for b, c in counts.items() if c >= MAX_REDRIVE_COUNT)
    assert drain(aws.sqs, aws.dlq_url) == []


def test_a_parallel_run_that_trips_the_breaker_stops_the_run(aws: Aws, clock: FakeClock) -> None:
    # GIVEN two failed runs behind us, and a DLQ of messages that all came back: three batches
    # for each of four workers
    settings = make_settings(aws, parallel_batches=4, max_redrive_count=10)
    lockstep = Lockstep()  # one worker at a time: the breaker writes atomic, as in DynamoDB
    dynamodb = lockstep.client(aws.dynamodb)
    state = make_redriver(aws, settings, clock, dynamodb=dynamodb).state
    state.save_breaker(settings.breaker_key, Breaker(failures=2, version=1), expected_version=0)
    for i in range(120):
        mark = Mark(f"id-{i}", 1, LONG_AGO, (int(clock.now) - 60,))
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url,
            MessageBody=f"back-{i}",
            MessageAttributes={MARK_ATTRIBUTE: {"DataType": "String", "StringValue": mark.to_json()}},
        )

    with lockstep.installed():
        redriver = make_redriver(aws, settings, clock, sqs=lockstep.client(aws.sqs), dynamodb=dynamodb)
        report = redriver.run(REMAINING)

    # THEN one transition, nothing re-driven, and no worker took a batch after its first
    assert report.breaker_transitions == ["CLOSED->OPEN"]
    assert report.redriven == 0
    assert report.received <= 40  # a worker that went on would take the other 80
    assert state.load_breaker(settings.breaker_key).state is State.OPEN
    make_visible(aws.dlq_url)
    assert len(drain(aws.sqs, aws.dlq_url)) == 120


def test_a_parallel_worker_that_dies_stops_the_others(aws: Aws, clock: FakeClock) -> None:
    # GIVEN twelve batches for four workers, and a send that fails in a way no adapter expects
    for i in range(120):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"m-{i}")
    sends = itertools.count(1)

    def send_failing_first(**kwargs: Any) -> Any:
        if next(sends) == 1:
            raise RuntimeError("a bug in the first send")
        return aws.sqs.send_message_batch(**kwargs)

    lockstep = Lockstep()
    sqs = lockstep.client(ClientProxy(aws.sqs, send_message_batch=send_failing_first))
    settings = make_settings(
        aws, parallel_batches=4, breaker=BreakerPolicy(failure_threshold=100, minimum_volume=1000)
    )

    with pytest.raises(RuntimeError, match="first send"), lockstep.installed():
        make_redriver(aws, settings, clock, sqs=sqs).run(REMAINING)

    # THEN each other worker finished the batch it held (taking turns, all four held one when the
    # first send failed) and took no other, and nothing is lost
    redriven = [m["Body"] for m in drain(aws.sqs, aws.source_url)]
    assert len(redriven) == 30  # without the stop, 110
    make_visible(aws.dlq_url)
    left = [m["Body"] for m in drain(aws.sqs, aws.dlq_url)]
    assert sorted(redriven + left) == sorted(f"m-{i}" for i in range(120))
