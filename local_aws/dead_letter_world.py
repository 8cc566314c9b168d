"""A world in simulated time for the dead letters of other AWS services: a Lambda function invoked
asynchronously (its on-failure destination is the DLQ), or an EventBridge rule whose target is that
function (the target's DLQ). The clock, moto in-process under freezegun and the real re-driver
invoked on its schedule are local_aws.simulation's; what differs is what lies behind the DLQ.

Real (moto): the DLQ (the user's, so AWS's default retention of 4 days: the construct imports it,
it does not make it), the parking lot, the state table, the archive bucket, CloudWatch, and the
function's and the rule's configuration (the function's ``MaximumRetryAttempts`` and on-failure
destination, the rule target's dead-letter queue and ``RetryPolicy``), read back by the played
services. The re-driver is composed by ``compose_redriver`` from the default stack's settings
(cdk.json's context through the settings schema) with ``DEAD_LETTER_SOURCES``.

Played (moto runs no function code): Lambda and EventBridge, and the function.

- **The function** is the example consumer's order logic (``consumer.orders``): it parses the order
  (a poison one raises InvalidOrder) and submits it to a downstream that fails in its outage windows
  (DownstreamUnavailable); with ``circuit``, that submit is guarded by a real Powertools circuit
  breaker on a moto table (``aws_lambda_powertools.utilities.circuit_breaker``, DynamoDB
  persistence, recovery timeout 30 s): its records are Powertools' own.
- **Lambda, invoked asynchronously** (``Invoke``, ``InvocationType=Event``): answers 202 with the
  invocation's request id and runs the function at once; a failed run is tried again a minute
  later, then two minutes after that (``MaximumRetryAttempts`` 2, as configured); after the last
  failure Lambda writes a destination record under that invocation's request id (condition
  RetriesExhausted, the error in ``responsePayload``) to the on-failure destination: each
  re-drive's failure comes back under the id its Invoke got, a new one each time. For the rule's
  target, while the target is down the ``Invoke`` call itself fails (TooManyRequestsException: the
  function is throttled), and an event carrying a poison order is refused for good
  (InvalidRequestContentException). No well-formed event gets a refusal for good from the real
  Invoke: this one is played to measure how the re-driver treats a target that refuses an event
  for good (it treats every Lambda sender fault alike: core/delivery.py).
- **EventBridge** delivers the rule's events to the target (``produce``); a failed delivery goes
  to the target's DLQ at once (its ``RetryPolicy`` allows 0 retries: EventBridge's retry spacing is
  not documented, so none is played) with RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE,
  EXHAUSTED_RETRY_CONDITION and RETRY_ATTEMPTS.
- **CloudWatch's AWS metrics**, as local_aws.published_metrics publishes them (per minute, two
  minutes late): the function's ``AWS/Lambda`` Invocations, Errors and Throttles, and the rule's
  ``AWS/Events`` Invocations and FailedInvocations. EventBridge counts only its own deliveries: the
  re-driver invokes the target directly, so the rule's metrics never see a re-drive.

The clock jumps from event to event: the next schedule tick, or the function's next run.
"""

from __future__ import annotations

import heapq
import io
import json
import math
import random
import uuid
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools.utilities.circuit_breaker import CircuitBreakerConfig, circuit_breaker
from aws_lambda_powertools.utilities.circuit_breaker.exceptions import CircuitBreakerOpenError
from aws_lambda_powertools.utilities.circuit_breaker.persistence import CircuitBreakerDynamoDBPersistence
from botocore.exceptions import ClientError
from freezegun import freeze_time
from moto import mock_aws

from consumer.orders import (
    DownstreamUnavailable,
    FailureInjection,
    InvalidOrder,
    SimulatedDownstream,
    parse_order,
)
from local_aws import ACCOUNT, REGION, ROOT
from local_aws.clients import AtomicQueueCalls, ClientProxy, Counted
from local_aws.environment import environment
from local_aws.journal import Journal
from local_aws.published_metrics import INVOCATIONS, THROTTLES, MetricsOptions, PublishedMetrics, Series
from local_aws.queues import queue_counts
from local_aws.resources import breaker_state, create_state_table, create_table, queue_arn
from local_aws.server import moto_sqs_sped_up
from local_aws.simulated_redriver import Invocations, collect_parked, run_record, simulated_redriver
from local_aws.simulated_time import (
    SIM_EPOCH,
    UNFROZEN,
    SimulatedClock,
    SimulatedLongPoll,
    moto_queue,
    schedule_seconds,
)
from sqs_redriver.core.clients import AwsClients
from sqs_redriver.core.table import Resume
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.settings import CONTEXT_SETTINGS, RESOURCE_ENV, dlq_visibility_timeout
from sqs_redriver.protocol.sources import (
    MAX_PROBE_SECONDS,
    ConsumerBreaker,
    DeadLetterSource,
    Retries,
    SourceKind,
    TargetKind,
    sources_json,
)
from sqs_redriver.runtime.settings import Settings, load_settings

