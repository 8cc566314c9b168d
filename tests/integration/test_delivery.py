"""Deliveries back to a dead letter's one target (core/delivery.py): what each target kind
receives, on moto; how each service's errors are judged, with botocore's Stubber; refusals
before any call; a call that gets no answer."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from local_aws import ACCOUNT, REGION
from sqs_redriver.core.delivery import (
    EVENTS_MAX_ENTRY_BYTES,
    INVALID_PAYLOAD,
    LAMBDA_MAX_ASYNC_PAYLOAD_BYTES,
    LAMBDA_SENDER_FAULTS,
    MISSING_PARAMETER,
    NO_ANSWER,
    RESERVED_SOURCE,
    SNS_MAX_MESSAGE_BYTES,
    SNS_SENDER_FAULTS,
    STATES_MAX_INPUT_BYTES,
    STATES_SENDER_FAULTS,
    EventBusTarget,
    FunctionTarget,
    QueueTarget,
    StateMachineTarget,
    TopicTarget,
    event_entry,
    sns_lambda_event,
    target_for,
)
from sqs_redriver.core.sqs import (
    CALL_FAILED,
    QUEUE_MISSING_CODES,
    TOO_LONG,
    BatchResult,
    EntryFailure,
    Outgoing,
    RedriveWindow,
)
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.sources import DeadLetterSource, Retries, SourceKind, TargetKind
from sqs_redriver.protocol.wire import Rejection

ARN = f"arn:aws:{{service}}:{REGION}:{ACCOUNT}:{{resource}}"
FUNCTION_ARN = ARN.format(service="lambda", resource="function:orders")
TOPIC_ARN = ARN.format(service="sns", resource="orders")
SUBSCRIPTION_ARN = f"{TOPIC_ARN}:6f1c3e0a-51b2-4c4e-9a55-0c4f3f1f2b7d"
RULE_ARN = ARN.format(service="events", resource="rule/orders")
BUS_ARN = ARN.format(service="events", resource="event-bus/downstream")
STATE_MACHINE_ARN = ARN.format(service="states", resource="stateMachine:orders")
QUEUE_ARN = ARN.format(service="sqs", resource="orders-target")
TARGET_TOPIC_ARN = ARN.format(service="sns", resource="orders-fanout")


# boto3's client, for a service named at run time (its stubs type each service by a literal name).
make_client: Any = boto3.client


# --- sources and messages ------------------------------------------------------------------------


def function_source(function_arn: str = FUNCTION_ARN) -> DeadLetterSource:
    return DeadLetterSource(
        kind=SourceKind.FUNCTION,
        arn=function_arn,
        target_kind=TargetKind.FUNCTION,
        target_arn=function_arn,
        retries=Retries(attempts=3, attempt_seconds=120),
    )


def subscription_source(target_kind: TargetKind, endpoint: str) -> DeadLetterSource:
    return DeadLetterSource(
        kind=SourceKind.SUBSCRIPTION,
        arn=SUBSCRIPTION_ARN,
        target_kind=target_kind,
        target_arn=endpoint,
        topic_arn=TOPIC_ARN,
    )


def rule_source(target_kind: TargetKind, target_arn: str) -> DeadLetterSource:
    return DeadLetterSource(
        kind=SourceKind.RULE_TARGET,
        arn=RULE_ARN,
        target_kind=target_kind,
        target_arn=target_arn,
        target_id="downstream",
        retries=Retries(attempts=1, attempt_seconds=60),
    )


def message(body: str, entry_id: str = "0", **fields: Any) -> Outgoing:
    return Outgoing(entry_id=entry_id, body=body, attributes=fields.pop("attributes", {}), **fields)


def envelope(**changes: Any) -> dict[str, Any]:
    """An SNS notification as SNS writes it to a subscription's queue (and its DLQ)."""
    document: dict[str, Any] = {
        "Type": "Notification",
        "MessageId": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
        "TopicArn": TOPIC_ARN,
        "Subject": "order placed",
        "Message": '{"order_id": "o-1"}',
        "Timestamp": "2026-11-28T10:00:00.000Z",
        "SignatureVersion": "1",
        "Signature": "c2lnbmF0dXJl",
        "SigningCertURL": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0.pem",
        "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
        "MessageAttributes": {"kind": {"Type": "String", "Value": "order"}},
    }
    document.update(changes)
    return {name: value for name, value in document.items() if value is not ...}


