"""Failure paths: a message leaves the DLQ only after it safely arrived somewhere else."""

from __future__ import annotations

from typing import Any

import pytest

from local_aws.clients import ClientProxy
from local_aws.queues import depth, drain, queue_counts
from sqs_redriver.core.breaker import Breaker, Evidence, State
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.protocol.mark import Mark
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings
from tests.support.factories import LONG_AGO, TEN_ATTRIBUTES, FakeClock, order_body
from tests.support.faults import Faults, client_error, raising


def fill_dlq(aws: Aws, count: int) -> None:
    for i in range(count):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body(f"o-{i}"))


def fail_entries(
    real: Any, failing_bodies: set[str], *, sender_fault: bool, code: str = "InternalError"
) -> Any:
    """A send_message_batch that reports the entries with these bodies as failed and sends the rest."""

    def send_message_batch(QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        passing = [e for e in Entries if e["MessageBody"] not in failing_bodies]
        failed = [
            {"Id": e["Id"], "SenderFault": sender_fault, "Code": code, "Message": "injected"}
            for e in Entries
            if e["MessageBody"] in failing_bodies
        ]
        response = real.send_message_batch(QueueUrl=QueueUrl, Entries=passing) if passing else {}
        return {"Successful": response.get("Successful", []), "Failed": failed}

    return send_message_batch


def test_a_message_whose_send_failed_stays_in_the_dlq(aws: Aws, clock: FakeClock) -> None:
    fill_dlq(aws, 3)
    sqs = ClientProxy(
        aws.sqs, send_message_batch=fail_entries(aws.sqs, {order_body("o-1")}, sender_fault=False)
    )

    report = make_redriver(aws, make_settings(aws), clock, sqs=sqs).run(REMAINING)

    assert (report.redriven, report.errors) == (2, 1)
    assert sorted(m["Body"] for m in drain(aws.sqs, aws.source_url)) == [order_body("o-0"), order_body("o-2")]
    assert depth(aws.sqs, aws.dlq_url) == 1


def test_nothing_is_deleted_when_the_whole_send_fails(aws: Aws, clock: FakeClock) -> None:
    fill_dlq(aws, 4)

    report = make_redriver(
        aws,
        make_settings(aws),
        clock,
        sqs=ClientProxy(aws.sqs, send_message_batch=raising("ThrottlingException", "SendMessageBatch")),
    ).run(REMAINING)

    assert (report.redriven, report.errors, report.stopped_because) == (0, 1, "AWS error")
    assert depth(aws.sqs, aws.dlq_url) == 4 and depth(aws.sqs, aws.source_url) == 0


def test_nothing_is_sent_when_the_state_table_write_fails(aws: Aws, clock: FakeClock) -> None:
    # GIVEN messages with no room for a mark: the table holds their count, so it must be written first
    for body in ("a", "b"):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body, MessageAttributes=TEN_ATTRIBUTES)

    dynamodb = ClientProxy(
        aws.dynamodb, batch_write_item=raising("ProvisionedThroughputExceededException", "BatchWriteItem")
    )
    report = make_redriver(aws, make_settings(aws), clock, dynamodb=dynamodb).run(REMAINING)

    assert (report.redriven, report.errors) == (0, 1)
    assert depth(aws.sqs, aws.dlq_url) == 2 and depth(aws.sqs, aws.source_url) == 0


def test_aws_errors_count_as_failed_runs_for_the_breaker(aws: Aws, clock: FakeClock) -> None:
    redriver = make_redriver(
        aws,
        make_settings(aws),
        clock,
        sqs=ClientProxy(aws.sqs, send_message_batch=raising("ThrottlingException", "SendMessageBatch")),
    )
    reports = []
    for _ in range(3):
        fill_dlq(aws, 1)
        reports.append(redriver.run(REMAINING))
        clock.advance(300)

    assert reports[-1].breaker_transitions == ["CLOSED->OPEN"]


def test_a_failed_delete_is_reported_and_the_message_is_not_lost(aws: Aws, clock: FakeClock) -> None:
    fill_dlq(aws, 2)

    def delete_fails(QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "Successful": [],
            "Failed": [{"Id": e["Id"], "SenderFault": False, "Code": "InternalError"} for e in Entries],
        }

    report = make_redriver(
        aws, make_settings(aws), clock, sqs=ClientProxy(aws.sqs, delete_message_batch=delete_fails)
    ).run(REMAINING)

    # Sent and still in the DLQ: a duplicate, never a loss; the next run sees them again.
    assert (report.redriven, report.errors) == (2, 2)
    assert depth(aws.sqs, aws.source_url) == 2 and depth(aws.sqs, aws.dlq_url) == 2