FUNCTION_NAME = "orders"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION_NAME}"
RULE_NAME = "orders-placed"
TARGET_ID = "orders"
DLQ_NAME = "orders-dead-letters"
PARKING_LOT_NAME = "orders-parking-lot"
STATE_TABLE = "redriver-state"
ARCHIVE_BUCKET = "redriver-archive"
CIRCUIT_TABLE = "orders-circuits"
CIRCUIT_NAME = "fulfilment"
CIRCUIT_RECOVERY_TIMEOUT_SECONDS = 30  # Powertools' default
# AWS's default retention of a queue: the user's DLQ, which the construct imports, not the
# construct's 14 days.
DLQ_RETENTION_SECONDS = 4 * 86_400
# Lambda's asynchronous retries: the second try a minute after the first, the third two minutes
# after the second.
RETRY_DELAYS_SECONDS = (60, 120)
FUNCTION_RETRIES = 2
FUNCTION_TIMEOUT_SECONDS = 30  # the example consumer's
THROTTLED = "TooManyRequestsException"
REFUSED_FOR_GOOD = "InvalidRequestContentException"
# What EventBridge writes as ERROR_CODE for the Invoke errors played here.
EVENTBRIDGE_ERROR_CODES = {THROTTLED: "THROTTLING", REFUSED_FOR_GOOD: "SDK_CLIENT_ERROR"}
EVENTS_NAMESPACE = "AWS/Events"
FAILED_INVOCATIONS = "FailedInvocations"

Window = tuple[float, float]  # epoch seconds, start inclusive, end exclusive


@dataclass(frozen=True)
class RuleSeries(Series):
    """A rule's AWS/Events series (dimension RuleName): what an active minute publishes."""

    @property
    def metrics(self) -> tuple[str, ...]:
        return (INVOCATIONS, FAILED_INVOCATIONS)


@dataclass(frozen=True)
class FunctionError:
    """A run of the function that raised: what Lambda reports as errorType and errorMessage."""

    type: str
    message: str


@dataclass(frozen=True)
class Invocation:
    """One Invoke call of the function: by the re-driver, or by a producer (EventBridge, for the
    rule). ``refused``: the error code Invoke answered; empty when it took the event."""

    at: float  # simulated seconds since the world started
    key: str
    by_redriver: bool
    refused: str = ""


@dataclass(frozen=True)
class FunctionRun:
    """One run of the function (a try of an invocation Lambda took); ``error`` empty: it succeeded."""

    at: float
    key: str
    attempt: int  # 1 for the first try
    by_redriver: bool
    error: str = ""


@dataclass
class TargetLog:
    """What happened behind the DLQ, in order."""

    invocations: list[Invocation] = field(default_factory=list)
    runs: list[FunctionRun] = field(default_factory=list)
    dead_lettered: list[tuple[float, str]] = field(default_factory=list)  # (when, key) into the DLQ
    circuit: list[tuple[float, str]] = field(
        default_factory=list
    )  # the function's breaker after each re-driver run


def order_key(text: str) -> str:
    """The order id of an event, a destination record or an EventBridge event (its detail)."""
    try:
        document = json.loads(text)
        for path in (("requestPayload", "order_id"), ("detail", "order_id"), ("order_id",)):
            value: Any = document
            for name in path:
                value = value.get(name) if isinstance(value, dict) else None
            if isinstance(value, str):
                return value
    except ValueError:
        pass
    return f"unparsable:{text[:40]}"


def down_at(windows: Sequence[Window], at: float) -> bool:
    return any(start <= at < end for start, end in windows)