def event(**changes: Any) -> dict[str, Any]:
    """An event as EventBridge writes it to a rule target's DLQ."""
    document: dict[str, Any] = {
        "version": "0",
        "id": "4c1e4f0e-5e2f-7a3b-1c2d-3e4f5a6b7c8d",
        "detail-type": "Order Placed",
        "source": "com.example.orders",
        "account": ACCOUNT,
        "time": "2026-11-28T10:00:00Z",
        "region": REGION,
        "resources": ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"],
        "detail": {"order_id": "o-1", "total": 19.8, "lines": [{"sku": "sku-1", "quantity": 2}]},
    }
    document.update(changes)
    return {name: value for name, value in document.items() if value is not ...}


# --- clients -------------------------------------------------------------------------------------


class Clients:
    """The targets' clients, one per service and region, and the requests they were given."""

    def __init__(self, **config: Any) -> None:
        self.made: dict[tuple[str, str], Any] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.config = Config(**config) if config else None

    def __call__(self, service: str, region: str) -> Any:
        if (service, region) not in self.made:
            client = make_client(service, region_name=region, config=self.config)
            client.meta.events.register("before-parameter-build", self._record)
            self.made[(service, region)] = client
        return self.made[(service, region)]

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.requests.append((model.name, dict(params)))


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield


@pytest.fixture
def clients() -> Clients:
    return Clients()


def create_function(name: str = "orders") -> str:
    role = boto3.client("iam", region_name=REGION).create_role(
        RoleName=f"{name}-role", AssumeRolePolicyDocument="{}"
    )["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "def handle(event, context):\n    return event\n")
    return str(
        boto3.client("lambda", region_name=REGION).create_function(
            FunctionName=name,
            Runtime="python3.13",
            Role=role,
            Handler="handler.handle",
            Code={"ZipFile": code.getvalue()},
        )["FunctionArn"]
    )


def create_queue(name: str, **attributes: str) -> tuple[str, str]:
    """(URL, ARN) of a new queue."""
    sqs: Any = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def received(queue_url: str) -> list[dict[str, Any]]:
    sqs: Any = boto3.client("sqs", region_name=REGION)
    response = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    )
    return list(response.get("Messages", []))


# --- what each target kind receives (moto) ------------------------------------------------------


def test_a_function_is_invoked_asynchronously_with_each_payload_as_it_is(aws: None, clients: Clients) -> None:
    function_arn = create_function()
    target = target_for(function_source(function_arn), clients)
    payloads = ['{"order_id": "o-1"}', '{"order_id": "o-2", "note": "café"}']

    result = target.send([message(body, str(i)) for i, body in enumerate(payloads)])

    assert (result.succeeded, result.failed, result.call_error) == (["0", "1"], {}, None)
    assert clients.requests == [
        ("Invoke", {"FunctionName": function_arn, "InvocationType": "Event", "Payload": body.encode()})
        for body in payloads
    ]


def test_a_subscribed_function_gets_the_event_sns_invokes_it_with(aws: None, clients: Clients) -> None:
    function_arn = create_function()
    target = target_for(subscription_source(TargetKind.FUNCTION, function_arn), clients)

    result = target.send([message(json.dumps(envelope()))])

    assert result.succeeded == ["0"]
    [(_, request)] = clients.requests
    assert json.loads(request["Payload"]) == {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": SUBSCRIPTION_ARN,
                "Sns": {
                    "Type": "Notification",
                    "MessageId": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
                    "TopicArn": TOPIC_ARN,
                    "Subject": "order placed",
                    "Message": '{"order_id": "o-1"}',
                    "Timestamp": "2026-11-28T10:00:00.000Z",
                    "SignatureVersion": "1",
                    "Signature": "c2lnbmF0dXJl",
                    "SigningCertUrl": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0.pem",
                    "UnsubscribeUrl": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
                    "MessageAttributes": {"kind": {"Type": "String", "Value": "order"}},
                },
            }
        ]
    }


