"""Dead letters of a Lambda function, an EventBridge rule target and an SNS subscription, re-driven
on moto by the real run: each goes back to its one target, leaves the DLQ only once delivered,
keeps its count across the round trip (a function's event that fails again comes back in a new
record, under the request id the re-drive's Invoke got back: only such a record is a return), and
is parked with the source's error when it keeps failing.

moto cannot run a function's code: the function is played here (``PlayedFunction`` records each
asynchronous invocation, or refuses it as Lambda does when the function is throttled), as the
harness plays an SQS consumer. Queues, the state table and the parking lot are moto's."""

from __future__ import annotations

import io
import json
import logging
import uuid
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from local_aws.compose import local_redriver
from local_aws.queues import queue_counts
from sqs_redriver.core.breaker import Breaker, Evidence
from sqs_redriver.core.table import ParkCause
from sqs_redriver.protocol.envelope import from_sqs
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.sources import ConsumerBreaker, DeadLetterSource
from sqs_redriver.runtime.report import RunReport, StopReason
from sqs_redriver.runtime.run import Redriver
from tests.support.aws import Aws, make_settings
from tests.support.dead_letters import (
    FUNCTION_ARN,
    FUNCTION_SOURCE,
    RAW_SUBSCRIPTION_SOURCE,
    RULE_TARGET_SOURCE,
    AwsDeadLetter,
    destination_record,
    function_dlq_message,
    rule_event,
    rule_target_dlq_message,
    subscription_dlq_message,
)
from tests.support.factories import FakeClock

# Past any backoff step of the default settings' range used here.
LATER = 3600


class PlayedFunction:
    """The ``lambda`` client the re-driver invokes a function through: an accepted invocation is
    recorded with the request id Lambda's answer gives it (Lambda answers 202 and runs it later;
    a failure of it comes back under that id); ``refusing`` makes Lambda refuse the call."""

    def __init__(self) -> None:
        self.invoked: list[tuple[str, Any]] = []
        self.request_ids: list[str] = []
        self.probed: list[tuple[str, Any]] = []
        self.refusing: str | None = None
        self.failing = False  # a synchronous invocation answers the function's error

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803
        if self.refusing:
            error = {"Error": {"Code": self.refusing, "Message": "Rate exceeded"}}
            raise ClientError(error, "Invoke")  # type: ignore[arg-type]
        if InvocationType == "RequestResponse":
            self.probed.append((FunctionName, json.loads(Payload)))
            if self.failing:
                answer = b'{"errorType": "ConnectionError", "errorMessage": "payments API down"}'
                return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(answer)}
            return {"StatusCode": 200, "Payload": io.BytesIO(b"null")}
        assert InvocationType == "Event", "a dead letter goes back as an asynchronous invocation"
        self.invoked.append((FunctionName, json.loads(Payload)))
        self.request_ids.append(str(uuid.uuid4()))
        return {"StatusCode": 202, "ResponseMetadata": {"RequestId": self.request_ids[-1]}}


@pytest.fixture
def function() -> PlayedFunction:
    return PlayedFunction()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def redriver(
    aws: Aws, clock: FakeClock, function: PlayedFunction, *sources: DeadLetterSource, **overrides: Any
) -> Redriver:
    settings = make_settings(aws, dead_letter_sources=sources, source_queue_url=sources[0].address)
    settings = replace(settings, **{"max_redrive_count": 2, "base_delay_seconds": 60, **overrides})
    clients = {"lambda": function, "sqs": aws.sqs}

    def delivery(service: str, region: str) -> Any:
        return clients[service]

    return local_redriver(
        settings,
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        s3=aws.s3,
        clock=clock,
        sleep=clock.advance,
        delivery=delivery,
    )


def put(aws: Aws, *dead_letters: AwsDeadLetter) -> None:
    for dead_letter in dead_letters:
        aws.sqs.send_message(QueueUrl=aws.dlq_url, **dead_letter.send_kwargs())


def run(redriver: Redriver, clock: FakeClock) -> RunReport:
    clock.advance(LATER)
    return redriver.run(lambda: 600_000)


def parked(aws: Aws) -> list[dict[str, Any]]:
    messages = aws.sqs.receive_message(QueueUrl=aws.parking_lot_url, MaxNumberOfMessages=10)
    return messages.get("Messages", [])


