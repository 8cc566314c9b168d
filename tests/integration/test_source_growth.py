"""A chain over a large backlog to a consumer without the kit, on moto with a clock the test moves
(runtime/source_growth.py): it stops when the source queue is not deleting what it sends, keeps its
baseline across runs and ticks, lets it go after the source's redrive window, and re-drives with
only what is left of each message's backoff step. A corrupt or unreadable baseline never stops it."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from local_aws.clients import ClientProxy
from local_aws.queues import queue_counts
from sqs_redriver.core.source_growth import Baseline, baseline_from_item, baseline_item
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.runtime.report import StopReason
from tests.support.aws import (
    REMAINING,
    SOURCE_VISIBILITY_TIMEOUT,
    Aws,
    make_redriver,
    make_settings,
    stored_item,
)
from tests.support.factories import FakeClock

WINDOW = 60  # the source's redrive window here: visibility timeout 30 s x maxReceiveCount 2


def dead_letters(aws: Aws, count: int) -> None:
    for i in range(count):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"m-{i}")


def consumer_takes_and_never_deletes(aws: Aws) -> int:
    """A broken consumer: it receives every visible message of the source and deletes none (they
    stay in flight, ApproximateNumberOfMessagesNotVisible)."""
    taken = 0
    while batch := aws.sqs.receive_message(
        QueueUrl=aws.source_url, MaxNumberOfMessages=10, VisibilityTimeout=3600
    ).get("Messages", []):
        taken += len(batch)
    return taken


def settings_for(aws: Aws, **overrides: Any) -> Any:
    values: dict[str, Any] = {
        "fan_out_backlog": 50,  # a large backlog here
        "source_backlog_limit": 20,
        "max_messages_per_run": 100,
    }
    return make_settings(aws, **{**values, **overrides})


def baseline_of(aws: Aws, clock: FakeClock) -> Any:
    item = stored_item(aws, RecordKind.BACKLOG.key(aws.source_url))
    return None if item is None else baseline_from_item(item, now=int(clock()))


def test_a_chain_stops_when_its_source_does_not_delete_and_a_tick_keeps_the_baseline(
    aws: Aws, clock: FakeClock
) -> None:
    dead_letters(aws, 300)
    redriver = make_redriver(aws, settings_for(aws), clock)

    first = redriver.run(REMAINING)  # the tick's run: its per-run limit, then its continuation
    assert (first.stopped_because, first.redriven) == (StopReason.PER_RUN_LIMIT, 100)
    assert baseline_of(aws, clock).depth == 0  # the source's depth when the chain began
    assert consumer_takes_and_never_deletes(aws) == 100

    clock.advance(1)
    second = redriver.run(REMAINING, first.continue_with)  # nothing visible: only the growth shows
    assert (second.stopped_because, second.redriven, second.continue_with) == (
        StopReason.SOURCE_BACKLOG,
        0,
        None,
    )

    clock.advance(30)  # the schedule's next tick, inside the window: the baseline is kept
    tick = redriver.run(REMAINING)
    assert (tick.stopped_because, tick.redriven) == (StopReason.SOURCE_BACKLOG, 0)
    assert baseline_of(aws, clock).depth == 0
    assert queue_counts(aws.sqs, aws.dlq_url).visible == 200

    clock.advance(WINDOW)  # past the window: the growth still there is taken as live traffic's
    later = redriver.run(REMAINING)
    assert (later.stopped_because, later.redriven) == (StopReason.PER_RUN_LIMIT, 100)
    assert baseline_of(aws, clock).depth == 100


def test_a_small_dlq_is_re_driven_as_before_whatever_its_source_holds(aws: Aws, clock: FakeClock) -> None:
    for i in range(30):
        aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=f"live-{i}")
    consumer_takes_and_never_deletes(aws)  # 30 in flight, over the limit of a held baseline of 0
    key = RecordKind.BACKLOG.key(aws.source_url)
    held = Baseline(depth=0, since=int(clock()), until=int(clock()) + WINDOW)
    aws.dynamodb.put_item(TableName=aws.table_name, Item=baseline_item(key, held))
    dead_letters(aws, 40)  # under FAN_OUT_BACKLOG: the growth is not looked at
    redriver = make_redriver(aws, settings_for(aws), clock)

    report = redriver.run(REMAINING)

    assert (report.stopped_because, report.redriven) == (StopReason.DLQ_EMPTY, 40)
    consumer_takes_and_never_deletes(aws)
    dead_letters(aws, 60)  # over it, the same source stops the chain at its first look
    assert redriver.run(REMAINING).stopped_because is StopReason.SOURCE_BACKLOG


def test_over_a_large_backlog_a_re_drive_waits_only_what_is_left_of_its_step(
    aws: Aws, clock: FakeClock
) -> None:
    dead_letters(aws, 60)
    clock.advance(3600)  # the dead letters waited their first step out in the DLQ
    delayed = {"base_delay_seconds": 60, "max_delay_seconds": 900}
    make_redriver(aws, settings_for(aws, **delayed), clock).run(REMAINING)
    large = queue_counts(aws.sqs, aws.source_url)
    assert (large.visible, large.delayed) == (60, 0)


def test_a_small_dlqs_re_drive_keeps_its_full_first_step(aws: Aws, clock: FakeClock) -> None:
    dead_letters(aws, 60)
    clock.advance(3600)
    delayed = {"base_delay_seconds": 60, "max_delay_seconds": 900, "fan_out_backlog": 1000}
    make_redriver(aws, settings_for(aws, **delayed), clock).run(REMAINING)
    small = queue_counts(aws.sqs, aws.source_url)
    assert (small.visible, small.delayed) == (0, 60)


class ThrottledBaselines(ClientProxy):
    """DynamoDB, but every read of a growth baseline is throttled."""

    def get_item(self, **request: Any) -> Any:
        if request["Key"]["pk"]["S"].startswith(RecordKind.BACKLOG.value):
            error = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}
            raise ClientError(error, "GetItem")  # type: ignore[arg-type]
        return self._client.get_item(**request)


def test_an_unreadable_baseline_lets_the_run_go_on(aws: Aws, clock: FakeClock) -> None:
    dead_letters(aws, 60)
    settings = settings_for(aws)
    redriver = make_redriver(aws, settings, clock, dynamodb=ThrottledBaselines(aws.dynamodb))

    report = redriver.run(REMAINING)

    assert (report.stopped_because, report.redriven, report.errors) == (StopReason.DLQ_EMPTY, 60, 0)


def test_a_corrupt_baseline_is_overwritten_by_the_depth_now_and_the_run_goes_on(
    aws: Aws, clock: FakeClock
) -> None:
    dead_letters(aws, 60)
    key = RecordKind.BACKLOG.key(aws.source_url)
    aws.dynamodb.put_item(TableName=aws.table_name, Item={"pk": {"S": key}, "depth": {"S": "many"}})

    report = make_redriver(aws, settings_for(aws), clock).run(REMAINING)

    assert (report.stopped_because, report.redriven) == (StopReason.DLQ_EMPTY, 60)
    assert baseline_of(aws, clock).depth == 0


assert SOURCE_VISIBILITY_TIMEOUT * 2 == WINDOW