def test_a_notification_without_subject_or_attributes_has_sns_defaults_in_the_event() -> None:
    built = sns_lambda_event(
        json.dumps(envelope(Subject=..., MessageAttributes=...)), SUBSCRIPTION_ARN, TOPIC_ARN
    )

    record = json.loads(built)["Records"][0]["Sns"]
    assert (record["Subject"], record["MessageAttributes"]) == (None, {})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (json.dumps(envelope(MessageId=...)), "MessageId"),
        (json.dumps(envelope(Message=7)), "Message"),
        (json.dumps(envelope(Type="SubscriptionConfirmation")), "Type"),
        (json.dumps(envelope(TopicArn=TARGET_TOPIC_ARN)), "TopicArn"),
        (
            json.dumps(envelope(MessageAttributes={"kind": {"Type": "String"}})),
            "MessageAttributes.kind.Value",
        ),
        ("not json", "body"),
    ],
)
def test_a_subscription_dead_letter_that_is_no_notification_is_refused_naming_the_field(
    aws: None, clients: Clients, body: str, field: str
) -> None:
    target = target_for(subscription_source(TargetKind.FUNCTION, create_function()), clients)

    result = target.send([message(body)])

    failure = result.failed["0"]
    assert (failure.code, failure.sender_fault) == (INVALID_PAYLOAD, True)
    assert f" {field} " in failure.message
    assert clients.requests == []


def test_a_queue_gets_the_body_and_attributes_as_given_and_nothing_more(aws: None, clients: Clients) -> None:
    url, queue_arn = create_queue("orders-target")
    attributes = {"kind": {"DataType": "String", "StringValue": "order"}}
    target = target_for(subscription_source(TargetKind.QUEUE, queue_arn), clients)

    result = target.send([message("raw order o-1", attributes=attributes)])

    assert (result.succeeded, result.failed) == (["0"], {})
    [delivered] = received(url)
    assert delivered["Body"] == "raw order o-1"
    assert delivered["MessageAttributes"] == attributes
    assert MARK_ATTRIBUTE not in delivered["MessageAttributes"]
    assert isinstance(target, QueueTarget) and target.queue_url == url


def test_a_fifo_queue_gets_the_group_and_deduplication_ids(aws: None, clients: Clients) -> None:
    url, queue_arn = create_queue("orders-target.fifo", FifoQueue="true")
    target = target_for(rule_source(TargetKind.QUEUE, queue_arn), clients)

    result = target.send([message("o-1", group_id="customer-1", deduplication_id="o-1-redrive-1")])

    assert result.succeeded == ["0"]
    [delivered] = received(url)
    assert delivered["Attributes"]["MessageGroupId"] == "customer-1"
    assert delivered["Attributes"]["MessageDeduplicationId"] == "o-1-redrive-1"


@pytest.mark.parametrize(
    ("ids", "missing"),
    [({}, "MessageGroupId"), ({"group_id": "customer-1"}, "MessageDeduplicationId")],
)
def test_a_fifo_target_without_the_ids_it_needs_is_refused_naming_them(
    aws: None, clients: Clients, ids: dict[str, str], missing: str
) -> None:
    create_queue("orders-target.fifo", FifoQueue="true")
    queue = target_for(rule_source(TargetKind.QUEUE, f"{QUEUE_ARN}.fifo"), clients)
    topic = target_for(rule_source(TargetKind.TOPIC, f"{TARGET_TOPIC_ARN}.fifo"), clients)

    for target in (queue, topic):
        failure = target.send([message("o-1", **ids)]).failed["0"]
        assert (failure.code, failure.sender_fault) == (MISSING_PARAMETER, True)
        assert failure.message.startswith(missing)
    assert clients.requests == []


def test_a_standard_queue_is_sent_no_fifo_ids(aws: None, clients: Clients) -> None:
    url, queue_arn = create_queue("orders-target")
    target = target_for(rule_source(TargetKind.QUEUE, queue_arn), clients)

    result = target.send([message("o-1", group_id="customer-1", deduplication_id="o-1-redrive-1")])

    assert result.succeeded == ["0"]
    [(_, request)] = clients.requests
    assert "MessageDeduplicationId" not in request["Entries"][0]
    assert [m["Body"] for m in received(url)] == ["o-1"]


