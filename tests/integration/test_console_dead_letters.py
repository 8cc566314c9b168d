"""The operator's tool on a re-driver whose DLQ is of another kind (a Lambda function's
asynchronous failures, an EventBridge rule target's), on moto: ``show`` and ``groups`` read each
message as its dead letter, ``replay`` and ``edit`` deliver its payload to its source's one target
and only then delete it from the DLQ, a record whose payload Lambda dropped is refused with the
reason, ``outcome`` follows what was sent, the audit trail names the target, and a dead letter a
real run parked is shown with the reason and count its state table record holds (or, with none
readable, as parked with the reason not recorded).

moto cannot run a function's code: the function is played (``PlayedFunction`` records each
asynchronous invocation, as Lambda accepts it with 202), as tests/integration/test_dead_letter_redrive.py
plays it for the runs. The re-driver is found as the operator finds it, in its stack's output."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import boto3
import click
import pytest
from typer.testing import CliRunner

from local_aws import REGION
from local_aws.compose import local_redriver
from local_aws.queues import queue_counts
from local_aws.resources import create_table
from sqs_redriver.console.cli import app
from sqs_redriver.console.editing import document_of, edit_and_retry, edited_identity
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.console.outcomes import Fate, clock_time, find, judge_replay, snapshot
from sqs_redriver.console.replay import MoveReport, choose, parse_selection, replay_chosen
from sqs_redriver.console.tool import Connection, Deployment, Target, Tool, find_message, read_all
from sqs_redriver.core.breaker import Breaker, Evidence
from sqs_redriver.core.table import MessageRecord, RecordStatus, StateTable
from sqs_redriver.protocol.dead_letters import compact_json
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, invocation_trip, string_attribute
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from sqs_redriver.protocol.sources import DeadLetterSource
from tests.support.aws import Aws, make_settings
from tests.support.console import console_app, get, signed_in
from tests.support.dead_letters import (
    FUNCTION_ARN,
    FUNCTION_SOURCE,
    RULE_TARGET_SOURCE,
    AwsDeadLetter,
    destination_record,
    function_dlq_message,
    rule_event,
    rule_target_dlq_message,
)
from tests.support.factories import FakeClock

STACK = "Shop"
AUDIT_LOG_GROUP = "orders-redriver-audit"
ORDER = {"order": "o-1", "items": 0}
# Past a function source's return window (3 attempts of 180 s, and one more).
AN_HOUR = 3_600


class PlayedFunction:
    """The ``lambda`` client a replay invokes the function through: each asynchronous invocation
    recorded, answered 202 with its request id as Lambda does (it runs the function later, and a
    failure of it comes back under that id). ``meta`` is what the tool registers its clock
    reading on."""

    def __init__(self) -> None:
        self.invoked: list[tuple[str, Any]] = []
        self.request_ids: list[str] = []
        self.meta = SimpleNamespace(events=SimpleNamespace(register=lambda *_args, **_kwargs: None))

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803
        assert InvocationType == "Event", "a dead letter goes back as an asynchronous invocation"
        self.invoked.append((FunctionName, json.loads(Payload)))
        self.request_ids.append(f"request-{len(self.request_ids) + 1}")
        return {"StatusCode": 202, "ResponseMetadata": {"RequestId": self.request_ids[-1]}}


@pytest.fixture
def function(monkeypatch: pytest.MonkeyPatch) -> Iterator[PlayedFunction]:
    """Every tool's ``lambda`` client is the played function; the other services are moto's."""
    played = PlayedFunction()
    real = Connection.client

    def client(self: Connection, service: str, **options: Any) -> Any:
        return played if service == "lambda" else real(self, service, **options)

    monkeypatch.setattr(Connection, "client", client)
    yield played


def deploy(aws: Aws, *sources: DeadLetterSource | dict[str, Any]) -> None:
    """Stack ``Shop`` with a re-driver of ``sources`` in its output (a dict: a source as written)."""
    deployment = Deployment(
        "Shop/Orders/Redriver",
        aws.dlq_url,
        (),
        aws.parking_lot_url,
        aws.table_name,
        archive_bucket=aws.archive_bucket,
        audit_log_group=AUDIT_LOG_GROUP,
    )
    output = json.loads(deployment.to_json())
    output["dead_letter_sources"] = [s.to_json() if isinstance(s, DeadLetterSource) else s for s in sources]
    template = {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"Redriver": {"Value": json.dumps(output), "Description": OUTPUT_DESCRIPTION}},
    }
    boto3.client("cloudformation").create_stack(StackName=STACK, TemplateBody=json.dumps(template))
    boto3.client("logs").create_log_group(logGroupName=AUDIT_LOG_GROUP)


def sqs_redriver(*args: str) -> Any:
    return CliRunner().invoke(app, ["--stack", STACK, *args])


def operator(clock: list[float]) -> Tool:
    """The library over the stack's re-driver, on ``clock``."""
    return Tool(Connection(region=REGION), Target(stack=STACK), clock=lambda: clock[0])