class OrderFunction:
    """The function: the example consumer's order logic on one order. ``unwrap`` takes the order
    out of the event (the rule's target gets an EventBridge event, the order its detail). With a
    Powertools ``persistence``, the downstream call is guarded by the function's circuit breaker."""

    def __init__(
        self,
        downstream: SimulatedDownstream,
        *,
        unwrap: Callable[[Any], Any],
        persistence: CircuitBreakerDynamoDBPersistence | None = None,
    ) -> None:
        self.downstream = downstream
        self._unwrap = unwrap
        self._submit: Callable[..., Any] = downstream.submit
        if persistence is not None:
            config = CircuitBreakerConfig(recovery_timeout=CIRCUIT_RECOVERY_TIMEOUT_SECONDS)
            guard = circuit_breaker(name=CIRCUIT_NAME, persistence_store=persistence, config=config)
            self._submit = guard(downstream.submit)

    def __call__(self, payload: str) -> FunctionError | None:
        """Run on one event; the error Lambda would report, or None."""
        try:
            order = parse_order(json.dumps(self._unwrap(json.loads(payload))))
            self._submit(order)
        except (InvalidOrder, DownstreamUnavailable, CircuitBreakerOpenError) as exc:
            return FunctionError(type(exc).__name__, str(exc))
        return None


@dataclass(order=True, frozen=True)
class _Try:
    """A try of an invocation Lambda took, due at ``at_ms``."""

    at_ms: int
    sequence: int
    payload: str = field(compare=False)
    attempt: int = field(compare=False)
    by_redriver: bool = field(compare=False)
    request_id: str = field(compare=False)  # the invocation's: its failure's record carries it


class PlayedLambda:
    """Lambda for the one function, invoked asynchronously (see the module's docstring).

    ``refusal(payload, now)``: the ClientError the Invoke call itself answers, or None (it takes the
    event). ``dead_letter(payload, error, attempts, request_id)``: called after the last try failed
    (the function's on-failure destination), with the request id Invoke answered."""

    def __init__(
        self,
        world: DeadLetterWorld,
        function: OrderFunction,
        *,
        refusal: Callable[[str, float], ClientError | None],
        retries: int,
        dead_letter: Callable[[str, FunctionError, int, str], None] | None,
    ) -> None:
        if retries > len(RETRY_DELAYS_SECONDS):
            raise ValueError(f"Lambda retries an asynchronous invocation at most twice, not {retries} times")
        self._world = world
        self._retries = retries
        self._function = function
        self._refusal = refusal
        self._dead_letter = dead_letter
        self._due: list[_Try] = []
        self._sequence = 0

    def invoke(self, payload: str, *, by_redriver: bool) -> str:
        """An asynchronous Invoke now: raises the refusal's ClientError, or takes the event and
        answers its request id (Lambda keeps it through its retries)."""
        world = self._world
        refusal = self._refusal(payload, world.clock())
        code = str(refusal.response["Error"]["Code"]) if refusal is not None else ""
        world.log.invocations.append(Invocation(world.clock.elapsed, order_key(payload), by_redriver, code))
        if refusal is not None:
            throttled = code == THROTTLED
            world.metrics.count(Series.function(FUNCTION_NAME), THROTTLES, int(throttled))
            raise refusal
        request_id = world.new_id()
        self._schedule(payload, 1, by_redriver, request_id, at_ms=world.clock.now_ms)
        return request_id

    def invoke_now(self, payload: str, *, by_redriver: bool) -> FunctionError | None:
        """A synchronous Invoke (RequestResponse) now: raises the refusal's ClientError, or runs
        the function at once and answers its error; Lambda neither retries it nor dead-letters it."""
        world = self._world
        refusal = self._refusal(payload, world.clock())
        code = str(refusal.response["Error"]["Code"]) if refusal is not None else ""
        world.log.invocations.append(Invocation(world.clock.elapsed, order_key(payload), by_redriver, code))
        if refusal is not None:
            world.metrics.count(Series.function(FUNCTION_NAME), THROTTLES, int(code == THROTTLED))
            raise refusal
        error = self._function(payload)
        world.metrics.invoked(error=error is not None)
        world.log.runs.append(
            FunctionRun(world.clock.elapsed, order_key(payload), 1, by_redriver, error.type if error else "")
        )
        return error

    def next_ms(self) -> int | None:
        return self._due[0].at_ms if self._due else None

    def pending_keys(self) -> set[str]:
        """The orders of the invocations Lambda is still trying."""
        return {order_key(due.payload) for due in self._due}

    def run_next(self) -> None:
        """Run the try that is due first (the clock is at its time)."""
        due = heapq.heappop(self._due)
        world = self._world
        error = self._function(due.payload)
        world.metrics.invoked(error=error is not None)
        key = order_key(due.payload)
        world.log.runs.append(
            FunctionRun(world.clock.elapsed, key, due.attempt, due.by_redriver, error.type if error else "")
        )
        if error is None:
            return
        if due.attempt <= self._retries:
            at_ms = world.clock.now_ms + RETRY_DELAYS_SECONDS[due.attempt - 1] * 1000
            self._schedule(due.payload, due.attempt + 1, due.by_redriver, due.request_id, at_ms=at_ms)
        elif self._dead_letter is not None:
            self._dead_letter(due.payload, error, due.attempt, due.request_id)

    def _schedule(
        self, payload: str, attempt: int, by_redriver: bool, request_id: str, *, at_ms: int
    ) -> None:
        self._sequence += 1
        heapq.heappush(self._due, _Try(at_ms, self._sequence, payload, attempt, by_redriver, request_id))