def test_a_missing_target_queue_is_an_outage_not_the_messages_fault(aws: None, clients: Clients) -> None:
    target = target_for(rule_source(TargetKind.QUEUE, QUEUE_ARN), clients)

    result = target.send([message("o-1")])

    failure = result.failed["0"]
    assert (failure.code in QUEUE_MISSING_CODES, failure.sender_fault) == (True, False)
    assert result.call_error is None


def test_a_rule_target_topic_is_published_the_body(aws: None, clients: Clients) -> None:
    sns = boto3.client("sns", region_name=REGION)
    topic_arn = sns.create_topic(Name="orders-fanout")["TopicArn"]
    url, queue_arn = create_queue("fanout-watch")
    sns.subscribe(
        TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"}
    )
    body = json.dumps(event())

    result = target_for(rule_source(TargetKind.TOPIC, topic_arn), clients).send([message(body)])

    assert result.succeeded == ["0"]
    assert [m["Body"] for m in received(url)] == [body]


def test_a_state_machine_starts_one_execution_with_the_body_as_input(aws: None, clients: Clients) -> None:
    role = boto3.client("iam", region_name=REGION).create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})
    machine = sfn.create_state_machine(name="orders", definition=definition, roleArn=role["Role"]["Arn"])
    bodies = [json.dumps(event(id=str(i))) for i in range(2)]

    target = target_for(rule_source(TargetKind.STATE_MACHINE, machine["stateMachineArn"]), clients)
    result = target.send([message(body, str(i)) for i, body in enumerate(bodies)])

    assert result.succeeded == ["0", "1"]
    executions = sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"]
    inputs = [sfn.describe_execution(executionArn=e["executionArn"])["input"] for e in executions]
    assert sorted(inputs) == sorted(bodies)


def test_an_event_goes_back_onto_the_target_bus_as_the_entry_it_was(aws: None, clients: Clients) -> None:
    bus_arn = boto3.client("events", region_name=REGION).create_event_bus(Name="downstream")["EventBusArn"]
    target = target_for(rule_source(TargetKind.EVENT_BUS, bus_arn), clients)

    result = target.send([message(json.dumps(event()))])

    assert (result.succeeded, result.failed) == (["0"], {})
    [(operation, request)] = clients.requests
    assert operation == "PutEvents"
    assert request["Entries"] == [
        {
            "EventBusName": bus_arn,
            "Source": "com.example.orders",
            "DetailType": "Order Placed",
            "Detail": '{"order_id":"o-1","total":19.8,"lines":[{"sku":"sku-1","quantity":2}]}',
            "Resources": ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"],
            "Time": datetime(2026, 11, 28, 10, 0, tzinfo=UTC),
        }
    ]


def test_events_go_onto_the_bus_ten_a_call(aws: None, clients: Clients) -> None:
    bus_arn = boto3.client("events", region_name=REGION).create_event_bus(Name="downstream")["EventBusArn"]
    target = target_for(rule_source(TargetKind.EVENT_BUS, bus_arn), clients)

    result = target.send([message(json.dumps(event(id=str(i))), str(i)) for i in range(12)])

    assert sorted(result.succeeded, key=int) == [str(i) for i in range(12)]
    assert [len(request["Entries"]) for _, request in clients.requests] == [10, 2]


