"""Overlapping runs (EventBridge delivers at least once; retries overlap): 2 to 4 runs at once."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from local_aws.clients import AtomicReceive, ClientProxy
from local_aws.queues import drain, make_visible
from redriver.decide.breaker import Breaker, BreakerPolicy, State
from redriver.model.envelope import MARK_ATTRIBUTE, Mark
from redriver.model.report import RunReport
from tests.conftest import Aws, make_redriver, make_settings
from tests.factories import FakeClock

REMAINING = lambda: 60_000  # noqa: E731
MAX_REDRIVES = 3


def seed(aws: Aws) -> dict[str, int]:
    """40 messages: fresh ones, ones at their last allowed re-drive, and poison at the limit."""
    counts = {f"fresh-{i}": 0 for i in range(30)} | {f"last-{i}": 2 for i in range(6)}
    counts |= {f"poison-{i}": MAX_REDRIVES for i in range(4)}
    for body, count in counts.items():
        attributes = {}
        if count:
            mark = Mark(f"id-{body}", count, 1, tuple(range(1, count + 1)))
            attributes = {MARK_ATTRIBUTE: {"DataType": "String", "StringValue": mark.to_json()}}
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body, MessageAttributes=attributes)
    return counts


def run_together(aws: Aws, clock: FakeClock, runs: int, **overrides: object) -> list[RunReport]:
    settings = make_settings(aws, max_redrives=MAX_REDRIVES, **overrides)
    sqs = AtomicReceive(aws.sqs)
    redrivers = [make_redriver(aws, settings, clock, sqs=sqs) for _ in range(runs)]
    start = threading.Barrier(runs)

    def run(redriver: object) -> RunReport:
        start.wait()
        return redriver.run(REMAINING)  # type: ignore[attr-defined]

    with ThreadPoolExecutor(max_workers=runs) as pool:
        return list(pool.map(run, redrivers))


@pytest.mark.parametrize("runs", [2, 3, 4])
def test_overlapping_runs_share_the_dlq_without_double_handling(
    aws: Aws, clock: FakeClock, runs: int
) -> None:
    counts = seed(aws)

    reports = run_together(aws, clock, runs, breaker=BreakerPolicy(failure_threshold=100))

    in_source = drain(aws.sqs, aws.source_url)
    parked = drain(aws.sqs, aws.parking_lot_url)
    # every message handled by exactly one run: the DLQ visibility timeout hides it from the others
    assert sum(r.received for r in reports) == len(counts)
    assert sorted(m["Body"] for m in parked) == sorted(b for b, c in counts.items() if c >= MAX_REDRIVES)
    assert sorted(m["Body"] for m in in_source) == sorted(b for b, c in counts.items() if c < MAX_REDRIVES)
    for message in in_source:
        mark = Mark.from_json(message["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
        assert mark.count == counts[message["Body"]] + 1 <= MAX_REDRIVES
    assert drain(aws.sqs, aws.dlq_url) == []


@pytest.mark.parametrize("runs", [2, 4])
def test_overlapping_runs_move_an_open_breaker_once_and_send_one_canary(
    aws: Aws, clock: FakeClock, runs: int
) -> None:
    # GIVEN an OPEN breaker whose cooldown is over, and a DLQ to probe
    settings = make_settings(aws)
    state = make_redriver(aws, settings, clock).state
    state.save_breaker(settings.breaker_key, Breaker().opened(int(clock.now)), expected_version=0)
    seed(aws)
    clock.advance(61)

    reports = run_together(aws, clock, runs)

    transitions = Counter(t for r in reports for t in r.breaker_transitions)
    assert transitions["OPEN->HALF_OPEN"] == 1
    assert sum(r.canaries for r in reports) <= 1
    stored = state.load_breaker(settings.breaker_key)
    assert stored.state is State.HALF_OPEN and stored.version in (2, 3)
    assert len(drain(aws.sqs, aws.source_url)) == sum(r.canaries for r in reports)


def test_parallel_batches_within_one_run_handle_each_message_once(aws: Aws, clock: FakeClock) -> None:
    counts = seed(aws)
    settings = make_settings(
        aws, max_redrives=MAX_REDRIVES, parallel_batches=4, breaker=BreakerPolicy(failure_threshold=100)
    )

    report = make_redriver(aws, settings, clock, sqs=AtomicReceive(aws.sqs)).run(REMAINING)

    in_source = drain(aws.sqs, aws.source_url)
    parked = drain(aws.sqs, aws.parking_lot_url)
    assert (report.received, report.redriven, report.parked) == (40, 36, 4)
    assert sorted(m["Body"] for m in in_source) == sorted(b for b, c in counts.items() if c < MAX_REDRIVES)
    assert sorted(m["Body"] for m in parked) == sorted(b for b, c in counts.items() if c >= MAX_REDRIVES)
    assert drain(aws.sqs, aws.dlq_url) == []


def test_a_parallel_run_that_trips_the_breaker_stops_every_worker(aws: Aws, clock: FakeClock) -> None:
    # GIVEN two failed runs behind us, and a DLQ of messages that all came back
    settings = make_settings(aws, parallel_batches=4, max_redrives=10)
    state = make_redriver(aws, settings, clock).state
    state.save_breaker(settings.breaker_key, Breaker(failures=2, version=1), expected_version=0)
    for i in range(40):
        mark = Mark(f"id-{i}", 1, 1, (int(clock.now) - 60,))
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url,
            MessageBody=f"back-{i}",
            MessageAttributes={MARK_ATTRIBUTE: {"DataType": "String", "StringValue": mark.to_json()}},
        )

    report = make_redriver(aws, settings, clock, sqs=AtomicReceive(aws.sqs)).run(REMAINING)

    assert report.breaker_transitions == ["CLOSED->OPEN"]
    assert report.redriven == 0
    assert state.load_breaker(settings.breaker_key).state is State.OPEN


def test_a_parallel_worker_that_dies_stops_the_others(aws: Aws, clock: FakeClock) -> None:
    # GIVEN twelve batches for four workers, and a send that fails in a way no adapter expects
    for i in range(120):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"m-{i}")
    sends = itertools.count(1)

    def send_failing_first(**kwargs: Any) -> Any:
        if next(sends) == 1:
            raise RuntimeError("a bug in the first send")
        return aws.sqs.send_message_batch(**kwargs)

    sqs = AtomicReceive(ClientProxy(aws.sqs, send_message_batch=send_failing_first))
    settings = make_settings(aws, parallel_batches=4, breaker=BreakerPolicy(failure_threshold=100))

    with pytest.raises(RuntimeError, match="first send"):
        make_redriver(aws, settings, clock, sqs=sqs).run(REMAINING)

    # THEN the other workers stopped within a batch or two (a thread switch can let one more
    # start before the stop is set), and nothing is lost
    redriven = [m["Body"] for m in drain(aws.sqs, aws.source_url)]
    assert len(redriven) <= 60  # without the stop, about 110
    make_visible(aws.dlq_url)
    left = [m["Body"] for m in drain(aws.sqs, aws.dlq_url)]
    assert sorted(redriven + left) == sorted(f"m-{i}" for i in range(120))