class LambdaClient(ClientProxy):
    """The re-driver's Lambda client: moto's, its Invoke played by ``PlayedLambda``."""

    def __init__(self, client: Any, played: PlayedLambda) -> None:
        super().__init__(client)
        self._played = played

    def invoke(self, **kwargs: Any) -> Any:
        payload = kwargs["Payload"]
        text = payload.decode("utf-8") if isinstance(payload, bytes) else payload
        if kwargs.get("InvocationType") == "RequestResponse":  # a canary probed synchronously
            error = self._played.invoke_now(text, by_redriver=True)
            if error is None:
                return {"StatusCode": 200, "Payload": io.BytesIO(b"null")}
            answer = json.dumps({"errorType": error.type, "errorMessage": error.message}).encode()
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(answer)}
        if kwargs.get("InvocationType") != "Event":
            raise ValueError(
                f"the world plays Event and RequestResponse invocations, not {kwargs.get('InvocationType')}"
            )
        request_id = self._played.invoke(text, by_redriver=True)
        response = self._client.invoke(**kwargs)  # moto: 202, and runs nothing
        response["ResponseMetadata"] = {**response.get("ResponseMetadata", {}), "RequestId": request_id}
        return response


def client_error(code: str, message: str, status: int) -> ClientError:
    """What botocore raises for an Invoke that Lambda answered with an error."""
    response: Any = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, "Invoke")


# --- the resources and the re-driver's settings ---------------------------------------------------


@dataclass(frozen=True)
class Resources:
    """What the world creates in moto, and what the played services read back of it."""

    dlq_url: str
    parking_lot_url: str
    rule_arn: str  # "" without a rule
    function_retries: int  # the function's MaximumRetryAttempts
    function_timeout_seconds: int
    destination_url: str  # the function's on-failure destination ("" without one)
    rule_retry_policy: dict[str, int]  # the rule target's RetryPolicy ({} without a rule)


def create_resources(kind: SourceKind, sqs: Any, dynamodb: Any, *, circuit: bool) -> Resources:
    """The DLQ, the parking lot, the state table, the archive bucket, the function (and its
    breaker's table), and for a rule target the rule; their configuration read back."""
    dlq_url = sqs.create_queue(
        QueueName=DLQ_NAME, Attributes={"MessageRetentionPeriod": str(DLQ_RETENTION_SECONDS)}
    )["QueueUrl"]
    parking_lot_url = sqs.create_queue(QueueName=PARKING_LOT_NAME)["QueueUrl"]
    create_state_table(dynamodb, STATE_TABLE)
    if circuit:
        create_table(dynamodb, CIRCUIT_TABLE, "id")
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=ARCHIVE_BUCKET)
    lambda_client = boto3.client("lambda", region_name=REGION)
    _create_function(lambda_client)
    destination: Any = (
        {"OnFailure": {"Destination": queue_arn(sqs, dlq_url)}} if kind is SourceKind.FUNCTION else {}
    )
    lambda_client.put_function_event_invoke_config(
        FunctionName=FUNCTION_NAME, MaximumRetryAttempts=FUNCTION_RETRIES, DestinationConfig=destination
    )
    rule_arn, retry_policy = (
        _create_rule(queue_arn(sqs, dlq_url)) if kind is SourceKind.RULE_TARGET else ("", {})
    )
    config = lambda_client.get_function_event_invoke_config(FunctionName=FUNCTION_NAME)
    destination_arn = config.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination", "")
    return Resources(
        dlq_url=dlq_url,
        parking_lot_url=parking_lot_url,
        rule_arn=rule_arn,
        function_retries=int(config["MaximumRetryAttempts"]),
        function_timeout_seconds=int(
            lambda_client.get_function_configuration(FunctionName=FUNCTION_NAME)["Timeout"]
        ),
        rule_retry_policy=retry_policy,
        destination_url=sqs.get_queue_url(QueueName=destination_arn.rsplit(":", 1)[-1])["QueueUrl"]
        if destination_arn
        else "",
    )