def test_an_event_of_an_aws_service_is_refused_before_putevents_would(aws: None, clients: Clients) -> None:
    target = target_for(rule_source(TargetKind.EVENT_BUS, BUS_ARN), clients)

    failure = target.send([message(json.dumps(event(source="aws.ec2")))]).failed["0"]

    assert (failure.code, failure.sender_fault) == (RESERVED_SOURCE, True)
    assert "aws.ec2" in failure.message
    assert clients.requests == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (json.dumps(event(source=...)), "source"),
        (json.dumps(event(**{"detail-type": ...})), "detail-type"),
        (json.dumps(event(detail=...)), "detail"),
        (json.dumps(event(detail="text")), "detail"),
        (json.dumps(event(resources=[1])), "resources[0]"),
        (json.dumps(event(time="yesterday")), "time"),
        ('{"detail": {"n": 1e999}, "source": "s", "detail-type": "t"}', "detail"),
        ('{"detail": {"n": NaN}}', "body"),
        ("[" * 300 + "]" * 300, "body"),
        ("not json", "body"),
    ],
)
def test_an_event_that_cannot_be_put_is_refused_naming_the_field(
    aws: None, clients: Clients, body: str, field: str
) -> None:
    target = target_for(rule_source(TargetKind.EVENT_BUS, BUS_ARN), clients)

    failure = target.send([message(body)]).failed["0"]

    assert (failure.code, failure.sender_fault) == (INVALID_PAYLOAD, True)
    assert f" {field} " in failure.message
    assert clients.requests == []


# --- oversize: refused before any call ------------------------------------------------------------


def filler(size: int) -> str:
    """A JSON body of exactly ``size`` UTF-8 bytes."""
    body = json.dumps({"x": "a" * (size - 9)})
    assert len(body.encode()) == size
    return body


@pytest.mark.parametrize(
    ("source", "limit"),
    [
        (function_source(), LAMBDA_MAX_ASYNC_PAYLOAD_BYTES),
        (rule_source(TargetKind.TOPIC, TARGET_TOPIC_ARN), SNS_MAX_MESSAGE_BYTES),
        (rule_source(TargetKind.STATE_MACHINE, STATE_MACHINE_ARN), STATES_MAX_INPUT_BYTES),
        (rule_source(TargetKind.QUEUE, QUEUE_ARN), 1_048_576),
    ],
    ids=["function", "topic", "state machine", "queue"],
)
def test_a_payload_over_the_targets_limit_is_a_sender_fault_naming_the_limit(
    clients: Clients, source: DeadLetterSource, limit: int
) -> None:
    target = target_for(source, clients)
    with Stubber(target._client) as stubber:  # any call would fail: none is expected
        result = target.send([message(filler(limit + 1))])
        stubber.assert_no_pending_responses()

    failure = result.failed["0"]
    assert (failure.code, failure.sender_fault) == (TOO_LONG, True)
    assert str(limit) in failure.message


def test_a_payload_at_the_limit_is_sent(clients: Clients) -> None:
    target = target_for(rule_source(TargetKind.STATE_MACHINE, STATE_MACHINE_ARN), clients)
    with Stubber(target._client) as stubber:
        stubber.add_response("start_execution", {"executionArn": f"{STATE_MACHINE_ARN}:1", "startDate": 0})
        result = target.send([message(filler(STATES_MAX_INPUT_BYTES))])

    assert result.succeeded == ["0"]


def test_an_event_over_the_entry_limit_is_refused(clients: Clients) -> None:
    detail = {"x": "a" * EVENTS_MAX_ENTRY_BYTES}
    target = target_for(rule_source(TargetKind.EVENT_BUS, BUS_ARN), clients)
    with Stubber(target._client):
        failure = target.send([message(json.dumps(event(detail=detail)))]).failed["0"]

    assert (failure.code, failure.sender_fault) == (TOO_LONG, True)
    assert str(EVENTS_MAX_ENTRY_BYTES) in failure.message


# --- each service's errors (Stubber) --------------------------------------------------------------