def record_of(aws: Aws, identity: str) -> dict[str, Any]:
    item = aws.dynamodb.get_item(
        TableName=aws.table_name, Key={"pk": {"S": RecordKind.MESSAGE.key(identity)}}, ConsistentRead=True
    )
    return item["Item"]


@pytest.fixture
def payloads() -> list[dict[str, Any]]:
    return [{"order": "o-1", "items": 2}, {"order": "o-2", "items": 1}]


def test_a_function_s_failures_go_back_to_it_as_it_was_invoked_and_leave_the_dlq(
    aws: Aws, clock: FakeClock, function: PlayedFunction, payloads: list[dict[str, Any]]
) -> None:
    put(aws, destination_record(f"{FUNCTION_ARN}:$LATEST", payloads[0]), function_dlq_message(payloads[1]))

    report = run(redriver(aws, clock, function, FUNCTION_SOURCE), clock)

    assert sorted(function.invoked, key=str) == sorted([(FUNCTION_ARN, p) for p in payloads], key=str)
    assert report.tally.redriven == 2
    assert queue_counts(aws.sqs, aws.dlq_url).total == 0


def test_a_failure_back_under_the_request_id_its_invoke_got_is_counted_and_parked_at_the_limit(
    aws: Aws, clock: FakeClock, function: PlayedFunction, payloads: list[dict[str, Any]]
) -> None:
    the_redriver = redriver(aws, clock, function, FUNCTION_SOURCE)
    put(aws, destination_record(FUNCTION_ARN, payloads[0], request_id="request-0"))
    run(the_redriver, clock)
    for _ in range(2):  # Lambda writes each re-drive's failure under the request id Invoke answered
        put(aws, destination_record(FUNCTION_ARN, payloads[0], request_id=function.request_ids[-1]))
        report = run(the_redriver, clock)

    assert function.invoked == [(FUNCTION_ARN, payloads[0])] * 2
    [parking] = parked(aws)
    assert json.loads(parking["Body"])["requestContext"]["requestId"] == function.request_ids[-1]
    assert report.tally.returned == 1
    assert queue_counts(aws.sqs, aws.dlq_url).total == 0
    record = record_of(aws, from_sqs(parking, [FUNCTION_SOURCE]).content_identity)
    assert (record["status"]["S"], record["redrive_count"]["N"]) == ("PARKED", "2")
    reason = json.loads(record["reason"]["S"])
    assert reason["cause"] == ParkCause.OVER_LIMIT.value
    assert (
        reason["why"]
        == "failed after 2 re-drives (limit 2); source's error ValueError: the order has no items"
    )
    assert reason["source_queue"] == FUNCTION_ARN


def aws_identities(aws: Aws) -> set[str]:
    """The identities the table counts messages under."""
    items = aws.dynamodb.scan(TableName=aws.table_name)["Items"]
    prefix = RecordKind.MESSAGE.value
    return {item["pk"]["S"].removeprefix(prefix) for item in items if item["pk"]["S"].startswith(prefix)}


def test_nothing_leaves_the_dlq_while_the_function_refuses_invocations(
    aws: Aws, clock: FakeClock, function: PlayedFunction, payloads: list[dict[str, Any]]
) -> None:
    function.refusing = "TooManyRequestsException"
    put(aws, *(destination_record(FUNCTION_ARN, p) for p in payloads))

    report = run(redriver(aws, clock, function, FUNCTION_SOURCE), clock)

    assert report.tally.redriven == 0 and report.tally.parked == 0
    assert queue_counts(aws.sqs, aws.dlq_url).total == 2
    assert parked(aws) == []


def test_a_record_whose_payload_lambda_dropped_is_parked_as_it_came_never_invoked(
    aws: Aws, clock: FakeClock, function: PlayedFunction, payloads: list[dict[str, Any]]
) -> None:
    record = destination_record(FUNCTION_ARN, payloads[0], request_id="r-big", dropped=True)
    put(aws, record)

    run(redriver(aws, clock, function, FUNCTION_SOURCE), clock)

    assert function.invoked == []
    [parking] = parked(aws)
    assert parking["Body"] == record.body
    assert queue_counts(aws.sqs, aws.dlq_url).total == 0


