"""A DLQ shared by two sources, each with its own breaker: one broken consumer stops only its own
source's re-drives."""

from __future__ import annotations

from typing import Any

import pytest

from local_aws.queues import depth, drain
from sqs_redriver.core.breaker import Breaker, Canary, Evidence, Mode, State
from sqs_redriver.core.table import Resume
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.runtime.report import RunReport
from sqs_redriver.runtime.routing import turn_order
from tests.support.aws import (
    CANARY_WINDOW,
    REMAINING,
    Aws,
    fail_into_dlq,
    make_redriver,
    make_settings,
    mark_of,
)
from tests.support.factories import FakeClock, NamesTheSource, always, consume, never
from tests.support.shared_dlq import SOURCES, near_retention_in_both_sources, redriver_for


def peek(aws: Aws) -> list[dict[str, Any]]:
    """The DLQ's messages (at most 10), left visible."""
    response = aws.sqs.receive_message(
        QueueUrl=aws.dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=0, MessageAttributeNames=["All"]
    )
    return list(response.get("Messages", []))


def by_source(report: RunReport, aws: Aws, payments: str) -> dict[str, tuple[Mode, State]]:
    names = {aws.source_url: "orders", payments: "payments"}
    return {names[str(p.source)]: (p.mode, p.breaker_state) for p in report.parts}


@pytest.mark.parametrize("leader", [0, 1], ids=["orders-first", "payments-first"])
def test_a_broken_consumer_stops_only_its_own_source_and_recovers_by_its_own_canary(
    aws: Aws, payments: str, clock: FakeClock, leader: int
) -> None:
    # GIVEN a shared DLQ with failures of both sources (the minute decides which source goes first)
    clock.advance(60 - clock.now % 60)  # at a minute's start: the runs below stay in that minute
    while turn_order(2, generation=0, now=int(clock.now))[0] != leader:
        clock.advance(60)
    redriver = redriver_for(aws, payments, clock)
    fail_into_dlq(aws, aws.source_url, *(f"orders:{i}" for i in range(4)))
    fail_into_dlq(aws, payments, *(f"payments:{i}" for i in range(4)))
    assert redriver.run(REMAINING).redriven == 8

    # WHEN orders' consumer stays broken while payments' is healthy and fails new messages transiently
    consume(aws.sqs, aws.source_url, always)
    consume(aws.sqs, payments, never)
    fail_into_dlq(aws, payments, "payments:4", "payments:5", "payments:6")
    opening = redriver.run(REMAINING)

    # THEN only orders' breaker opens, and payments' messages are re-driven all the same
    assert opening.parts[0].source == (aws.source_url, payments)[leader]
    assert by_source(opening, aws, payments) == {
        "orders": (Mode.REDRIVE, State.OPEN),
        "payments": (Mode.REDRIVE, State.CLOSED),
    }
    assert (opening.redriven, opening.breaker_state) == (3, State.OPEN)
    assert opening.breaker_transitions == ["orders: CLOSED->OPEN"]
    assert sorted(m["Body"] for m in peek(aws)) == [f"orders:{i}" for i in range(4)]
    assert sorted(m["Body"] for m in drain(aws.sqs, payments)) == ["payments:4", "payments:5", "payments:6"]

    # and while orders' breaker cools down, payments' new failures drain and orders' wait untouched
    fail_into_dlq(aws, payments, "payments:7", "payments:8")
    clock.advance(10)
    cooling = redriver.run(REMAINING)
    assert by_source(cooling, aws, payments)["orders"] == (Mode.SKIP, State.OPEN)
    assert cooling.redriven == 2 and depth(aws.sqs, payments) == 2
    waiting = peek(aws)
    assert sorted(m["Body"] for m in waiting) == [f"orders:{i}" for i in range(4)]
    assert {mark_of(m).count for m in waiting} == {1}  # not re-driven since

    # WHEN orders' consumer recovers: its own canaries close its breaker, and the DLQ drains
    clock.advance(61)
    probe = redriver.run(REMAINING)
    assert by_source(probe, aws, payments)["orders"] == (Mode.PROBE, State.HALF_OPEN)
    assert probe.canaries == 1
    consume(aws.sqs, aws.source_url, never)
    clock.advance(CANARY_WINDOW + 1)
    assert redriver.run(REMAINING).canaries == 1  # one success, and the next canary at once
    consume(aws.sqs, aws.source_url, never)
    clock.advance(CANARY_WINDOW + 1)
    closing = redriver.run(REMAINING)

    assert closing.breaker_transitions == ["orders: HALF_OPEN->CLOSED"]
    assert (closing.redriven, closing.breaker_state) == (2, State.CLOSED)  # 2 went as canaries
    assert depth(aws.sqs, aws.dlq_url) == 0