def test_a_message_the_source_queue_rejects_for_good_is_parked_with_the_reason(
    aws: Aws, clock: FakeClock
) -> None:
    fill_dlq(aws, 2)
    sqs = ClientProxy(
        aws.sqs,
        send_message_batch=_only_for(
            aws.source_url,
            fail_entries(aws.sqs, {order_body("o-0")}, sender_fault=True, code="InvalidParameterValue"),
            aws.sqs.send_message_batch,
        ),
    )

    report = make_redriver(aws, make_settings(aws), clock, sqs=sqs).run(REMAINING)

    assert (report.redriven, report.parked, report.errors) == (1, 1, 0)
    [parked] = drain(aws.sqs, aws.parking_lot_url)
    assert parked["Body"] == order_body("o-0")
    assert "InvalidParameterValue" in parked["MessageAttributes"]["dlq-redriver"]["StringValue"]
    assert depth(aws.sqs, aws.dlq_url) == 0


def _only_for(queue_url: str, faulty: Any, real: Any) -> Any:
    def send_message_batch(QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        return (faulty if QueueUrl == queue_url else real)(QueueUrl=QueueUrl, Entries=Entries)

    return send_message_batch


def test_a_stale_breaker_write_is_refused(aws: Aws, clock: FakeClock) -> None:
    state = make_redriver(aws, make_settings(aws), clock).state
    key = make_settings(aws).breaker_key
    first = Breaker()
    assert state.save_breaker(key, first.opened(1, Evidence.RETURNS), expected_version=0)

    # a second run that also read version 0 loses the race and changes nothing
    assert not state.save_breaker(key, first._next(failures=1), expected_version=0)
    assert state.load_breaker(key).state is State.OPEN


def test_overlapping_runs_move_the_breaker_once(aws: Aws, clock: FakeClock) -> None:
    settings = make_settings(aws)
    state = make_redriver(aws, settings, clock).state
    state.save_breaker(
        settings.breaker_key, Breaker().opened(int(clock.now), Evidence.RETURNS), expected_version=0
    )
    fill_dlq(aws, 3)
    clock.advance(61)

    # GIVEN two runs that both read the OPEN record before either wrote
    stale = state.load_breaker(settings.breaker_key)
    first = make_redriver(aws, settings, clock)
    second = make_redriver(aws, settings, clock)
    second.state.load_breaker = lambda key: stale  # type: ignore[method-assign]

    reports = [first.run(REMAINING), second.run(REMAINING)]

    # THEN only one moved it to HALF_OPEN and sent a canary
    assert sum(r.canaries for r in reports) == 1
    assert state.load_breaker(settings.breaker_key).state is State.HALF_OPEN
    assert depth(aws.sqs, aws.source_url) == 1


def test_a_failed_receive_loses_nothing_and_counts_as_an_error(aws: Aws, clock: FakeClock) -> None:
    fill_dlq(aws, 2)

    report = make_redriver(
        aws,
        make_settings(aws),
        clock,
        sqs=ClientProxy(aws.sqs, receive_message=raising("InternalError", "ReceiveMessage")),
    ).run(REMAINING)

    assert (report.received, report.errors) == (0, 1)
    assert depth(aws.sqs, aws.dlq_url) == 2


def test_an_unreadable_breaker_fails_the_invocation_before_touching_the_dlq(
    aws: Aws, clock: FakeClock
) -> None:
    fill_dlq(aws, 2)

    redriver = make_redriver(
        aws,
        make_settings(aws),
        clock,
        dynamodb=ClientProxy(aws.dynamodb, get_item=raising("InternalError", "GetItem")),
    )

    with pytest.raises(AwsCallError, match="GetItem"):
        redriver.run(REMAINING)
    assert depth(aws.sqs, aws.dlq_url) == 2 and depth(aws.sqs, aws.source_url) == 0


def test_copies_of_one_identity_in_a_batch_are_handled_one_per_run(aws: Aws, clock: FakeClock) -> None:
    # GIVEN two byte-identical messages without room for a mark: one content identity, one record
    for _ in range(2):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="same", MessageAttributes=TEN_ATTRIBUTES)
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("innocent"))
    redriver = make_redriver(aws, make_settings(aws), clock)

    first = redriver.run(REMAINING)
    second = redriver.run(REMAINING)

    # THEN no batch writes the same record twice (DynamoDB would refuse the whole batch)
    assert (first.redriven, first.errors, second.redriven, second.errors) == (2, 0, 1, 0)
    assert depth(aws.sqs, aws.dlq_url) == 0 and depth(aws.sqs, aws.source_url) == 3