def test_a_rule_target_s_event_goes_to_that_target_alone(
    aws: Aws, clock: FakeClock, function: PlayedFunction
) -> None:
    target_url = aws.sqs.create_queue(QueueName="fulfilment")["QueueUrl"]
    event = rule_event({"order": "o-9"})
    put(aws, rule_target_dlq_message(event))

    run(redriver(aws, clock, function, RULE_TARGET_SOURCE), clock)

    [delivered] = aws.sqs.receive_message(QueueUrl=target_url)["Messages"]
    assert json.loads(delivered["Body"]) == event
    assert function.invoked == []
    assert queue_counts(aws.sqs, aws.dlq_url).total == 0


def test_a_raw_subscription_s_message_reaches_its_queue_with_its_attributes(
    aws: Aws, clock: FakeClock, function: PlayedFunction
) -> None:
    endpoint_url = aws.sqs.create_queue(QueueName="order-audit")["QueueUrl"]
    put(aws, subscription_dlq_message("order o-3 shipped", raw=True, attributes={"tenant": "acme"}))

    run(redriver(aws, clock, function, RAW_SUBSCRIPTION_SOURCE), clock)

    [delivered] = aws.sqs.receive_message(QueueUrl=endpoint_url, MessageAttributeNames=["All"])["Messages"]
    assert delivered["Body"] == "order o-3 shipped"
    assert delivered["MessageAttributes"]["tenant"]["StringValue"] == "acme"