def test_a_message_without_a_named_source_follows_the_source_queues_breaker(
    aws: Aws, payments: str, clock: FakeClock
) -> None:
    # GIVEN orders' breaker open, payments' closed, and a message SQS names no source for
    redriver = redriver_for(aws, payments, clock)
    redriver.state.save_breaker(
        RecordKind.BREAKER.key(aws.source_url),
        Breaker().opened(int(clock.now), Evidence.RETURNS),
        expected_version=0,
    )
    for body in ("unnamed:1", "payments:1"):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)

    # WHEN a run goes
    held = redriver.run(REMAINING)

    # THEN it waits with orders' messages; once the breakers are the other way round, it goes to orders
    assert held.redriven == 1 and [m["Body"] for m in peek(aws)] == ["unnamed:1"]
    redriver.state.save_breaker(
        RecordKind.BREAKER.key(aws.source_url),
        Breaker().closed(int(clock.now), Evidence.OPERATOR),
        expected_version=1,
    )
    redriver.state.save_breaker(
        RecordKind.BREAKER.key(payments),
        Breaker().opened(int(clock.now), Evidence.RETURNS),
        expected_version=0,
    )
    released = redriver.run(REMAINING)
    assert released.redriven == 1 and [m["Body"] for m in drain(aws.sqs, aws.source_url)] == ["unnamed:1"]


def test_a_single_source_has_no_parts_and_keeps_its_breaker_key(aws: Aws, clock: FakeClock) -> None:
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="orders:1")

    report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    assert (report.redriven, report.parts, report.source) == (1, (), None)
    assert (
        make_settings(aws).breaker_key
        == RecordKind.BREAKER.key(aws.source_url)
        == f"BREAKER#{aws.source_url}"
    )


def test_a_chain_goes_on_while_one_source_drains_and_the_other_is_open(
    aws: Aws, payments: str, clock: FakeClock
) -> None:
    # GIVEN payments' breaker open and 25 of orders' messages behind 5 of payments'
    settings = make_settings(aws, other_source_queue_urls=(payments,), max_messages_per_run=12)
    redriver = make_redriver(aws, settings, clock, sqs=NamesTheSource(aws.sqs, SOURCES))
    redriver.state.save_breaker(
        RecordKind.BREAKER.key(payments),
        Breaker().opened(int(clock.now), Evidence.RETURNS),
        expected_version=0,
    )
    for body in [f"payments:{i}" for i in range(5)] + [f"orders:{i}" for i in range(25)]:
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)

    # WHEN the chain runs
    reports = [redriver.run(REMAINING)]
    while reports[-1].continue_with is not None:
        reports.append(redriver.run(REMAINING, reports[-1].continue_with))

    # THEN orders drain run after run, though the worst breaker is open, and payments' wait
    assert all(r.breaker_state is State.OPEN for r in reports)
    assert sum(r.redriven for r in reports) == 25 and len(reports) >= 3
    assert sorted(m["Body"] for m in drain(aws.sqs, aws.dlq_url)) == [f"payments:{i}" for i in range(5)]