def _create_function(lambda_client: Any) -> None:
    role = boto3.client("iam", region_name=REGION).create_role(
        RoleName=FUNCTION_NAME,
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    raise NotImplementedError\n")
    lambda_client.create_function(
        FunctionName=FUNCTION_NAME,
        Runtime="python3.13",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": code.getvalue()},
        Timeout=FUNCTION_TIMEOUT_SECONDS,
    )


def _create_rule(dlq_arn: str) -> tuple[str, dict[str, int]]:
    """The rule and its one target, the function, with the DLQ and no retries; the rule's ARN and
    the target's retry policy as read back."""
    events = boto3.client("events", region_name=REGION)
    rule_arn: str = events.put_rule(
        Name=RULE_NAME, EventPattern=json.dumps({"source": ["shop.orders"], "detail-type": ["Order Placed"]})
    )["RuleArn"]
    events.put_targets(
        Rule=RULE_NAME,
        Targets=[
            {
                "Id": TARGET_ID,
                "Arn": FUNCTION_ARN,
                "DeadLetterConfig": {"Arn": dlq_arn},
                "RetryPolicy": {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60},
            }
        ],
    )
    [target] = events.list_targets_by_rule(Rule=RULE_NAME)["Targets"]
    if target["RetryPolicy"]["MaximumRetryAttempts"] != 0 or target["DeadLetterConfig"]["Arn"] != dlq_arn:
        raise RuntimeError(f"the rule's target did not keep its DLQ and retry policy: {target}")
    return rule_arn, dict(target["RetryPolicy"])


def dead_letter_source(kind: SourceKind, resources: Resources, *, circuit: bool) -> DeadLetterSource:
    """The source as the construct writes it (infra/sqs_redriver/cdk/dead_letters.py): the function,
    its tries (the first and its retries, each within its timeout and Lambda's longest wait between
    two) and its breaker when it keeps one; or the rule's target, the function, with EventBridge's
    tries (each within its share of the maximum event age)."""
    breaker = (
        ConsumerBreaker(
            CIRCUIT_TABLE, CIRCUIT_NAME, recovery_timeout_seconds=CIRCUIT_RECOVERY_TIMEOUT_SECONDS
        )
        if circuit
        else None
    )
    if kind is SourceKind.FUNCTION:
        retries = Retries(
            1 + resources.function_retries, resources.function_timeout_seconds + max(RETRY_DELAYS_SECONDS)
        )
        timeout = resources.function_timeout_seconds
        return DeadLetterSource(
            kind,
            FUNCTION_ARN,
            TargetKind.FUNCTION,
            FUNCTION_ARN,
            retries,
            breaker=breaker,
            probe_timeout_seconds=timeout if timeout <= MAX_PROBE_SECONDS else 0,
        )
    policy = resources.rule_retry_policy
    attempts = 1 + policy["MaximumRetryAttempts"]
    retries = Retries(attempts, max(1, math.ceil(policy["MaximumEventAgeInSeconds"] / attempts)))
    return DeadLetterSource(
        kind,
        resources.rule_arn,
        TargetKind.FUNCTION,
        FUNCTION_ARN,
        retries,
        target_id=TARGET_ID,
        breaker=breaker,
    )


@dataclass(frozen=True)
class StackDefaults:
    """The default stack's settings (cdk.json's ``redriver`` context through the schema) as the
    construct hands them to the function, and the function's schedule and timeout."""

    environment: dict[str, str]
    schedule_seconds: int
    timeout_seconds: int


@cache
def stack_defaults() -> StackDefaults:
    context = json.loads((ROOT / "cdk.json").read_text())["context"]["redriver"]
    values = {
        setting.name: setting.parse(context[setting.name], setting.name)
        if setting.name in context
        else setting.default
        for setting in CONTEXT_SETTINGS
    }
    environment = {s.env: s.to_env(values[s.name]) for s in CONTEXT_SETTINGS if s.env}
    environment["DLQ_VISIBILITY_TIMEOUT_SECONDS"] = str(
        dlq_visibility_timeout(values["redriver_timeout_seconds"])
    )
    return StackDefaults(
        environment, schedule_seconds(values["schedule"]), int(values["redriver_timeout_seconds"])
    )


def redriver_settings(resources: Resources, source: DeadLetterSource) -> Settings:
    """The re-driver's settings: the default stack's, the world's resources, ``DEAD_LETTER_SOURCES``;
    its batches in one worker (local_aws.simulation says why)."""
    environment = {
        **stack_defaults().environment,
        RESOURCE_ENV["dlq_url"]: resources.dlq_url,
        RESOURCE_ENV["parking_lot_url"]: resources.parking_lot_url,
        RESOURCE_ENV["table_name"]: STATE_TABLE,
        RESOURCE_ENV["archive_bucket"]: ARCHIVE_BUCKET,
        RESOURCE_ENV["dead_letter_sources"]: sources_json([source]),
    }
    return replace(load_settings(environment), parallel_batches=1)


# --- what AWS writes into the DLQ -----------------------------------------------------------------


def destination_record(
    payload: str, error: FunctionError, *, request_id: str, attempts: int, at: float
) -> str:
    """The on-failure destination record of an asynchronous invocation whose tries all failed (the
    Lambda Developer Guide's shape; Lambda names the invoked version)."""
    record = {
        "version": "1.0",
        "timestamp": _iso(at),
        "requestContext": {
            "requestId": request_id,
            "functionArn": f"{FUNCTION_ARN}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": attempts,
        },
        "requestPayload": json.loads(payload),
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {
            "errorMessage": error.message,
            "errorType": error.type,
            "requestId": request_id,
            "stackTrace": [],
        },
    }
    return json.dumps(record)


def rule_target_attributes(rule_arn: str, error: ClientError) -> dict[str, dict[str, str]]:
    """EventBridge's attributes on an event it could not deliver to the target (the EventBridge
    User Guide's list), after no retries."""
    code = str(error.response["Error"]["Code"])
    values = {
        "RULE_ARN": rule_arn,
        "TARGET_ARN": FUNCTION_ARN,
        "ERROR_CODE": EVENTBRIDGE_ERROR_CODES.get(code, "SDK_CLIENT_ERROR"),
        "ERROR_MESSAGE": f"{code}: {error.response['Error']['Message']}",
        "EXHAUSTED_RETRY_CONDITION": "MaximumRetryAttempts",
        "RETRY_ATTEMPTS": "0",
    }
    return {name: {"DataType": "String", "StringValue": value} for name, value in values.items()}


def rule_event(order: str, *, event_id: str, at: float) -> str:
    """An EventBridge event carrying an order, as the rule delivers it to its target."""
    event = {
        "version": "0",
        "id": event_id,
        "detail-type": "Order Placed",
        "source": "shop.orders",
        "account": ACCOUNT,
        "time": _iso(at)[:19] + "Z",
        "region": REGION,
        "resources": [],
        "detail": json.loads(order),
    }
    return json.dumps(event)


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- the world ------------------------------------------------------------------------------------


class DeadLetterWorld:
    """See the module's docstring. Built by ``open_dead_letter_world``; ``outages`` (epoch seconds)
    are the downstream's for a function source, the target's (throttled) for a rule's."""

    def __init__(
        self,
        kind: SourceKind,
        clock: SimulatedClock,
        *,
        outages: Sequence[Window],
        circuit: bool,
        seed: int,
        metrics: MetricsOptions,
        partial_outages: Sequence[tuple[float, float, str]] = (),
    ) -> None:
        self.kind = kind
        self.clock = clock
        self.log = TargetLog()
        self.journal = Journal()  # the re-driver's runs and what they parked
        self.metrics = PublishedMetrics(
            boto3.client("cloudwatch", region_name=REGION), clock, FUNCTION_NAME, metrics
        )
        self.sqs: Any = AtomicQueueCalls(boto3.client("sqs", region_name=REGION))
        self.dynamodb: Any = boto3.client("dynamodb", region_name=REGION)
        self.resources = create_resources(kind, self.sqs, self.dynamodb, circuit=circuit)
        self.source = dead_letter_source(kind, self.resources, circuit=circuit)
        self.settings = redriver_settings(self.resources, self.source)
        self._rng = random.Random(seed)
        self.downstream = SimulatedDownstream(
            FailureInjection(
                outage_windows=outages if kind is SourceKind.FUNCTION else (),
                partial_outages=partial_outages if kind is SourceKind.FUNCTION else (),
            ),
            clock=clock,
        )
        self.target = PlayedLambda(
            self,
            self._function(circuit),
            refusal=_no_refusal if kind is SourceKind.FUNCTION else _rule_target_refusal(outages),
            retries=self.resources.function_retries,
            dead_letter=self._destination_record if self.resources.destination_url else None,
        )
        self._clients = _RedriverClients(self, self.target)
        clients = self._clients.aws
        self.redriver = simulated_redriver(
            self.settings,
            sqs=clients.sqs,
            dynamodb=clients.dynamodb,
            s3=clients.s3,
            cloudwatch=clients.cloudwatch,
            clock=clock,
            sleep=self.sleep,
            seed=seed,
            delivery=clients.delivery,
        )
        self._invocations = Invocations(clock, stack_defaults().schedule_seconds)

    @property
    def requests(self) -> dict[str, int]:
        """The re-driver's AWS calls so far, by operation."""
        return self._clients.requests()

    def produce(self, orders: Sequence[str]) -> None:
        """The function's producers invoke it with these orders now; for a rule's target, the rule
        matched an event carrying each, and EventBridge delivers it to the target."""
        for order in orders:
            if self.kind is SourceKind.FUNCTION:
                self.target.invoke(order, by_redriver=False)
            else:
                self._deliver_event(rule_event(order, event_id=self.new_id(), at=self.clock()))

    def run(self, *, until: Callable[[], bool] = lambda: False, for_seconds: float) -> None:
        """Move the world for ``for_seconds``, or until ``until()`` holds (checked after each run of
        the function and of the re-driver)."""
        end_ms = self.clock.now_ms + round(for_seconds * 1000)
        while not until() and self.clock.now_ms < end_ms:
            start_ms = self._invocations.next_ms()
            self._advance(min(start_ms, end_ms), until)
            if self.clock.now_ms >= start_ms:
                self._redriver_run(self._invocations.take())

    def sleep(self, seconds: float) -> None:
        """The re-driver waits: the function runs meanwhile."""
        self._advance(self.clock.now_ms + round(seconds * 1000), lambda: False)

    def dlq_total(self) -> int:
        """Messages in the DLQ: visible, in flight or delayed."""
        return queue_counts(self.sqs, self.resources.dlq_url).total

    def dlq_keys(self) -> list[str]:
        """The order of each message in the DLQ, read from moto's backend without receiving it."""
        return [order_key(message.body) for message in moto_queue(self.resources.dlq_url)._messages]

    def parking_reasons(self) -> dict[str, str]:
        """Why each parked order was parked, from the archive (a dead letter's parked copy carries
        no mark: its reason is in the archive and the state table)."""
        s3 = boto3.client("s3", region_name=REGION)
        reasons = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=ARCHIVE_BUCKET):
            for item in page.get("Contents", []):
                document = json.loads(s3.get_object(Bucket=ARCHIVE_BUCKET, Key=item["Key"])["Body"].read())
                reasons[order_key(document["body"])] = str(document["reason"]["why"])
        return reasons

    def _function(self, circuit: bool) -> OrderFunction:
        persistence = (
            CircuitBreakerDynamoDBPersistence(
                table_name=CIRCUIT_TABLE, boto3_client=boto3.client("dynamodb", region_name=REGION)
            )
            if circuit
            else None
        )
        unwrap = _same if self.kind is SourceKind.FUNCTION else _detail
        return OrderFunction(self.downstream, unwrap=unwrap, persistence=persistence)

    def _deliver_event(self, event: str) -> None:
        """EventBridge delivers an event to the target; a failure goes to its DLQ at once."""
        rule = RuleSeries(EVENTS_NAMESPACE, "RuleName", RULE_NAME)
        self.metrics.count(rule, INVOCATIONS, 1)
        try:
            self.target.invoke(event, by_redriver=False)
        except ClientError as error:
            self.metrics.count(rule, FAILED_INVOCATIONS, 1)
            attributes = rule_target_attributes(self.resources.rule_arn, error)
            self.sqs.send_message(
                QueueUrl=self.resources.dlq_url, MessageBody=event, MessageAttributes=attributes
            )
            self.log.dead_lettered.append((self.clock.elapsed, order_key(event)))

    def _destination_record(self, payload: str, error: FunctionError, attempts: int, request_id: str) -> None:
        record = destination_record(payload, error, request_id=request_id, attempts=attempts, at=self.clock())
        self.sqs.send_message(QueueUrl=self.resources.destination_url, MessageBody=record)
        self.log.dead_lettered.append((self.clock.elapsed, order_key(payload)))

    def new_id(self) -> str:
        """A fresh id (a request's, an event's), from the world's seed."""
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _advance(self, target_ms: int, until: Callable[[], bool]) -> None:
        """Run the function's tries due up to ``target_ms``, then set the clock there; or stop where
        ``until()`` starts to hold."""
        while not until():
            due = self.target.next_ms()
            if due is None or due > target_ms:
                self.clock.move_to(max(target_ms, self.clock.now_ms))
                return
            self.clock.move_to(max(due, self.clock.now_ms))
            self.target.run_next()

    def _redriver_run(self, resume: Resume | None) -> None:
        """One invocation of the re-driver: a schedule tick's (``resume`` None) or a continuation."""
        started = self.clock.now_ms
        deadline_ms = started + stack_defaults().timeout_seconds * 1000

        def remaining_ms() -> int:  # the Lambda context's, on the simulated clock
            return max(0, deadline_ms - self.clock.now_ms)

        report = self.redriver.run(remaining_ms, resume)
        self._invocations.returned(report, scheduled=resume is None)
        key = RecordKind.BREAKER.key(self.source.address)
        state = breaker_state(self.dynamodb, STATE_TABLE, key)
        self.journal.runs.append(
            run_record(report, started_ms=started, clock=self.clock, breaker_state=state)
        )
        collect_parked(
            self.sqs, self.resources.parking_lot_url, self.journal, key=order_key, at=self.clock.elapsed
        )
        if self.source.breaker is not None:
            self.log.circuit.append((self.clock.elapsed, self._circuit_state()))

    def _circuit_state(self) -> str:
        """The function's Powertools breaker as its record says (CLOSED before it has one)."""
        item = self.dynamodb.get_item(
            TableName=CIRCUIT_TABLE, Key={"id": {"S": CIRCUIT_NAME}}, ConsistentRead=True
        ).get("Item")
        return str(item["state"]["S"]) if item else "CLOSED"


