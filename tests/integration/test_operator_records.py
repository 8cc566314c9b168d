"""The records the operator's tool shares with the re-driver, against moto: failure groups an
operator parks or retries, the run history, and the replay history in a message's mark."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from botocore.exceptions import ClientError

from local_aws.clients import ClientProxy
from local_aws.queues import depth, drain
from sqs_redriver.core.table import (
    RUN_HISTORY_LENGTH,
    GroupAction,
    GroupMark,
    MessageRecord,
    Pause,
    RecordStatus,
    Resume,
    RunSummary,
    StateTable,
)
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.keys import RecordKind, kit_record_key
from sqs_redriver.protocol.mark import Mark
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings, stored_item
from tests.support.factories import FakeClock, order_body
from tests.support.faults import Fault, Faults


def table(aws: Aws, dynamodb: Any = None) -> StateTable:
    return StateTable(aws.table_name, dynamodb or aws.dynamodb, ttl_seconds=3600, kit_scope=aws.dlq_url)


def send_failed(
    aws: Aws, clock: FakeClock, order: str, kind: FailureKind, fingerprint: str, **mark: Any
) -> None:
    """A message the consumer kit dead-lettered with a ``kind`` failure of ``fingerprint``."""
    now = int(clock.now)
    failure = Failure(kind, "orders.Timeout", f"order {order} failed", fingerprint, now, 1, "arn:aws:sqs:src")
    text = Mark(f"id-{order}", first_failed_at=now, failure=failure, **mark).to_json()
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=order_body(order),
        MessageAttributes={MARK_ATTRIBUTE: string_attribute(text)},
    )


def marks_in(aws: Aws, queue_url: str) -> dict[str, dict[str, Any]]:
    """The marks of the messages in a queue, by body's order id."""
    return {
        json.loads(m["Body"])["order_id"]: json.loads(m["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
        for m in drain(aws.sqs, queue_url)
    }


# -- failure groups -------------------------------------------------------------------------------


def test_a_transient_failure_of_a_group_an_operator_parked_is_parked_saying_by_whom_and_why(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN two transient failures of different groups, and an operator's park of one group
    send_failed(aws, clock, "o-bad", FailureKind.TRANSIENT, "fp-bad")
    send_failed(aws, clock, "o-ok", FailureKind.TRANSIENT, "fp-other")
    table(aws).save_group_mark(GroupMark("fp-bad", GroupAction.PARK, "bug 42: fix deploying", "alice", 1))

    report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    # THEN that group's message is parked with cause operator, the other one re-driven
    assert (report.parked, report.redriven, report.returned) == (1, 1, 0)
    parked = marks_in(aws, aws.parking_lot_url)["o-bad"]["parked"]
    assert parked["cause"] == "operator"
    assert parked["why"].startswith("an operator parked its failure group (by alice: bug 42: fix deploying)")
    assert "fingerprint fp-bad" in parked["why"]
    assert list(marks_in(aws, aws.source_url)) == ["o-ok"]


def test_a_terminal_failure_of_a_group_marked_for_retry_is_redriven(aws: Aws, clock: FakeClock) -> None:
    send_failed(aws, clock, "o-1", FailureKind.TERMINAL, "fp-fixed")
    send_failed(aws, clock, "o-2", FailureKind.TERMINAL, "fp-broken")
    table(aws).save_group_mark(GroupMark("fp-fixed", GroupAction.RETRY, "fixed in 1.2.3", "bob", 1))

    report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    assert (report.redriven, report.parked) == (1, 1)
    assert list(marks_in(aws, aws.source_url)) == ["o-1"]
    assert marks_in(aws, aws.parking_lot_url)["o-2"]["parked"]["cause"] == "terminal"


def test_saving_a_groups_mark_replaces_its_other_action_and_clearing_removes_both(aws: Aws) -> None:
    state = table(aws)
    retry = GroupMark("fp-1", GroupAction.RETRY, "fixed", "bob", 100)
    park = GroupMark("fp-1", GroupAction.PARK, "not fixed after all", "alice", 200)

    state.save_group_mark(retry)
    assert state.load_group_marks(["fp-1", "fp-2"]) == {"fp-1": retry}

    state.save_group_mark(park)
    assert state.load_group_marks(["fp-1"]) == {"fp-1": park}
    assert stored_item(aws, RecordKind.RETRY.key("fp-1")) is None
    assert stored_item(aws, RecordKind.PARK.key("fp-1")) == {
        "pk": {"S": "PARK#fp-1"},
        "fingerprint": {"S": "fp-1"},
        "reason": {"S": "not fixed after all"},
        "by": {"S": "alice"},
        "at": {"N": "200"},
    }

    state.save_group_mark(retry)
    assert state.load_group_marks(["fp-1"]) == {"fp-1": retry}
    assert stored_item(aws, RecordKind.PARK.key("fp-1")) is None

    state.clear_group_mark("fp-1")
    assert state.load_group_marks(["fp-1"]) == {}
    assert stored_item(aws, RecordKind.RETRY.key("fp-1")) is None


def test_a_group_with_both_records_put_by_hand_is_parked_and_it_is_logged(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    for key in (RecordKind.RETRY.key("fp-1"), RecordKind.PARK.key("fp-1")):
        aws.dynamodb.put_item(TableName=aws.table_name, Item={"pk": {"S": key}})

    with caplog.at_level(logging.WARNING):
        marks = table(aws).load_group_marks(["fp-1"])

    assert marks == {"fp-1": GroupMark("fp-1", GroupAction.PARK)}
    [warning] = [r for r in caplog.records if "both for retry and for parking" in r.getMessage()]
    assert warning.fingerprint == "fp-1"  # type: ignore[attr-defined]


# -- run history ----------------------------------------------------------------------------------


def test_every_run_is_recorded_newest_first_and_the_history_keeps_the_last_twenty(
    aws: Aws, clock: FakeClock
) -> None:
    settings = make_settings(aws)
    redriver = make_redriver(aws, settings, clock)
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))
    first = int(clock.now)

    for _ in range(RUN_HISTORY_LENGTH + 2):
        redriver.run(REMAINING)
        clock.advance(60)

    runs = [RunSummary.from_dict(run) for run in table(aws).load_runs(settings.runs_key)]
    assert len(runs) == RUN_HISTORY_LENGTH
    assert [run.at for run in runs] == [first + 60 * i for i in range(RUN_HISTORY_LENGTH + 1, 1, -1)]
    assert {run.sources[settings.source_queue_url] for run in runs} == {"CLOSED"}
    assert not any(run.paused or run.continuation for run in runs)


def test_the_history_line_of_a_run_has_its_counts_and_mode(aws: Aws, clock: FakeClock) -> None:
    settings = make_settings(aws)
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))

    report = make_redriver(aws, settings, clock).run(REMAINING)

    [run] = table(aws).load_runs(settings.runs_key)
    assert report.redriven == 1
    assert (run["mode"], run["redriven"], run["received"], run["stopped_because"]) == (
        "REDRIVE",
        1,
        1,
        "DLQ empty",
    )
    assert run["at"] == int(clock.now) and run["duration_ms"] >= 0