def put(aws: Aws, *dead_letters: AwsDeadLetter) -> list[str]:
    """Into the DLQ as AWS writes them; their MessageIds."""
    return [
        aws.sqs.send_message(QueueUrl=aws.dlq_url, **dead_letter.send_kwargs())["MessageId"]
        for dead_letter in dead_letters
    ]


def flat(text: str) -> str:
    """What the terminal printed, its lines joined (rich wraps long ones)."""
    return " ".join(text.split())


def in_dlq(aws: Aws) -> int:
    return queue_counts(aws.sqs, aws.dlq_url).total


def test_show_says_a_function_s_dead_letter_source_cause_request_and_payload(
    aws: Aws, function: PlayedFunction
) -> None:
    deploy(aws, FUNCTION_SOURCE)
    [message_id] = put(aws, destination_record(f"{FUNCTION_ARN}:$LATEST", ORDER, request_id="r-1"))

    shown = sqs_redriver("show", message_id)
    data = json.loads(sqs_redriver("show", message_id, "--json").stdout)

    assert shown.exit_code == 0, shown.output
    for line in ("source kind  lambda (orders)", f"target       lambda {FUNCTION_ARN}", "request id   r-1"):
        assert line in shown.stdout
    assert "cause        ValueError: the order has no items" in shown.stdout
    assert "replayable   yes" in shown.stdout
    assert '{"order":"o-1","items":0}' in shown.stdout  # the payload: the event, not the record
    dead_letter = data["dead_letter"]
    assert dead_letter["source"]["address"] == FUNCTION_ARN and dead_letter["source"]["kind"] == "lambda"
    assert dead_letter["cause"] == {"code": "ValueError", "message": "the order has no items"}
    assert (dead_letter["request_id"], dead_letter["replayable"]) == ("r-1", True)
    assert json.loads(dead_letter["payload"]) == ORDER
    assert data["group"] == "dead-letter:orders:ValueError"


def test_show_says_why_a_record_whose_payload_lambda_dropped_cannot_go_back(
    aws: Aws, function: PlayedFunction
) -> None:
    deploy(aws, FUNCTION_SOURCE)
    [message_id] = put(aws, destination_record(FUNCTION_ARN, ORDER, request_id="r-big", dropped=True))

    data = json.loads(sqs_redriver("show", message_id, "--json").stdout)["dead_letter"]

    assert (data["replayable"], data["payload"]) == (False, None)
    assert data["unreplayable_because"] == (
        "its source dropped the payload (request r-big): there is nothing to deliver again"
    )


def test_groups_are_a_dead_letter_s_source_and_the_cause_it_gave(aws: Aws, function: PlayedFunction) -> None:
    deploy(aws, FUNCTION_SOURCE)
    put(
        aws,
        destination_record(FUNCTION_ARN, {"order": "o-1"}),
        destination_record(FUNCTION_ARN, {"order": "o-2"}),
        destination_record(FUNCTION_ARN, {"order": "o-3"}, error_type="KeyError", error_message="'sku'"),
        function_dlq_message({"order": "o-4"}, error_code=429, error_message="Rate Exceeded."),
    )

    result = sqs_redriver("groups", "--queue", "dlq", "--json")

    found = {
        group["group"]: (group["count"], group["label"], group["sources"])
        for group in json.loads(result.stdout)
    }
    assert found == {
        "dead-letter:orders:ValueError": (2, "ValueError: the order has no items", [FUNCTION_ARN]),
        "dead-letter:orders:KeyError": (1, "KeyError: 'sku'", [FUNCTION_ARN]),
        "dead-letter:orders:429": (1, "429: Rate Exceeded.", [FUNCTION_ARN]),
    }


def test_a_replayed_dead_letter_goes_to_its_function_alone_and_leaves_the_dlq(
    aws: Aws, function: PlayedFunction
) -> None:
    deploy(aws, FUNCTION_SOURCE)
    put(aws, destination_record(FUNCTION_ARN, ORDER), function_dlq_message({"order": "o-2"}))

    result = sqs_redriver("replay", "--from", "dlq", "--all", "--yes")

    assert result.exit_code == 0, result.output
    assert sorted(function.invoked, key=str) == sorted(
        [(FUNCTION_ARN, ORDER), (FUNCTION_ARN, {"order": "o-2"})], key=str
    )
    assert in_dlq(aws) == 0
    [replay] = json.loads(sqs_redriver("audit", "--json").stdout)
    assert replay["action"] == "replay" and replay["count"] == 2
    assert replay["details"]["to"] == f"each source's target: {FUNCTION_ARN}"