class _RedriverClients:
    """The re-driver's clients, each call counted: the world's queues (a long poll in simulated
    time), the state table, CloudWatch, the archive, and the target's Lambda."""

    def __init__(self, world: DeadLetterWorld, target: PlayedLambda) -> None:
        self._counted = {
            "sqs": Counted(SimulatedLongPoll(world.sqs, world.sleep)),
            "dynamodb": Counted(world.dynamodb),
            "cloudwatch": Counted(boto3.client("cloudwatch", region_name=REGION)),
            "s3": Counted(boto3.client("s3", region_name=REGION)),
            "lambda": Counted(LambdaClient(boto3.client("lambda", region_name=REGION), target)),
        }
        counted = self._counted
        self.aws = AwsClients(
            sqs=counted["sqs"],
            dynamodb=counted["dynamodb"],
            s3=counted["s3"],
            cloudwatch=counted["cloudwatch"],
            delivery=self.delivery,
        )

    def delivery(self, service: str, region: str | None = None) -> Any:
        """A target's client by service: the world plays a function target (and has the queues)."""
        if service not in ("lambda", "sqs"):
            raise ValueError(f"the world plays a function target only, not a {service} one")
        return self._counted[service]

    def requests(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for client in self._counted.values():
            for operation, count in client.calls.items():
                total[operation] = total.get(operation, 0) + count
        return total


def _no_refusal(payload: str, now: float) -> ClientError | None:
    return None


def _rule_target_refusal(outages: Sequence[Window]) -> Callable[[str, float], ClientError | None]:
    """The rule's target: throttled while down; an event carrying a poison order refused for good."""

    def refusal(payload: str, now: float) -> ClientError | None:
        if down_at(outages, now):
            return client_error(THROTTLED, "Rate Exceeded.", 429)
        try:
            parse_order(json.dumps(_detail(json.loads(payload))))
        except InvalidOrder:
            return client_error(REFUSED_FOR_GOOD, "Could not parse request body into json", 400)
        return None

    return refusal


def _same(event: Any) -> Any:
    return event


def _detail(event: Any) -> Any:
    return event.get("detail") if isinstance(event, dict) else None


@contextmanager
def open_dead_letter_world(
    kind: SourceKind,
    *,
    outages: Sequence[Window] = (),
    circuit: bool = False,
    seed: int = 7,
    metrics: MetricsOptions | None = None,
    partial_outages: Sequence[tuple[float, float, str]] = (),
) -> Iterator[DeadLetterWorld]:
    """A DeadLetterWorld at simulated time SIM_EPOCH in a fresh in-process moto: a function source
    (``kind`` FUNCTION; ``circuit``: the function keeps a Powertools breaker the source names) or a
    rule's target (RULE_TARGET). AWS metrics published as ``metrics`` says (two minutes late). A
    function's downstream refuses the customers of one domain during each of ``partial_outages``
    (start, end, domain)."""
    with (
        environment({"AWS_DEFAULT_REGION": REGION}, unset=["AWS_ENDPOINT_URL", "AWS_PROFILE"]),
        mock_aws(config={"lambda": {"use_docker": False}}),
        freeze_time(datetime.fromtimestamp(SIM_EPOCH, UTC), tick=False, ignore=UNFROZEN) as freezer,
        moto_sqs_sped_up(),
    ):
        clock = SimulatedClock(freezer, SIM_EPOCH * 1000)
        yield DeadLetterWorld(
            kind,
            clock,
            outages=outages,
            circuit=circuit,
            seed=seed,
            metrics=metrics or MetricsOptions(seed=seed),
            partial_outages=partial_outages,
        )