ONE_BY_ONE: dict[str, tuple[DeadLetterSource, str, dict[str, Any]]] = {
    "function": (function_source(), "invoke", {"StatusCode": 202}),
    "topic": (rule_source(TargetKind.TOPIC, TARGET_TOPIC_ARN), "publish", {"MessageId": "m-1"}),
    "state machine": (
        rule_source(TargetKind.STATE_MACHINE, STATE_MACHINE_ARN),
        "start_execution",
        {"executionArn": f"{STATE_MACHINE_ARN}:1", "startDate": 0},
    ),
}
SENDER_FAULTS = {
    "function": LAMBDA_SENDER_FAULTS,
    "topic": SNS_SENDER_FAULTS,
    "state machine": STATES_SENDER_FAULTS,
}
ERRORS = [
    ("function", "RequestTooLargeException", True),
    ("function", "SerializedRequestEntityTooLargeException", True),
    ("function", "InvalidRequestContentException", True),
    ("function", "UnsupportedMediaTypeException", True),
    ("function", "InvalidParameterValueException", True),
    ("function", "TooManyRequestsException", False),
    ("function", "ServiceException", False),
    ("function", "ResourceNotFoundException", False),
    ("function", "ResourceConflictException", False),
    ("function", "KMSDisabledException", False),
    ("function", "KMSAccessDeniedException", False),
    ("function", "EC2ThrottledException", False),
    ("function", "ENILimitReachedException", False),
    ("function", "AccessDeniedException", False),
    ("topic", "InvalidParameterException", True),
    ("topic", "InvalidParameterValueException", True),
    ("topic", "ValidationException", True),
    ("topic", "NotFoundException", False),
    ("topic", "ThrottledException", False),
    ("topic", "InternalErrorException", False),
    ("topic", "KMSDisabledException", False),
    ("topic", "AuthorizationErrorException", False),
    ("state machine", "InvalidExecutionInput", True),
    ("state machine", "ValidationException", True),
    ("state machine", "ExecutionLimitExceeded", False),
    ("state machine", "StateMachineDoesNotExist", False),
    ("state machine", "StateMachineDeleting", False),
    ("state machine", "InvalidArn", False),
    ("state machine", "KmsThrottlingException", False),
]


@pytest.mark.parametrize(("kind", "code", "sender_fault"), ERRORS)
def test_each_error_is_judged_the_messages_fault_or_the_targets(
    clients: Clients, kind: str, code: str, sender_fault: bool
) -> None:
    source, operation, _ = ONE_BY_ONE[kind]
    target = target_for(source, clients)
    with Stubber(target._client) as stubber:
        stubber.add_client_error(operation, service_error_code=code, service_message="injected")
        result = target.send([message('{"order_id": "o-1"}')])

    failure = result.failed["0"]
    assert (failure.code, failure.sender_fault) == (code, sender_fault)
    assert "injected" in failure.message
    assert result.call_error is None


@pytest.mark.parametrize("kind", list(ONE_BY_ONE))
def test_a_message_the_target_refuses_fails_alone(clients: Clients, kind: str) -> None:
    source, operation, accepted = ONE_BY_ONE[kind]
    target = target_for(source, clients)
    with Stubber(target._client) as stubber:
        stubber.add_client_error(operation, service_error_code=sorted(SENDER_FAULTS[kind])[0])
        stubber.add_response(operation, accepted)
        result = target.send([message("{}", "0"), message("{}", "1")])

    assert (result.succeeded, list(result.failed)) == (["1"], ["0"])


@pytest.mark.parametrize("kind", list(ONE_BY_ONE))
def test_an_outage_of_the_target_ends_the_batch_without_trying_the_rest(clients: Clients, kind: str) -> None:
    source, operation, accepted = ONE_BY_ONE[kind]
    target = target_for(source, clients)
    with Stubber(target._client) as stubber:
        stubber.add_response(operation, accepted)
        stubber.add_client_error(operation, service_error_code="ThrottlingException")
        result = target.send([message("{}", str(i)) for i in range(4)])
        stubber.assert_no_pending_responses()

    assert result.succeeded == ["0"]
    assert result.failed["1"] == EntryFailure("ThrottlingException", result.failed["1"].message, False)
    assert {result.failed[key].code for key in "23"} == {CALL_FAILED}
    assert result.call_error is None


def test_an_invocation_not_accepted_is_not_counted_as_sent(clients: Clients) -> None:
    target = target_for(function_source(), clients)
    with Stubber(target._client) as stubber:
        stubber.add_response("invoke", {"StatusCode": 200})
        result = target.send([message("{}")])

    assert result.failed["0"].code == "UnexpectedStatus"
    assert result.failed["0"].sender_fault is False