def test_a_record_whose_payload_lambda_dropped_is_left_in_the_dlq_with_the_reason(
    aws: Aws, function: PlayedFunction
) -> None:
    deploy(aws, FUNCTION_SOURCE)
    [dropped] = put(aws, destination_record(FUNCTION_ARN, ORDER, request_id="r-big", dropped=True))

    replayed = sqs_redriver("replay", "--from", "dlq", "--all", "--yes")
    edited = sqs_redriver("edit", dropped, "--yes")

    assert replayed.exit_code == 1
    assert f"left in place {dropped}: not replayable: its source dropped the payload (request r-big)" in flat(
        replayed.stdout
    )
    assert edited.exit_code == 2 and "Traceback" not in edited.output
    assert "cannot be edited and sent back: its source dropped the payload" in flat(edited.stderr)
    assert function.invoked == []
    assert in_dlq(aws) == 1


def test_an_edited_payload_goes_to_the_function_and_its_outcome_follows_the_edit(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN a function's failure, edited to the order it should have been
    deploy(aws, FUNCTION_SOURCE)
    put(aws, destination_record(FUNCTION_ARN, ORDER, request_id="r-1"))
    clock = [time.time() - AN_HOUR]
    tool = operator(clock)
    item = only_one(read_all(tool, Where.DLQ).items)
    # Written as the operator typed it: Lambda's record of it will say 1.5.
    document = '{"body": {"order": "o-1", "items": 1.50}, "attributes": {}}'
    fixed = {"order": "o-1", "items": 1.5}

    # WHEN it is edited and retried
    report = edit_and_retry(tool, item, document)

    # THEN the function gets the edited event, the DLQ loses the record, the original is archived
    assert report.clean, report.summary()
    assert function.invoked == [(FUNCTION_ARN, fixed)]
    assert in_dlq(aws) == 0
    assert report.source_queue == FUNCTION_ARN
    archived = aws.s3.get_object(Bucket=aws.archive_bucket, Key=report.archive_key)["Body"].read()
    assert json.loads(archived)["body"] == item.message.body
    # AND when the function fails it again, Lambda's new record is found as the edit's
    put(aws, destination_record(FUNCTION_ARN, fixed, request_id="r-2", error_type="TimeoutError"))
    assert report.replay_id is not None
    record = find(tool, report.replay_id)
    [sent] = record.sent
    back = only_one(read_all(tool, Where.DLQ).items)
    assert sent.identity == back.identity == edited_identity(item, compact_json(fixed)) != item.identity
    clock[0] += AN_HOUR
    assert judge_replay(tool, record, snapshot(tool)).judged[0].fate is Fate.BACK_UNCLASSIFIED


def test_edit_on_the_command_line_sends_the_payload_as_edited_to_the_function(
    aws: Aws, function: PlayedFunction, monkeypatch: pytest.MonkeyPatch
) -> None:
    deploy(aws, FUNCTION_SOURCE)
    [message_id] = put(aws, destination_record(FUNCTION_ARN, ORDER))
    monkeypatch.setattr(click, "edit", lambda text, **_options: text.replace('"items": 0', '"items": 2'))

    result = sqs_redriver("edit", message_id, "--yes")

    assert result.exit_code == 0, result.output
    assert function.invoked == [(FUNCTION_ARN, {"order": "o-1", "items": 2})]
    assert f"edited and sent to {FUNCTION_ARN}" in flat(result.stdout)
    assert in_dlq(aws) == 0
    [edit] = json.loads(sqs_redriver("audit", "--json").stdout)
    assert (edit["action"], edit["details"]["to"], edit["count"]) == ("edit", FUNCTION_ARN, 1)


def test_a_replayed_function_event_not_back_past_the_function_s_retries_was_consumed(
    aws: Aws, function: PlayedFunction
) -> None:
    deploy(aws, FUNCTION_SOURCE)
    put(aws, destination_record(FUNCTION_ARN, ORDER))
    clock = [time.time() - AN_HOUR]
    tool = operator(clock)
    report = replay_chosen(tool, choose_all(tool), report=MoveReport())
    assert report.moved == 1 and report.replay_id is not None
    record = find(tool, report.replay_id)

    early = judge_replay(tool, record, snapshot(tool)).judged[0]
    clock[0] += AN_HOUR
    late = judge_replay(tool, record, snapshot(tool)).judged[0]

    assert early.fate is Fate.TOO_EARLY and early.back_by == record.at + 180 * 4
    assert late.fate is Fate.NOT_BACK_INVOKED


def replayed_function_event(aws: Aws, clock: list[float]) -> Any:
    """ORDER's failure replayed to the function at ``clock``; the replay's record."""
    deploy(aws, FUNCTION_SOURCE)
    put(aws, destination_record(FUNCTION_ARN, ORDER, request_id="r-1"))
    tool = operator(clock)
    report = replay_chosen(tool, choose_all(tool), report=MoveReport())
    assert report.moved == 1 and report.replay_id is not None
    return find(tool, report.replay_id)


def test_a_replayed_function_event_the_runs_re_drove_after_it_came_back_is_back_since_not_consumed(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN a replayed event the function failed again (a new record), which a run re-drove
    clock = [time.time() - 2 * AN_HOUR]
    record = replayed_function_event(aws, clock)
    put(aws, destination_record(FUNCTION_ARN, ORDER, request_id="r-2"))
    run_clock = FakeClock(clock[0] + 600)
    settings = make_settings(aws, dead_letter_sources=(FUNCTION_SOURCE,), source_queue_url=FUNCTION_ARN)
    local_redriver(
        settings,
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        s3=aws.s3,
        clock=run_clock,
        sleep=run_clock.advance,
        delivery=lambda service, region: function,
    ).run(lambda: 600_000)
    assert in_dlq(aws) == 0 and len(function.invoked) == 2  # the replay's, then the run's

    # WHEN the operator asks past the function's retries
    clock[0] += AN_HOUR
    tool = operator(clock)
    [judged] = judge_replay(tool, record, snapshot(tool)).judged

    # THEN it came back: never "consumed" on the replay's account
    assert judged.fate is Fate.BACK_SINCE
    assert "after it came back to the DLQ" in judged.cause


def record_trip(aws: Aws, identity: str, request_id: str, *, redriven_at: int) -> None:
    """A run's re-drive of ``identity`` at ``redriven_at``, written as the runtime writes it: under
    the trip of the request id its Invoke got back."""
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=AN_HOUR * 24, clock=lambda: redriven_at)
    mark = Mark(identity=identity, count=1, first_failed_at=redriven_at - 60, redriven_at=(redriven_at,))
    trip = invocation_trip(identity, request_id)
    table.save_records([MessageRecord(mark, RecordStatus.REDRIVEN, FUNCTION_ARN, key=trip)])


def test_a_replayed_function_event_is_back_since_at_its_latest_trip_after_the_replay(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN a replayed event whose count is on three trips: one of a re-drive before the replay,
    # two of the runs' re-drives after it came back
    clock = [time.time() - 2 * AN_HOUR]
    record = replayed_function_event(aws, clock)
    [sent] = record.sent
    record_trip(aws, sent.identity, "request-before", redriven_at=record.at - 600)
    record_trip(aws, sent.identity, "request-later", redriven_at=record.at + 1_800)
    record_trip(aws, sent.identity, "request-sooner", redriven_at=record.at + 900)

    clock[0] += AN_HOUR
    tool = operator(clock)
    [judged] = judge_replay(tool, record, snapshot(tool)).judged

    # THEN it is back since, at the latest re-drive, whatever request ids its trips are of
    assert judged.fate is Fate.BACK_SINCE
    assert judged.cause == (
        f"the runs re-drove or parked it at {clock_time(record.at + 1_800)}, after it came back to the DLQ"
    )


def test_a_replayed_function_event_re_driven_only_before_the_replay_is_not_back_since(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN the runs re-drove the event before the replay, and nothing since
    clock = [time.time() - 2 * AN_HOUR]
    record = replayed_function_event(aws, clock)
    [sent] = record.sent
    record_trip(aws, sent.identity, "request-before", redriven_at=record.at - 600)
    tool = operator(clock)
    trips = tool.table.load_trips([sent.identity])
    assert list(trips[sent.identity].marks) == [invocation_trip(sent.identity, "request-before")]

    clock[0] += AN_HOUR
    [judged] = judge_replay(tool, record, snapshot(tool)).judged

    # THEN that old trip says nothing of the replay: past the function's retries, consumed
    assert judged.fate is Fate.NOT_BACK_INVOKED


def test_a_replayed_function_event_with_a_corrupt_trip_record_may_have_been_refused_never_consumed(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN a trip record of the replayed event that is not one the runtime wrote
    clock = [time.time() - 2 * AN_HOUR]
    record = replayed_function_event(aws, clock)
    [sent] = record.sent
    record_trip(aws, sent.identity, "request-later", redriven_at=record.at + 900)
    key = RecordKind.MESSAGE.key(invocation_trip(sent.identity, "request-later"))
    aws.dynamodb.update_item(
        TableName=aws.table_name,
        Key={"pk": {"S": key}},
        UpdateExpression="SET redrive_count = :bad",
        ExpressionAttributeValues={":bad": {"S": "many"}},
    )

    clock[0] += AN_HOUR
    shown = sqs_redriver("outcome", record.replay_id, "--json")

    # THEN a clear fate naming the record and the field, exit 1, never "consumed" nor a traceback
    assert shown.exit_code == 1 and isinstance(shown.exception, SystemExit), shown.output
    [judged] = json.loads(shown.stdout)["identities"]
    assert judged["fate"] == "may-have-been-refused"
    assert (
        f"its state records could not be read whole (corrupt state record {key!r}: redrive_count"
        in (judged["why"])
    )


def test_a_replayed_function_event_on_a_table_without_the_identity_index_is_never_consumed(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN a state table of an older deployment (or one brought without the index)
    aws.dynamodb.delete_table(TableName=aws.table_name)
    create_table(aws.dynamodb, aws.table_name, "pk")
    clock = [time.time() - 2 * AN_HOUR]
    record = replayed_function_event(aws, clock)

    clock[0] += AN_HOUR
    shown = sqs_redriver("outcome", record.replay_id, "--json")

    # THEN the tool says it could not list the event's trips: a clear fate, exit 1
    assert shown.exit_code == 1 and isinstance(shown.exception, SystemExit), shown.output
    [judged] = json.loads(shown.stdout)["identities"]
    assert judged["fate"] == "may-have-been-refused"
    assert "its trips could not be listed: DynamoDB Query on" in judged["why"]


def test_a_replayed_function_event_is_not_consumed_while_a_record_of_it_without_its_payload_came_back(
    aws: Aws, function: PlayedFunction
) -> None:
    clock = [time.time() - 2 * AN_HOUR]
    record = replayed_function_event(aws, clock)
    put(aws, destination_record(FUNCTION_ARN, ORDER, request_id="r-2", dropped=True))

    shown = json.loads(sqs_redriver("outcome", record.replay_id, "--json").stdout)

    [judged] = shown["identities"]
    assert judged["fate"] == "may-have-been-refused"
    assert "1 record(s) of its function came back since without their payload" in judged["why"]


def test_a_rule_target_s_event_goes_to_that_target_and_is_delivered(
    aws: Aws, function: PlayedFunction
) -> None:
    target_url = aws.sqs.create_queue(QueueName="fulfilment")["QueueUrl"]
    deploy(aws, RULE_TARGET_SOURCE)
    event = rule_event({"order": "o-9"})
    put(aws, rule_target_dlq_message(event))
    tool = operator([time.time()])

    report = replay_chosen(tool, choose_all(tool), report=MoveReport())

    [delivered] = aws.sqs.receive_message(QueueUrl=target_url)["Messages"]
    assert json.loads(delivered["Body"]) == event and "MessageAttributes" not in delivered
    assert in_dlq(aws) == 0
    assert report.replay_id is not None
    record = find(tool, report.replay_id)
    assert judge_replay(tool, record, snapshot(tool)).judged[0].fate is Fate.DELIVERED


def test_replay_to_a_queue_of_the_operator_s_is_refused_before_anything_is_read(
    aws: Aws, function: PlayedFunction
) -> None:
    deploy(aws, FUNCTION_SOURCE)
    put(aws, destination_record(FUNCTION_ARN, ORDER))

    result = sqs_redriver("replay", "--from", "dlq", "--all", "--yes", "--to", aws.source_url)

    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr.strip().splitlines() == [
        "error: --to names a queue; this re-driver's dead letters go back to each source's one target "
        "only: leave --to out"
    ]
    assert function.invoked == [] and in_dlq(aws) == 1


def test_a_deployment_output_with_a_bad_source_is_one_line_naming_the_field(
    aws: Aws, function: PlayedFunction
) -> None:
    bad = {**FUNCTION_SOURCE.to_json(), "target_kind": "ftp"}
    deploy(aws, bad)

    result = sqs_redriver("groups")

    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: stack Shop: output Redriver is not a re-driver's deployment (")
    assert "dead_letter_sources[0].target_kind is 'ftp'" in line


def test_an_edit_document_shows_the_payload_not_the_record(aws: Aws, function: PlayedFunction) -> None:
    deploy(aws, FUNCTION_SOURCE)
    [message_id] = put(aws, destination_record(FUNCTION_ARN, ORDER))
    tool = operator([time.time()])

    document = json.loads(document_of(find_message(tool, message_id)))

    assert document == {"body": ORDER, "attributes": {}}


def test_the_message_page_shows_a_dead_letter_s_source_cause_and_payload_inert(
    aws: Aws, function: PlayedFunction
) -> None:
    deploy(aws, FUNCTION_SOURCE)
    hostile = {"order": "o-1", "note": "\u202e<script>"}
    [message_id] = put(aws, destination_record(FUNCTION_ARN, hostile, request_id="r-1"))
    client = signed_in(console_app(operator([time.time()])))

    status, page = get(client, f"/messages/{message_id}")

    assert status == 200
    for row in (
        "<tr><th>source kind</th><td>lambda</td></tr>",
        f"<tr><th>target</th><td>lambda {FUNCTION_ARN}</td></tr>",
        "<tr><th>cause</th><td>ValueError: the order has no items</td></tr>",
        "<tr><th>request id</th><td>r-1</td></tr>",
        "<tr><th>replayable</th><td>yes</td></tr>",
    ):
        assert row in page
    assert "{&#34;order&#34;:&#34;o-1&#34;,&#34;note&#34;:&#34;\\u202e&lt;script&gt;&#34;}" in page


def choose_all(tool: Tool) -> Any:
    return choose(tool, Where.DLQ, parse_selection(everything=True), None)


def only_one(items: list[Inspected]) -> Inspected:
    [item] = items
    return item


def test_status_shows_each_source_s_breaker_and_the_controls_close_it_by_its_address(
    aws: Aws, function: PlayedFunction
) -> None:
    deploy(aws, FUNCTION_SOURCE, RULE_TARGET_SOURCE)
    tool = operator([time.time()])
    tool.table.save_breaker(
        RecordKind.BREAKER.key(FUNCTION_SOURCE.address),
        Breaker().opened(int(time.time()), Evidence.METRICS),
        expected_version=0,
    )

    shown = json.loads(sqs_redriver("status", "--json").stdout)
    closed = sqs_redriver(
        "breaker", "close", "--source", FUNCTION_SOURCE.address, "--reason", "function fixed"
    )

    assert shown["breakers"][FUNCTION_SOURCE.address]["state"] == "OPEN"
    assert shown["breakers"][RULE_TARGET_SOURCE.address]["state"] == "CLOSED"
    assert closed.exit_code == 0, closed.output
    assert tool.table.load_breaker(RecordKind.BREAKER.key(FUNCTION_SOURCE.address)).state.value == "CLOSED"


def park_by_runs(aws: Aws, function: PlayedFunction, payload: Any) -> None:
    """The real re-driver (its limit 2) re-drives ``payload``'s failure twice; the function fails
    it a third time (a new record, under the request id of the re-drive's Invoke) and the run
    parks it. The runs end before
    now: the tool holds the record's times to its own clock."""
    clock = FakeClock(time.time() - 4 * AN_HOUR)
    settings = make_settings(aws, dead_letter_sources=(FUNCTION_SOURCE,), source_queue_url=FUNCTION_ARN)
    the_redriver = local_redriver(
        replace(settings, max_redrive_count=2, base_delay_seconds=60),
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        s3=aws.s3,
        clock=clock,
        sleep=clock.advance,
        delivery=lambda service, region: function,
    )
    for attempt in range(3):
        request_id = function.request_ids[-1] if attempt else "request-0"
        put(aws, destination_record(FUNCTION_ARN, payload, request_id=request_id))
        clock.advance(AN_HOUR)
        the_redriver.run(lambda: 600_000)


def test_a_function_s_poison_parked_by_a_run_is_shown_with_its_parking_reason_and_count(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN a function's event the re-driver parked (a dead letter carries no mark: its reason
    # and count are in the state table alone)
    deploy(aws, FUNCTION_SOURCE)
    park_by_runs(aws, function, ORDER)
    why = "failed after 2 re-drives (limit 2); source's error ValueError: the order has no items"

    # WHEN the operator looks at the parking lot
    [lot] = json.loads(sqs_redriver("groups", "--queue", "parking-lot", "--json").stdout)
    shown = sqs_redriver("show", lot["sample_id"])
    data = json.loads(sqs_redriver("show", lot["sample_id"], "--json").stdout)

    # THEN the group, the message and its JSON say why it was parked and after how many re-drives
    assert (lot["group"], lot["count"]) == ("dead-letter:orders:ValueError", 1)
    assert lot["label"] == f"parked after 2 re-drives (over_limit): {why}"
    assert shown.exit_code == 0, shown.output
    assert f"parked over_limit: {why}" in flat(shown.stdout)
    assert "re-drive count (state table, the message has no room for a mark): 2" in flat(shown.stdout)
    parked = data["parked"]
    assert (parked["cause"], parked["why"], parked["redrive_count"]) == ("over_limit", why, 2)
    assert parked["source_queue"] == FUNCTION_ARN
    assert data["table_record"] == {"count": 2}


def by_resources(aws: Aws, *args: str) -> Any:
    """``sqs-redriver`` on a function's re-driver named by its resources, the function's ARN as its
    source (as `make demo KEEP=1` prints it for the function's parking lot)."""
    named = [
        "--dlq-url", aws.dlq_url, "--source-url", FUNCTION_ARN,
        "--parking-lot-url", aws.parking_lot_url, "--table", aws.table_name,
    ]  # fmt: skip
    return CliRunner().invoke(app, [*args, *named])


def test_show_of_a_function_s_parked_record_named_by_its_resources_gives_group_source_and_reason(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN a function's event the re-driver parked, its re-driver in no stack
    park_by_runs(aws, function, ORDER)
    why = "failed after 2 re-drives (limit 2); source's error ValueError: the order has no items"

    # WHEN the operator names the re-driver by its queues, its table and the function's ARN
    [lot] = json.loads(by_resources(aws, "groups", "--queue", "parking-lot", "--json").stdout)
    shown = by_resources(aws, "show", lot["sample_id"])
    data = json.loads(by_resources(aws, "show", lot["sample_id"], "--json").stdout)

    # THEN the record is read as the function's: its group, its source and why it was parked
    assert shown.exit_code == 0, shown.output
    assert (lot["group"], lot["sources"]) == ("dead-letter:orders:ValueError", [FUNCTION_ARN])
    assert (data["group"], data["source"]) == ("dead-letter:orders:ValueError", FUNCTION_ARN)
    assert (data["parked"]["cause"], data["parked"]["why"]) == ("over_limit", why)
    text = flat(shown.stdout)
    for line in (
        "group dead-letter:orders:ValueError",
        f"source {FUNCTION_ARN}",
        "source kind lambda (orders)",
        f"parked over_limit: {why}",
    ):
        assert line in text


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("arn:aws:sns:us-east-1:123456789012:orders", "is an ARN but not a Lambda function's"),
        ("arn:aws:sqs:us-east-1:123456789012:orders", "is an ARN but not a Lambda function's"),
        ("mixed", "names queues and functions: a re-driver's DLQ holds the dead letters of one kind"),
    ],
    ids=["topic", "queue-arn", "queue-and-function"],
)
def test_a_source_url_of_another_kind_is_one_usage_line(aws: Aws, source: str, said: str) -> None:
    sources = ["--source-url", aws.source_url, "--source-url", FUNCTION_ARN] if source == "mixed" else [
        "--source-url", source
    ]  # fmt: skip
    named = ["--dlq-url", aws.dlq_url, *sources, "--parking-lot-url", aws.parking_lot_url, "--table", "t"]

    result = CliRunner().invoke(app, [*named, "groups"])

    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: --source-url ") and said in line


def test_a_function_s_event_back_from_a_re_drive_is_shown_with_its_count(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN a function's event re-driven once, back in the DLQ under the request id of that re-drive
    deploy(aws, FUNCTION_SOURCE)
    clock = FakeClock(time.time() - AN_HOUR)
    settings = make_settings(aws, dead_letter_sources=(FUNCTION_SOURCE,), source_queue_url=FUNCTION_ARN)
    the_redriver = local_redriver(
        settings,
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        s3=aws.s3,
        clock=clock,
        sleep=clock.advance,
        delivery=lambda service, region: function,
    )
    put(aws, destination_record(FUNCTION_ARN, ORDER, request_id="request-0"))
    the_redriver.run(lambda: 600_000)
    put(aws, destination_record(FUNCTION_ARN, ORDER, request_id=function.request_ids[-1]))

    # WHEN the operator looks at it in the DLQ
    [waiting] = json.loads(sqs_redriver("groups", "--queue", "dlq", "--json").stdout)
    data = json.loads(sqs_redriver("show", waiting["sample_id"], "--json").stdout)

    # THEN its count is the one its trip recorded
    assert data["table_record"] == {"count": 1}


PARKED_RECORD = {
    "status": {"S": "PARKED"},
    "redrive_count": {"N": "2"},
    "first_failed_at": {"N": "1800000000"},
    "redriven_at": {"L": []},
}
REASON = {"cause": "over_limit", "why": "failed after 2 re-drives (limit 2)", "redrive_count": 2}


@pytest.mark.parametrize(
    "record",
    [
        None,
        {**PARKED_RECORD, "reason": {"S": "{"}},
        {**PARKED_RECORD, "reason": {"S": json.dumps({**REASON, "cause": "vanished"})}},
        {**PARKED_RECORD, "reason": {"S": json.dumps({**REASON, "redrive_count": -1})}},
        {**PARKED_RECORD, "reason": {"N": "2"}},
        {**PARKED_RECORD, "status": {"S": "REDRIVEN"}},
    ],
    ids=["none", "not-json", "unknown-cause", "negative-count", "reason-not-a-string", "not-parked"],
)
def test_a_parked_dead_letter_without_a_readable_reason_is_shown_parked_with_the_reason_not_recorded(
    aws: Aws, function: PlayedFunction, record: dict[str, Any] | None
) -> None:
    # GIVEN a dead letter in the parking lot whose message record is missing, corrupt or not a park
    deploy(aws, FUNCTION_SOURCE)
    sent = aws.sqs.send_message(
        QueueUrl=aws.parking_lot_url, **destination_record(FUNCTION_ARN, ORDER).send_kwargs()
    )
    message_id = sent["MessageId"]
    identity = json.loads(sqs_redriver("show", message_id, "--json").stdout)["identity"]
    if record is not None:
        key = {"pk": {"S": RecordKind.MESSAGE.key(identity)}, "identity": {"S": identity}}
        aws.dynamodb.put_item(TableName=aws.table_name, Item={**key, **record})

    # WHEN the operator looks at it
    groups = sqs_redriver("groups", "--queue", "parking-lot", "--json")
    shown = sqs_redriver("show", message_id)
    data = json.loads(sqs_redriver("show", message_id, "--json").stdout)
    status, page = get(signed_in(console_app(operator([time.time()]))), f"/messages/{message_id}")

    # THEN it is parked, the reason not recorded, and the source's cause still said
    assert groups.exit_code == 0 and shown.exit_code == 0, groups.output + shown.output
    [lot] = json.loads(groups.stdout)
    assert lot["label"] == "parked (reason not recorded); ValueError: the order has no items"
    assert "parked parked (reason not recorded)" in flat(shown.stdout)
    assert data["parked"] is None and data["group"] == "dead-letter:orders:ValueError"
    assert status == 200 and "<tr><th>parked</th><td>parked (reason not recorded)</td></tr>" in page


def test_a_parked_record_carrying_its_reason_in_its_attributes_is_shown_with_it(
    aws: Aws, function: PlayedFunction
) -> None:
    # GIVEN a function's record in the parking lot whose reason travels in its attributes, as an
    # SQS message's does, and no state record of it
    deploy(aws, FUNCTION_SOURCE)
    reason = {"cause": "over_limit", "why": "failed after 2 re-drives (limit 2)", "redrive_count": 2}
    mark = {"id": "sha256:any", "first": 1_800_000_000, "parked": reason}
    with_reason = {MARK_ATTRIBUTE: string_attribute(json.dumps(mark))}
    parked = destination_record(FUNCTION_ARN, ORDER)
    sent = aws.sqs.send_message(
        QueueUrl=aws.parking_lot_url, **replace(parked, attributes=with_reason).send_kwargs()
    )
    # AND a forged one in the DLQ (anyone may write there): not taken as parked
    [forged] = put(aws, replace(destination_record(FUNCTION_ARN, {"order": "o-2"}), attributes=with_reason))

    shown = sqs_redriver("show", sent["MessageId"])
    data = json.loads(sqs_redriver("show", sent["MessageId"], "--json").stdout)
    in_the_dlq = json.loads(sqs_redriver("show", forged, "--json").stdout)

    assert shown.exit_code == 0, shown.output
    assert (data["group"], data["source"]) == ("dead-letter:orders:ValueError", FUNCTION_ARN)
    assert data["parked"] == reason
    assert "parked over_limit: failed after 2 re-drives (limit 2)" in flat(shown.stdout)
    assert in_the_dlq["parked"] is None


def test_the_replay_preview_and_the_edit_form_name_the_target_not_a_source_queue(
    aws: Aws, function: PlayedFunction
) -> None:
    deploy(aws, FUNCTION_SOURCE)
    [message_id] = put(aws, destination_record(FUNCTION_ARN, ORDER, request_id="r-1"))
    client = signed_in(console_app(operator([time.time()])))

    _, preview = get(client, "/replay?from=dlq&group=dead-letter:orders:ValueError")
    _, message = get(client, f"/messages/{message_id}")
    _, form = get(client, f"/messages/{message_id}/edit?from=dlq")
    _, status = get(client, "/")

    assert f"goes to its source's one target (lambda {FUNCTION_ARN})" in " ".join(preview.split())
    assert "source queue" not in preview
    assert "correct the payload its target gets" in message
    assert "The payload its target gets" in form
    assert "<th>source</th><th>breaker</th>" in status