def test_a_paused_run_and_a_continuation_are_recorded_as_such(aws: Aws, clock: FakeClock) -> None:
    settings = make_settings(aws)
    state = table(aws)
    redriver = make_redriver(aws, settings, clock)
    state.offer_continuation(settings.dlq_url, "token-1", stale_after=900)
    redriver.run(REMAINING, Resume(token="token-1", generation=1, full_rate=False))

    state.save_pause(settings.pause_key, Pause(reason="deploying", by="alice", at=int(clock.now)))
    redriver.run(REMAINING)

    paused, continued = (RunSummary.from_dict(run) for run in state.load_runs(settings.runs_key))
    assert (paused.paused, paused.continuation, paused.stopped_because) == (True, False, "paused")
    assert (continued.paused, continued.continuation) == (False, True)


def test_a_history_that_cannot_be_written_neither_fails_the_run_nor_changes_its_result(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a table whose PutItem of the run history fails (throttled)
    settings = make_settings(aws)

    def put_item(**kwargs: Any) -> Any:
        if kwargs["Item"]["pk"]["S"] == settings.runs_key:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "injected"}}, "PutItem")
        return aws.dynamodb.put_item(**kwargs)

    dynamodb = ClientProxy(aws.dynamodb, put_item=put_item)
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))

    with caplog.at_level(logging.WARNING):
        report = make_redriver(aws, settings, clock, dynamodb=dynamodb).run(REMAINING)

    # THEN the run re-drove as usual, counted no error, and said the history was not written
    assert (report.redriven, report.errors, report.stopped_because) == (1, 0, "DLQ empty")
    assert depth(aws.sqs, aws.source_url) == 1
    assert table(aws).load_runs(settings.runs_key) == []
    assert [r for r in caplog.records if r.getMessage() == "run history not recorded"]


# -- replays and the marks the table keeps --------------------------------------------------------


def test_a_replayed_messages_mark_keeps_its_replays_through_a_redrive(aws: Aws, clock: FakeClock) -> None:
    now = int(clock.now)
    replays = ((now - 600, 5), (now - 60, 3))
    send_failed(aws, clock, "o-1", FailureKind.TRANSIENT, "fp-1", replays=replays)

    assert make_redriver(aws, make_settings(aws), clock).run(REMAINING).redriven == 1

    mark = marks_in(aws, aws.source_url)["o-1"]
    assert mark["rp"] == [list(replay) for replay in replays]
    assert Mark.from_json(json.dumps(mark)).replays == replays


def test_forget_marks_deletes_the_records_of_those_identities_only(aws: Aws, clock: FakeClock) -> None:
    # GIVEN 30 message records (more than one BatchWriteItem holds)
    records = [
        MessageRecord(Mark(f"sha256:{i}", 3, 1, (2, 3, 4)), RecordStatus.PARKED, aws.source_url)
        for i in range(30)
    ]
    table(aws).save_records(records)
    # and the consumer kit's failure record of one of them (load_marks would make a mark of it)
    failure = Failure(FailureKind.TERMINAL, "E", "m", "fp", 5, 1, aws.source_arn)
    aws.dynamodb.put_item(
        TableName=aws.table_name,
        Item={
            "pk": {"S": kit_record_key(RecordKind.FAILURE, aws.dlq_url, "sha256:5")},
            "failure": {"S": json.dumps(failure.to_dict())},
        },
    )
    forgotten = [f"sha256:{i}" for i in range(28)]
    # WHEN the first write's items all come back unprocessed once
    faults = Faults(plan={1: Fault.PARTIAL})

    table(aws, faults.wrap(aws.dynamodb)).forget_marks(forgotten)

    # 56 deletes (the message and failure record of each): writes of 25, 25 and 6, and one retry
    assert faults.calls == ["batch_write_item"] * 4 and faults.fired
    assert sorted(table(aws).load_marks(f"sha256:{i}" for i in range(30))) == ["sha256:28", "sha256:29"]