@pytest.mark.parametrize(
    ("code", "sender_fault"),
    [
        ("InvalidArgument", True),
        ("MalformedDetail", True),
        ("ThrottlingException", False),
        ("InternalFailure", False),
        ("AccessDeniedException", False),
        ("NotAuthorizedForSourceException", False),
        ("NotAuthorizedForDetailTypeException", False),
    ],
)
def test_each_putevents_entry_error_is_judged(clients: Clients, code: str, sender_fault: bool) -> None:
    target = target_for(rule_source(TargetKind.EVENT_BUS, BUS_ARN), clients)
    with Stubber(target._client) as stubber:
        answer = {
            "FailedEntryCount": 1,
            "Entries": [{"EventId": "e-0"}, {"ErrorCode": code, "ErrorMessage": "x"}],
        }
        stubber.add_response("put_events", answer)
        result = target.send([message(json.dumps(event()), str(i)) for i in range(2)])

    assert result.succeeded == ["0"]
    assert result.failed == {"1": EntryFailure(code, "x", sender_fault)}


def test_an_entry_putevents_says_nothing_of_stays_unsent(clients: Clients) -> None:
    target = target_for(rule_source(TargetKind.EVENT_BUS, BUS_ARN), clients)
    with Stubber(target._client) as stubber:
        stubber.add_response("put_events", {"FailedEntryCount": 0, "Entries": [{"EventId": "e-0"}]})
        result = target.send([message(json.dumps(event()), str(i)) for i in range(2)])

    assert result.succeeded == ["0"]
    assert (result.failed["1"].code, result.failed["1"].sender_fault) == (NO_ANSWER, False)


def test_a_putevents_call_refused_whole_is_retried_entry_by_entry_to_find_the_one_at_fault(
    clients: Clients,
) -> None:
    target = target_for(rule_source(TargetKind.EVENT_BUS, BUS_ARN), clients)
    with Stubber(target._client) as stubber:
        stubber.add_client_error("put_events", service_error_code="ValidationException")
        stubber.add_response("put_events", {"FailedEntryCount": 0, "Entries": [{"EventId": "e-0"}]})
        stubber.add_client_error("put_events", service_error_code="ValidationException")
        result = target.send([message(json.dumps(event()), str(i)) for i in range(2)])
        stubber.assert_no_pending_responses()

    assert result.succeeded == ["0"]
    assert (result.failed["1"].code, result.failed["1"].sender_fault) == ("ValidationException", True)


def test_a_putevents_call_failed_whole_by_the_service_fails_its_entries_as_a_call(clients: Clients) -> None:
    target = target_for(rule_source(TargetKind.EVENT_BUS, BUS_ARN), clients)
    with Stubber(target._client) as stubber:
        stubber.add_client_error("put_events", service_error_code="ThrottlingException")
        result = target.send([message(json.dumps(event()), str(i)) for i in range(2)])

    assert {key: failure.code for key, failure in result.failed.items()} == {
        "0": CALL_FAILED,
        "1": CALL_FAILED,
    }
    assert result.call_error is not None and BUS_ARN in result.call_error


# --- a call that gets no answer -------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        function_source(),
        rule_source(TargetKind.TOPIC, TARGET_TOPIC_ARN),
        rule_source(TargetKind.STATE_MACHINE, STATE_MACHINE_ARN),
        rule_source(TargetKind.EVENT_BUS, BUS_ARN),
        rule_source(TargetKind.QUEUE, QUEUE_ARN),
    ],
    ids=["function", "topic", "state machine", "bus", "queue"],
)
def test_a_call_that_gets_no_answer_fails_its_entries_as_call_failed(source: DeadLetterSource) -> None:
    clients = Clients(retries={"total_max_attempts": 1})
    target = target_for(source, clients)
    target._client.meta.events.register("before-send", refuse_connection)

    result = target.send([message(json.dumps(event()), str(i)) for i in range(3)])

    assert result.succeeded == []
    assert [(key, failure.code, failure.sender_fault) for key, failure in result.failed.items()] == [
        (str(i), CALL_FAILED, False) for i in range(3)
    ]
    assert result.call_error is not None and source.target_arn.split(":")[-1] in result.call_error
    assert len(clients.requests) == 1  # one call met the failure; the rest were not tried


