"""A run of a large drain against moto: what its check before each batch does when DynamoDB fails,
and how a chain's run joins a drain, at its end or as soon as it reaches full rate
(runtime/workers.py). The drain's faults with several runs at
once are test_large_drain_faults.py's."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from local_aws.clients import ClientProxy
from local_aws.queues import depth
from sqs_redriver.core.table import Resume
from sqs_redriver.runtime.report import StopReason
from sqs_redriver.runtime.workers import new_drain
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings
from tests.support.factories import FakeClock


class ThrottledDrainReads(ClientProxy):
    """DynamoDB, but every BatchGetItem of a drain's record is throttled."""

    def batch_get_item(self, **request: Any) -> Any:
        [wanted] = request["RequestItems"].values()
        if any(key["pk"]["S"].startswith("DRAIN#") for key in wanted["Keys"]):
            error = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}
            raise ClientError(error, "BatchGetItem")  # type: ignore[arg-type]
        return self._client.batch_get_item(**request)


def test_a_failed_check_before_a_batch_stops_the_run_as_an_aws_error_and_gives_back_what_it_held(
    aws: Aws, clock: FakeClock
) -> None:
    for i in range(30):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"m-{i}")
    settings = make_settings(aws, max_workers=4, consumer_verdicts=True)
    state = make_redriver(aws, settings, clock).state
    state.save_drain(settings.drain_key, new_drain(settings, 30, int(clock())), expected_version=None)
    state.offer_continuation(settings.dlq_url, "t-1", stale_after=900)
    redriver = make_redriver(aws, settings, clock, dynamodb=ThrottledDrainReads(aws.dynamodb))

    report = redriver.run(REMAINING, Resume("t-1", generation=1, full_rate=True, drain=True))

    assert (report.stopped_because, report.redriven, report.errors) == ("AWS error", 0, 1)
    assert report.continue_with is None
    assert depth(aws.sqs, aws.dlq_url) == 30  # nothing held: all visible again


def test_a_chain_over_a_large_backlog_starts_a_drain_and_its_continuation_is_the_drains(
    aws: Aws, clock: FakeClock
) -> None:
    for i in range(80):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"m-{i}")
    settings = make_settings(
        aws,
        max_workers=4,
        fan_out_backlog=30,
        max_messages_per_run=20,
        consumer_verdicts=True,
        slow_start_seconds=3600,  # the first run never reaches full rate: it does not look early
    )
    redriver = make_redriver(aws, settings, clock)

    first = redriver.run(REMAINING)
    second = redriver.run(REMAINING, first.continue_with)
    started: list[Resume] = []
    third = redriver.run(REMAINING, second.continue_with, started.append)

    # the first run met its per-run limit: a DLQ that size exactly is the usual one, it does not look
    assert first.continue_with is not None and not first.continue_with.drain
    assert second.continue_with is not None and second.continue_with.drain
    assert third.drain is not None and third.drain.going and third.redriven == 20


def test_a_first_run_at_full_rate_over_a_large_backlog_stops_there_and_its_continuation_starts_the_drain(
    aws: Aws, clock: FakeClock
) -> None:
    for i in range(80):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"m-{i}")
    # No verdict comes (no consumer here): the trial's wait ends, and slow start follows time,
    # at full rate at once (slow_start_seconds 0)
    settings = make_settings(
        aws, max_workers=4, fan_out_backlog=30, max_messages_per_run=60, consumer_verdicts=True
    )
    redriver = make_redriver(aws, settings, clock)

    first = redriver.run(REMAINING)
    second = redriver.run(REMAINING, first.continue_with)

    # it stopped at its first look, with the trial's messages out, not at its limit of 60
    assert (first.stopped_because, first.full_rate) == (StopReason.LARGE_BACKLOG, True)
    assert 0 < first.redriven < 20
    assert first.continue_with is not None and first.continue_with.drain
    assert second.drain is not None and second.drain.going  # its first run, slot 0, stepped the pace
    assert second.drain.stepped_at >= second.drain.started_at


def test_without_workers_a_first_run_over_a_large_backlog_does_not_look_early(
    aws: Aws, clock: FakeClock
) -> None:
    for i in range(80):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"m-{i}")
    settings = make_settings(aws, max_workers=4, fan_out_backlog=30, max_messages_per_run=60)

    first = make_redriver(aws, settings, clock).run(REMAINING)

    # no kit: no drain, the run goes to its limit as before
    assert (first.stopped_because, first.redriven) == (StopReason.PER_RUN_LIMIT, 60)
    assert first.continue_with is not None and not first.continue_with.drain