def test_a_source_whose_breaker_closes_in_a_continuation_starts_slowly(
    aws: Aws, payments: str, clock: FakeClock
) -> None:
    # GIVEN a continuation of a chain at full rate, and payments' breaker one canary from closing
    settings = make_settings(aws, other_source_queue_urls=(payments,), slow_start_seconds=60)
    redriver = make_redriver(aws, settings, clock, sqs=NamesTheSource(aws.sqs, SOURCES))
    canary = Canary(("gone",), verdict_at=int(clock.now) - 1)
    half_open = Breaker(State.HALF_OPEN, successes=1, changed_at=int(clock.now) - 600, canary=canary)
    redriver.state.save_breaker(RecordKind.BREAKER.key(payments), half_open, expected_version=0)
    redriver.state.offer_continuation(aws.dlq_url, "t-1", stale_after=900)
    for i in range(10):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"payments:{i}")
    started = clock.now

    # WHEN the continuation runs: the verdict scan closes payments' breaker, and it re-drives
    report = redriver.run(REMAINING, Resume(token="t-1", generation=1, full_rate=True))

    # THEN its re-drives slow-start from 1/s (the chain's full rate was orders', not payments')
    assert report.breaker_transitions == ["payments: HALF_OPEN->CLOSED"] and report.redriven == 10
    assert clock.now - started > 3


def test_a_backlogged_source_holds_back_only_its_own_redrives(
    aws: Aws, payments: str, clock: FakeClock
) -> None:
    # GIVEN orders' queue above the backlog limit, and messages of both sources in the DLQ
    for i in range(5):
        aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=f"backlog-{i}")
    for body in ("orders:1", "payments:1", "payments:2"):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)
    settings = make_settings(aws, other_source_queue_urls=(payments,), source_backlog_limit=4)

    report = make_redriver(aws, settings, clock, sqs=NamesTheSource(aws.sqs, SOURCES)).run(REMAINING)

    # THEN payments' go back; orders' waits in the DLQ
    stops = {str(p.source): p.stopped_because for p in report.parts}
    assert stops == {aws.source_url: "source backlog", payments: "DLQ empty"}
    assert report.redriven == 2 and [m["Body"] for m in peek(aws)] == ["orders:1"]


def test_a_part_parks_another_sources_expiring_message_and_no_sweep_is_needed(
    aws: Aws, payments: str, clock: FakeClock
) -> None:
    # GIVEN messages of both sources near the end of the DLQ's retention, and payments' breaker open
    settings, redriver = near_retention_in_both_sources(aws, payments, clock)
    redriver.state.save_breaker(
        RecordKind.BREAKER.key(payments),
        Breaker().opened(int(clock.now), Evidence.RETURNS),
        expected_version=0,
    )

    # WHEN a run goes: orders' part reads the DLQ, payments' is SKIP
    report = redriver.run(REMAINING)

    # THEN orders' part parks payments' expiring message too, so no sweep is owed
    assert [(str(p.source), p.mode, p.parked) for p in sorted(report.parts, key=lambda p: str(p.source))] == [
        (aws.source_url, Mode.REDRIVE, 2),
        (payments, Mode.SKIP, 0),
    ]
    assert (report.expiring, depth(aws.sqs, aws.dlq_url)) == (2, 0)
    assert redriver.state.load_sweep_due(settings.sweep_key) == 0


def test_a_run_whose_parts_all_skip_sweeps_once_for_every_source(
    aws: Aws, payments: str, clock: FakeClock
) -> None:
    # GIVEN both breakers open, and a message of each source near the end of the DLQ's retention
    settings, redriver = near_retention_in_both_sources(aws, payments, clock)
    for url in (aws.source_url, payments):
        redriver.state.save_breaker(
            RecordKind.BREAKER.key(url),
            Breaker().opened(int(clock.now), Evidence.RETURNS),
            expected_version=0,
        )

    report = redriver.run(REMAINING)

    # THEN one sweep parks both, and records when the next is due
    assert [p.mode for p in report.parts] == [Mode.SKIP, Mode.SKIP]
    assert (report.received, report.parked, report.expiring, report.redriven) == (2, 2, 2, 0)
    assert depth(aws.sqs, aws.dlq_url) == 0 and redriver.state.load_sweep_due(settings.sweep_key) > clock.now