def refuse_connection(request: Any, **_: Any) -> None:
    raise EndpointConnectionError(endpoint_url=request.url)


# --- the factory and the run's surface ------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "kind", "service"),
    [
        (function_source(), FunctionTarget, "lambda"),
        (subscription_source(TargetKind.QUEUE, QUEUE_ARN), QueueTarget, "sqs"),
        (rule_source(TargetKind.TOPIC, TARGET_TOPIC_ARN), TopicTarget, "sns"),
        (rule_source(TargetKind.STATE_MACHINE, STATE_MACHINE_ARN), StateMachineTarget, "stepfunctions"),
        (rule_source(TargetKind.EVENT_BUS, BUS_ARN.replace(REGION, "eu-west-1")), EventBusTarget, "events"),
    ],
)
def test_each_target_kind_gets_its_adapter_with_a_client_in_the_targets_region(
    source: DeadLetterSource, kind: type, service: str
) -> None:
    asked: list[tuple[str, str]] = []

    def clients(service_name: str, region: str) -> Any:
        asked.append((service_name, region))
        return make_client(service_name, region_name=region)

    target = target_for(source, clients)

    assert isinstance(target, kind)
    assert asked == [(service, source.target_arn.split(":")[3])]
    assert target.url == source.address


def test_a_target_arn_of_another_service_is_rejected_naming_it(clients: Clients) -> None:
    with pytest.raises(Rejection, match="target_arn"):
        target_for(rule_source(TargetKind.STATE_MACHINE, FUNCTION_ARN), clients)


def test_the_redrive_window_is_the_sources_retries_and_there_is_no_backlog(clients: Clients) -> None:
    target = target_for(function_source(), clients)

    assert target.redrive_window() == RedriveWindow(visibility_timeout_seconds=120, max_receive_count=3)
    assert target.backlog() == 0


def test_nothing_to_send_makes_no_call(clients: Clients) -> None:
    for source in (
        function_source(),
        rule_source(TargetKind.EVENT_BUS, BUS_ARN),
        rule_source(TargetKind.QUEUE, QUEUE_ARN),
    ):
        assert target_for(source, clients).send([]) == BatchResult()
    assert clients.requests == []


# --- the payload builders, on any input -----------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.text() | JSON_VALUES.map(json.dumps))
def test_any_body_either_builds_an_sns_event_or_is_rejected(body: str) -> None:
    try:
        built = sns_lambda_event(body, SUBSCRIPTION_ARN, TOPIC_ARN)
    except Rejection:
        return
    assert json.loads(built)["Records"][0]["EventSubscriptionArn"] == SUBSCRIPTION_ARN


@given(st.text(), st.dictionaries(st.text(min_size=1), st.text(), max_size=3), st.none() | st.text())
def test_an_sns_event_carries_the_notifications_message_attributes_and_subject(
    text_message: str, values: dict[str, str], subject: str | None
) -> None:
    attributes = {name: {"Type": "String", "Value": value} for name, value in values.items()}
    body = json.dumps(envelope(Message=text_message, MessageAttributes=attributes, Subject=subject))

    record = json.loads(sns_lambda_event(body, SUBSCRIPTION_ARN, TOPIC_ARN))["Records"][0]["Sns"]

    assert (record["Message"], record["MessageAttributes"], record["Subject"]) == (
        text_message,
        attributes,
        subject,
    )


@given(
    st.text() | JSON_VALUES.map(json.dumps) | st.builds(lambda d: json.dumps(event(detail=d)), JSON_VALUES)
)
def test_any_body_either_builds_a_putevents_entry_or_is_rejected(body: str) -> None:
    try:
        entry = event_entry(body, BUS_ARN)
    except Rejection:
        return
    assert json.loads(entry["Detail"]) == json.loads(body)["detail"]


@given(st.dictionaries(st.text(), JSON_VALUES, max_size=5))
def test_an_entrys_detail_is_the_events_detail(detail: dict[str, Any]) -> None:
    entry = event_entry(json.dumps(event(detail=detail)), BUS_ARN)

    assert json.loads(entry["Detail"]) == detail