def test_a_canary_whose_send_call_fails_reopens_the_breaker(aws: Aws, clock: FakeClock) -> None:
    settings = make_settings(aws, max_redrive_count=20)
    state = make_redriver(aws, settings, clock).state
    state.save_breaker(
        settings.breaker_key, Breaker().opened(int(clock.now), Evidence.RETURNS), expected_version=0
    )
    fill_dlq(aws, 2)
    clock.advance(61)

    report = make_redriver(
        aws,
        settings,
        clock,
        sqs=ClientProxy(aws.sqs, send_message_batch=raising("ServiceUnavailable", "SendMessageBatch")),
    ).run(REMAINING)

    assert report.breaker_transitions == ["OPEN->HALF_OPEN", "HALF_OPEN->OPEN"]
    assert state.load_breaker(settings.breaker_key).state is State.OPEN
    assert depth(aws.sqs, aws.dlq_url) == 2


def test_a_failed_send_does_not_advance_a_count_kept_in_the_table(aws: Aws, clock: FakeClock) -> None:
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="ten", MessageAttributes=TEN_ATTRIBUTES)
    settings = make_settings(aws, dlq_visibility_timeout_seconds=1)
    sqs = ClientProxy(aws.sqs, send_message_batch=fail_entries(aws.sqs, {"ten"}, sender_fault=False))
    make_redriver(aws, settings, clock, sqs=sqs).run(REMAINING)

    [record] = [
        i for i in aws.dynamodb.scan(TableName=aws.table_name)["Items"] if i["pk"]["S"].startswith("MSG#")
    ]

    assert record["redrive_count"] == {"N": "0"} and record["redriven_at"] == {"L": []}


def test_a_message_the_parking_lot_refuses_is_hidden_and_is_not_a_run_error(
    aws: Aws, clock: FakeClock
) -> None:
    mark = Mark("poison-1", 5, LONG_AGO, tuple(range(LONG_AGO + 1, LONG_AGO + 6)))
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody="poison",
        MessageAttributes={"dlq-redriver": {"DataType": "String", "StringValue": mark.to_json()}},
    )
    refuse = _only_for(
        aws.parking_lot_url,
        fail_entries(aws.sqs, {"poison"}, sender_fault=True, code="KMS.AccessDeniedException"),
        aws.sqs.send_message_batch,
    )

    report = make_redriver(
        aws, make_settings(aws), clock, sqs=ClientProxy(aws.sqs, send_message_batch=refuse)
    ).run(REMAINING)

    assert (report.parked, report.unparkable, report.errors) == (0, 1, 0)
    assert queue_counts(aws.sqs, aws.dlq_url).in_flight == 1


def test_a_failed_send_call_does_not_keep_other_calls_entries_from_being_deleted(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN two messages too big to share one SendMessageBatch (1 MiB per call)
    bodies = [c * 600_000 for c in "ab"]
    for body in bodies:
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)
    calls = []

    def second_call_fails(QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        calls.append(len(Entries))
        if len(calls) == 2:
            raise client_error("InternalError", "SendMessageBatch")
        return aws.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=Entries)

    report = make_redriver(
        aws, make_settings(aws), clock, sqs=ClientProxy(aws.sqs, send_message_batch=second_call_fails)
    ).run(REMAINING)

    assert calls == [1, 1]
    assert (report.redriven, report.errors, report.stopped_because) == (1, 1, "AWS error")
    assert depth(aws.sqs, aws.source_url) == 1 and depth(aws.sqs, aws.dlq_url) == 1


def test_a_message_whose_source_queue_no_longer_exists_is_parked_with_the_reason(
    aws: Aws, clock: FakeClock
) -> None:
    fill_dlq(aws, 2)
    aws.sqs.delete_queue(QueueUrl=aws.source_url)

    report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    assert (report.redriven, report.parked, report.errors) == (0, 2, 0)
    parked = drain(aws.sqs, aws.parking_lot_url)
    assert all(
        "source queue rejected it: AWS.SimpleQueueService.NonExistentQueue"
        in m["MessageAttributes"]["dlq-redriver"]["StringValue"]
        for m in parked
    )
    assert depth(aws.sqs, aws.dlq_url) == 0


def test_the_run_stops_taking_batches_before_its_time_runs_out(aws: Aws, clock: FakeClock) -> None:
    # GIVEN a run whose every AWS call takes 8 s of a 60 s invocation, with a 30 s margin
    fill_dlq(aws, 25)
    faults = Faults()
    redriver = make_redriver(aws, make_settings(aws, time_margin_seconds=30), clock, sqs=faults.wrap(aws.sqs))
    remaining_at_receive: list[int] = []

    def remaining_ms() -> int:
        left = 60_000 - 8_000 * len(faults.calls)
        remaining_at_receive.append(left)
        return left

    report = redriver.run(remaining_ms)

    assert report.stopped_because == "time budget" and 0 < report.received < 25
    assert min(remaining_at_receive[:-1]) >= 30_000  # every batch it took started with the margin left
    assert depth(aws.sqs, aws.dlq_url) == 25 - report.redriven