def test_while_the_function_s_own_breaker_is_open_it_gets_nothing(
    aws: Aws, clock: FakeClock, function: PlayedFunction, payloads: list[dict[str, Any]]
) -> None:
    aws.dynamodb.create_table(
        TableName="circuits",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    source = replace(
        FUNCTION_SOURCE, breaker=ConsumerBreaker("circuits", "payments-api", recovery_timeout_seconds=300)
    )
    the_redriver = redriver(aws, clock, function, source)
    clock.advance(LATER)
    opened_at = int(clock())
    aws.dynamodb.put_item(
        TableName="circuits",
        Item={"id": {"S": "payments-api"}, "state": {"S": "OPEN"}, "opened_at": {"N": str(opened_at)}},
    )
    put(aws, *(destination_record(FUNCTION_ARN, p) for p in payloads))

    held = the_redriver.run(lambda: 600_000)
    clock.advance(400)  # past its recovery timeout: it lets a probe through
    probed = the_redriver.run(lambda: 600_000)

    assert held.stopped_because is StopReason.CONSUMER_BREAKER_OPEN
    assert held.tally.redriven == 0
    assert probed.tally.redriven == 1  # a canary's worth (CANARY_SIZE 1), not the whole DLQ
    assert len(function.invoked) == 1


def test_a_function_probed_synchronously_keeps_a_failed_canary_and_closes_on_passing_ones(
    aws: Aws, clock: FakeClock, function: PlayedFunction, payloads: list[dict[str, Any]]
) -> None:
    the_redriver = redriver(aws, clock, function, replace(FUNCTION_SOURCE, probe_timeout_seconds=30))
    put(aws, *(destination_record(FUNCTION_ARN, {"order": f"o-{n}"}) for n in range(5)))
    the_redriver.state.save_breaker(
        RecordKind.BREAKER.key(FUNCTION_SOURCE.address),
        Breaker().opened(int(clock()), Evidence.METRICS),
        expected_version=0,
    )
    function.failing = True

    failed = run(the_redriver, clock)
    probed_while_failing = len(function.probed)
    counts_after_failed_canary = sorted(
        int(record_of(aws, i)["redrive_count"]["N"]) for i in aws_identities(aws)
    )
    function.failing = False
    closed = run(the_redriver, clock)

    assert (failed.breaker_state.value, failed.tally.redriven, probed_while_failing) == ("OPEN", 0, 1)
    assert counts_after_failed_canary[-1] == 1  # the failed canary's count stands
    # Closed in one run by two canaries answered at once, then drained but for the failed canary,
    # still hidden from the receive that took it (moto keeps real time): a later run's.
    assert closed.breaker_state.value == "CLOSED"
    assert (len(function.probed), len(function.invoked)) == (3, 2)
    assert queue_counts(aws.sqs, aws.dlq_url).total == 1


def test_each_decision_s_log_line_names_the_dead_letter_s_source_and_request(
    aws: Aws, clock: FakeClock, function: PlayedFunction, caplog: pytest.LogCaptureFixture
) -> None:
    put(aws, destination_record(FUNCTION_ARN, {"order": "o-1"}, request_id="r-42"))

    with caplog.at_level(logging.INFO):
        run(redriver(aws, clock, function, FUNCTION_SOURCE), clock)

    [line] = [record for record in caplog.records if record.getMessage() == "re-driven"]
    assert (line.source, line.request_id) == (FUNCTION_SOURCE.address, "r-42")  # type: ignore[attr-defined]


# What a sender to the DLQ can do with the dead letters it has seen (docs/security.md, per kind).


def test_a_sender_replaying_a_function_s_records_under_new_request_ids_never_opens_its_breaker(
    aws: Aws, clock: FakeClock, function: PlayedFunction
) -> None:
    # GIVEN four events of a healthy function, re-driven once while the sender watched
    the_redriver = redriver(aws, clock, function, FUNCTION_SOURCE)
    events = [{"order": f"o-{n}"} for n in range(4)]
    put(aws, *(destination_record(FUNCTION_ARN, e, request_id=f"first-{n}") for n, e in enumerate(events)))
    run(the_redriver, clock)

    # WHEN the sender puts the same records back, round after round, each under a request id of its own
    reports = []
    for _ in range(4):
        put(aws, *(destination_record(FUNCTION_ARN, e, request_id=str(uuid.uuid4())) for e in events))
        reports.append(run(the_redriver, clock))

    # THEN none is a return: each is a dead letter of its own, re-driven from count 0, the breaker
    # never moves, and nothing is parked or lost
    assert [(r.tally.returned, r.tally.redriven, r.tally.parked) for r in reports] == [(0, 4, 0)] * 4
    assert all(r.breaker_transitions == [] and r.breaker_state.value == "CLOSED" for r in reports)
    assert len(function.invoked) == 4 * 5
    assert parked(aws) == [] and queue_counts(aws.sqs, aws.dlq_url).total == 0


def test_a_function_s_failures_of_its_own_re_drives_are_returns_and_open_its_breaker(
    aws: Aws, clock: FakeClock, function: PlayedFunction
) -> None:
    the_redriver = redriver(aws, clock, function, FUNCTION_SOURCE, max_redrive_count=5)
    events = [{"order": f"o-{n}"} for n in range(4)]
    put(aws, *(destination_record(FUNCTION_ARN, e, request_id=f"first-{n}") for n, e in enumerate(events)))
    run(the_redriver, clock)

    # Lambda writes each re-drive's failure under the request id its Invoke answered
    returns = zip(function.invoked, function.request_ids, strict=True)
    put(aws, *(destination_record(FUNCTION_ARN, p, request_id=r) for (_, p), r in returns))
    report = run(the_redriver, clock)

    assert report.tally.returned == 4
    assert report.breaker_state.value == "OPEN"
    assert len(function.invoked) == 4  # the returns wait in the DLQ for the breaker
    assert queue_counts(aws.sqs, aws.dlq_url).total == 4


@pytest.mark.parametrize(
    ("source", "target_queue", "dead_letter"),
    [
        (
            RULE_TARGET_SOURCE,
            "fulfilment",
            lambda n: rule_target_dlq_message(rule_event({"order": f"o-{n}"})),
        ),
        (
            RAW_SUBSCRIPTION_SOURCE,
            "order-audit",
            lambda n: subscription_dlq_message(f"order o-{n}", raw=True),
        ),
    ],
    ids=["rule target", "subscription"],
)
def test_a_dead_letter_of_a_target_that_answers_in_the_call_sent_again_is_never_a_return(
    aws: Aws,
    clock: FakeClock,
    function: PlayedFunction,
    source: DeadLetterSource,
    target_queue: str,
    dead_letter: Any,
) -> None:
    # GIVEN four dead letters delivered to the target (a re-drive's failure never comes back here)
    target_url = aws.sqs.create_queue(QueueName=target_queue)["QueueUrl"]
    the_redriver = redriver(aws, clock, function, source)
    reports = []
    # WHEN the same four are sent to the DLQ again and again (a sender, or the source's duplicates)
    for _ in range(4):
        put(aws, *(dead_letter(n) for n in range(4)))
        reports.append(run(the_redriver, clock))

    # THEN each is delivered again, as the dead letter it is: no return, no breaker, nothing parked
    assert [(r.tally.returned, r.tally.redriven, r.tally.parked) for r in reports] == [(0, 4, 0)] * 4
    assert all(r.breaker_transitions == [] for r in reports)
    assert queue_counts(aws.sqs, target_url).total == 16
    assert parked(aws) == [] and queue_counts(aws.sqs, aws.dlq_url).total == 0
