"""The operator's pause against moto: every run honours it before it touches the DLQ or the
breaker; only the retention guard still parks what SQS is about to delete."""

from __future__ import annotations

import logging

import pytest

from local_aws.queues import depth, make_visible
from sqs_redriver.core.breaker import Breaker, BreakerPolicy, State
from sqs_redriver.core.table import Pause, StateTable
from sqs_redriver.runtime.settings import Settings
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings
from tests.support.factories import FakeClock, order_body


def table(aws: Aws) -> StateTable:
    return StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60)


def pause(aws: Aws, settings: Settings, clock: FakeClock) -> None:
    table(aws).save_pause(
        settings.pause_key, Pause(reason="consumer fix deploying", by="alice", at=int(clock.now))
    )


def test_a_paused_run_touches_neither_the_dlq_nor_the_breaker_and_says_who_paused(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(aws)
    for i in range(3):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body(f"o-{i}"))
    pause(aws, settings, clock)

    with caplog.at_level(logging.WARNING):
        report = make_redriver(aws, settings, clock).run(REMAINING)

    # (the retention sweep, due at the first run, read the DLQ and gave every message back)
    assert (report.redriven, report.parked, report.stopped_because) == (0, 0, "paused")
    assert report.continue_with is None
    assert depth(aws.sqs, aws.dlq_url) == 3 and depth(aws.sqs, aws.source_url) == 0
    [warning] = [r for r in caplog.records if r.getMessage() == "re-drives paused by an operator"]
    assert (warning.by, warning.reason) == ("alice", "consumer fix deploying")  # type: ignore[attr-defined]


def test_a_pause_keeps_an_open_breaker_open_past_its_cooldown(aws: Aws, clock: FakeClock) -> None:
    settings = make_settings(aws, breaker=BreakerPolicy(cooldown_seconds=60))
    table(aws).save_breaker(
        settings.breaker_key, Breaker(State.OPEN, changed_at=int(clock.now), version=1), expected_version=0
    )
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))
    pause(aws, settings, clock)
    clock.advance(61)

    report = make_redriver(aws, settings, clock).run(REMAINING)

    assert (report.breaker_state, report.canaries, report.breaker_transitions) == (State.OPEN, 0, [])
    assert table(aws).load_breaker(settings.breaker_key).version == 1


def test_after_resume_the_next_run_redrives(aws: Aws, clock: FakeClock) -> None:
    settings = make_settings(aws)
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))
    pause(aws, settings, clock)
    redriver = make_redriver(aws, settings, clock)
    assert redriver.run(REMAINING).redriven == 0

    table(aws).clear_pause(settings.pause_key)

    assert redriver.run(REMAINING).redriven == 1
    assert depth(aws.sqs, aws.dlq_url) == 0


def test_while_paused_the_retention_guard_still_parks_what_is_about_to_expire(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN a DLQ retention of 600 s, a margin of 120 s, a message 500 s old, and a pause
    aws.sqs.set_queue_attributes(QueueUrl=aws.dlq_url, Attributes={"MessageRetentionPeriod": "600"})
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("old"))
    settings = make_settings(aws, expiry_margin_seconds=120)
    pause(aws, settings, clock)
    clock.advance(500)

    report = make_redriver(aws, settings, clock).run(REMAINING)

    # THEN the sweep parked it, and re-drove nothing
    assert (report.stopped_because, report.parked, report.expiring, report.redriven) == ("paused", 1, 1, 0)
    make_visible(aws.dlq_url)
    assert depth(aws.sqs, aws.dlq_url) == 0 and depth(aws.sqs, aws.parking_lot_url) == 1
