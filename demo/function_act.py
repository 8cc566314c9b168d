"""Another kind of DLQ, after act 1 and on its local AWS: a Lambda function's asynchronous failures,
in real time (seconds).

The function ``orders-notifier`` e-mails a customer about an order; it is invoked asynchronously,
and its event invoke config sends the record of a failed invocation to its DLQ (on-failure
destination). moto stores the function and that config but cannot run code: the function is played
here, with Lambda's retries and the record Lambda writes after the last one
(local_aws/async_lambda.py). The re-driver is the real one, composed (wiring.compose_redriver) from
the demo profile's settings, read from the deployed re-driver's environment, with
``DEAD_LETTER_SOURCES`` naming the function in place of ``SOURCE_QUEUE_URL``, its own DLQ, parking
lot and state table, and two settings of its own so the act takes seconds: slow start off (without
verdicts it paces by time, a whole batch only after ~8 s) and 3 re-drives before parking. The
construct's ``SqsRedriver.for_function`` is not there yet, so this re-driver is composed from
settings on the demo's moto server, as local_aws composes one, rather than deployed from a
synthesized stack.

The story: notifications are invoked while the mail service is down; each fails its three attempts
and its record lands in the DLQ. The mail service comes back. The re-driver invokes the function
again with each record's event: the good ones are e-mailed, once each. One notification is for an
order without an e-mail address: it fails every time, each time in a new record with a new request
id, is counted as the same event by its payload, and is parked at the limit with the function's
error. Times are seconds from the act's start.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3

from local_aws import ACCOUNT, REGION
from local_aws.async_lambda import AsyncInvocations, Outcome
from local_aws.cloudformation import Deployment
from local_aws.compose import local_redriver
from local_aws.events import LambdaContext
from local_aws.queues import peek, queue_counts
from local_aws.resources import STATE_TABLE_KEY, create_state_table, queue_arn
from sqs_redriver.protocol.envelope import from_sqs
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.settings import RESOURCE_ENV
from sqs_redriver.protocol.sources import DeadLetterSource, Retries, SourceKind, TargetKind, sources_json
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.settings import Settings, load_settings

FUNCTION_NAME = "orders-notifier"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION_NAME}"
RETRY_ATTEMPTS = 2  # Lambda's default for an asynchronous invocation, set in its event invoke config
POLL_SLEEP_SECONDS = 0.05


class MailServiceUnavailable(Exception):
    """The mail service is down (transient)."""


class NoEmailAddress(Exception):
    """The order names no e-mail address (poison: it never will)."""


@dataclass(frozen=True)
class FunctionOptions:
    good: int = 2
    poison: int = 1
    tick_seconds: float = 1.0  # one re-driver run per tick, as in act 1
    time_limit_seconds: float = 240.0  # gives up if it has not settled after this long, as act 1


@dataclass
class OrdersNotifier:
    """The function's code, played: it e-mails a notification once the mail service is up."""

    mail_service_up: bool = False
    emailed: Counter[str] = field(default_factory=Counter)

    def __call__(self, event: dict[str, Any]) -> None:
        order_id = event["order_id"]
        if not event.get("email"):
            raise NoEmailAddress(f"order {order_id} has no e-mail address to notify")
        if not self.mail_service_up:
            raise MailServiceUnavailable("the mail service answered 503 Service Unavailable")
        self.emailed[order_id] += 1


@dataclass
class NotifiedEvent:
    """One notification event and what became of it."""

    order_id: str
    poison: bool
    fate: str = "not settled"  # delivered | parked | not settled
    attempts: int = 0  # times the function ran with it, Lambda's retries included
    records: int = 0  # destination records Lambda wrote for it, each with a new request id
    redriven: int = 0  # invocations by the re-driver
    delivered_at: float | None = None
    parked_reason: str = ""
    parked_request_id: str = ""  # the request id of the record parked (the last one)
    parked_message_id: str = ""  # its MessageId in the parking lot


@dataclass
class FunctionProgress:
    """A snapshot for the live view."""

    elapsed: float = 0.0
    mail_service_up: bool = False
    dlq: int = 0
    parking_lot: int = 0
    invocations: int = 0
    records: int = 0
    runs: int = 0
    redriven: int = 0
    delivered: int = 0
    parked: int = 0


@dataclass
class FunctionAct:
    function_name: str
    function_arn: str
    dlq_url: str
    parking_lot_url: str
    table_name: str
    max_redrive_count: int
    events: list[NotifiedEvent]
    runs: int
    redriven: int  # the runs' re-drives (Lambda Invoke calls that Lambda took)
    parked: int  # the runs' parkings
    delivered_once: int  # good events the function e-mailed exactly once
    request_ids: int  # distinct request ids among the records Lambda wrote
    wall_seconds: float
    settled: bool  # every event delivered or parked, the DLQ empty
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NotifierResources:
    dlq_url: str
    parking_lot_url: str
    table_name: str


def deploy_notifier(clients: dict[str, Any]) -> NotifierResources:
    """The function in moto (its code a stand-in: moto never runs it), its DLQ as its on-failure
    destination, and its re-driver's parking lot and state table."""
    iam, lambda_, sqs = clients["iam"], clients["lambda"], clients["sqs"]
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    role = iam.create_role(RoleName=FUNCTION_NAME, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    lambda_.create_function(
        FunctionName=FUNCTION_NAME,
        Runtime="python3.13",
        Role=role,
        Handler="notifier.handler",
        Code={"ZipFile": _stand_in_code()},
    )
    dlq_url = sqs.create_queue(QueueName=f"{FUNCTION_NAME}-dlq")["QueueUrl"]
    lambda_.put_function_event_invoke_config(
        FunctionName=FUNCTION_NAME,
        MaximumRetryAttempts=RETRY_ATTEMPTS,
        DestinationConfig={"OnFailure": {"Destination": queue_arn(sqs, dlq_url)}},
    )
    parking_lot_url = sqs.create_queue(QueueName=f"{FUNCTION_NAME}-parking-lot")["QueueUrl"]
    table_name = f"{FUNCTION_NAME}-redriver-state"
    create_state_table(clients["dynamodb"], table_name)
    return NotifierResources(dlq_url, parking_lot_url, table_name)


def _stand_in_code() -> bytes:
    """A deployment package for moto to store: the function's real code is OrdersNotifier."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notifier.py", "def handler(event, context):\n    raise NotImplementedError\n")
    return buffer.getvalue()


def notifier_source() -> DeadLetterSource:
    """The function as a dead-letter source: its failures go back to it, invoked asynchronously.
    The played Lambda tries an event 3 times at once (no one- and two-minute waits): a failure of
    a re-driven event is back in the DLQ within a second of its invocation."""
    return DeadLetterSource(
        kind=SourceKind.FUNCTION,
        arn=FUNCTION_ARN,
        target_kind=TargetKind.FUNCTION,
        target_arn=FUNCTION_ARN,
        retries=Retries(attempts=1 + RETRY_ATTEMPTS, attempt_seconds=1),
    )


def notifier_settings(deployment: Deployment, resources: NotifierResources) -> Settings:
    """The demo profile's settings (the deployed re-driver's environment) over the function's
    resources: its DLQ, its parking lot, its state table, no archive. The notifier uses no
    consumer kit (no verdicts), and moto publishes no AWS/Lambda metrics to judge it by. Slow
    start off and 3 re-drives before parking: the act has three events and takes seconds."""
    tunables = {
        name: value
        for name, value in deployment.redriver.environment.items()
        if name not in RESOURCE_ENV.values()
    }
    return load_settings(
        tunables
        | {
            RESOURCE_ENV["dlq_url"]: resources.dlq_url,
            RESOURCE_ENV["parking_lot_url"]: resources.parking_lot_url,
            RESOURCE_ENV["table_name"]: resources.table_name,
            RESOURCE_ENV["dead_letter_sources"]: sources_json([notifier_source()]),
            "CONSUMER_VERDICTS": "false",
            "QUEUE_METRICS": "false",
            "SLOW_START_SECONDS": "0",
            "MAX_REDRIVE_COUNT": "3",
        }
    )


def notification(order_id: str, *, poison: bool) -> dict[str, Any]:
    event: dict[str, Any] = {"order_id": order_id, "status": "shipped"}
    if not poison:
        event["email"] = f"customer-{order_id}@example.com"
    return event


def run_function_act(
    deployment: Deployment,
    options: FunctionOptions,
    on_progress: Callable[[FunctionProgress], None] = lambda _: None,
) -> FunctionAct:
    """Play the act on the local AWS boto3 reaches now (act 1's moto server) and account for every event."""
    clients = {name: boto3.client(name) for name in ("iam", "lambda", "sqs", "dynamodb")}
    resources = deploy_notifier(clients)
    settings = notifier_settings(deployment, resources)
    return _FunctionStory(deployment, options, clients, resources, settings, on_progress).play()


class _FunctionStory:
    def __init__(
        self,
        deployment: Deployment,
        options: FunctionOptions,
        clients: dict[str, Any],
        resources: NotifierResources,
        settings: Settings,
        on_progress: Callable[[FunctionProgress], None],
    ) -> None:
        self.options = options
        self.sqs = clients["sqs"]
        self.dynamodb = clients["dynamodb"]
        self.resources = resources
        self.settings = settings
        self.on_progress = on_progress
        self.notifier = OrdersNotifier()
        self.lambda_service = AsyncInvocations(clients["lambda"], self.sqs, {FUNCTION_NAME: self.notifier})
        self.redriver: Redriver = local_redriver(
            settings,
            sqs=self.sqs,
            dynamodb=self.dynamodb,
            delivery=lambda service, region: self.lambda_service,
            sleep=self._while_redriver_waits,
            logger_name=f"redriver-{FUNCTION_NAME}",
        )
        self.redriver_timeout = deployment.redriver.timeout_seconds
        self.events = {
            order_id: NotifiedEvent(order_id, poison)
            for order_id, poison in [(f"o-{n:04d}", False) for n in range(1, options.good + 1)]
            + [(f"p-{n:04d}", True) for n in range(1, options.poison + 1)]
        }
        self.progress = FunctionProgress()
        self.started = time.monotonic()
        self.request_ids: set[str] = set()
        self.run_tally = Counter[str]()

    def play(self) -> FunctionAct:
        # Invoked asynchronously while the mail service is down: every event ends in the DLQ.
        for order_id, event in self.events.items():
            body = json.dumps(notification(order_id, poison=event.poison))
            self.lambda_service.invoke(FunctionName=FUNCTION_NAME, InvocationType="Event", Payload=body)
        self._run_lambda(redriven=False)
        self.notifier.mail_service_up = self.progress.mail_service_up = True
        settled = self._run_until_settled(self.started + self.options.time_limit_seconds)
        return self._account(settled)

    def _run_until_settled(self, deadline: float) -> bool:
        next_run = time.monotonic()
        while time.monotonic() < deadline:
            if time.monotonic() >= next_run:
                next_run = time.monotonic() + self.options.tick_seconds
                context = LambdaContext(f"{FUNCTION_NAME}-redriver", self.redriver_timeout)
                report = self.redriver.run(context.get_remaining_time_in_millis)
                self.run_tally.update(runs=1, redriven=report.redriven, parked=report.parked)
            self._run_lambda(redriven=True)
            self._observe()
            if self._settled():
                return True
            time.sleep(POLL_SLEEP_SECONDS)
        return False

    def _while_redriver_waits(self, seconds: float) -> None:
        """A run waits (slow start, a canary's window): Lambda runs what it was given meanwhile."""
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            self._run_lambda(redriven=True)
            time.sleep(min(POLL_SLEEP_SECONDS, left))

    def _run_lambda(self, *, redriven: bool) -> None:
        for outcome in self.lambda_service.run_queued():
            self._note(outcome, redriven=redriven)

    def _note(self, outcome: Outcome, *, redriven: bool) -> None:
        event = self.events[outcome.invocation.event["order_id"]]
        event.attempts += outcome.attempts
        event.redriven += redriven
        self.progress.invocations += 1
        if outcome.succeeded:
            event.delivered_at = event.delivered_at or round(time.monotonic() - self.started, 1)
        elif outcome.destination is not None:
            event.records += 1
            self.progress.records += 1
            self.request_ids.add(outcome.invocation.request_id)

    def _observe(self) -> None:
        progress = self.progress
        progress.elapsed = time.monotonic() - self.started
        progress.dlq = queue_counts(self.sqs, self.resources.dlq_url).total
        progress.parking_lot = queue_counts(self.sqs, self.resources.parking_lot_url).total
        progress.runs = self.run_tally["runs"]
        progress.redriven = self.run_tally["redriven"]
        progress.parked = self.run_tally["parked"]
        progress.delivered = sum(1 for order_id in self.events if self.notifier.emailed[order_id])
        self.on_progress(progress)

    def _settled(self) -> bool:
        """Nothing left to run or re-drive, and every event delivered or parked."""
        progress = self.progress
        return (
            progress.dlq == 0
            and self.lambda_service.queued == 0
            and progress.delivered + progress.parking_lot >= len(self.events)
        )

    def _account(self, settled: bool) -> FunctionAct:
        self._read_parking_lot()
        for event in self.events.values():
            if event.fate != "parked":
                event.fate = "delivered" if self.notifier.emailed[event.order_id] else "not settled"
        events = list(self.events.values())
        act = FunctionAct(
            function_name=FUNCTION_NAME,
            function_arn=FUNCTION_ARN,
            dlq_url=self.resources.dlq_url,
            parking_lot_url=self.resources.parking_lot_url,
            table_name=self.resources.table_name,
            max_redrive_count=self.settings.max_redrive_count,
            events=events,
            runs=self.run_tally["runs"],
            redriven=self.run_tally["redriven"],
            parked=self.run_tally["parked"],
            delivered_once=sum(1 for e in events if not e.poison and self.notifier.emailed[e.order_id] == 1),
            request_ids=len(self.request_ids),
            wall_seconds=round(time.monotonic() - self.started, 1),
            settled=settled,
        )
        act.problems = problems(act, self.notifier.emailed)
        return act

    def _read_parking_lot(self) -> None:
        """Each parked record's event and request id, looked at, not taken (a kept demo shows
        them), and its reason: a dead letter of another service is parked as it came, without the
        re-driver's mark, so the reason is read from the state table, under the event's identity."""
        for message in peek(self.sqs, self.resources.parking_lot_url):
            parked = from_sqs(message, self.settings.dead_letter_sources)
            dead_letter = parked.dead_letter
            if dead_letter is None or dead_letter.payload is None:
                continue
            payload = json.loads(dead_letter.payload)
            order_id = payload.get("order_id") if isinstance(payload, dict) else None
            event = self.events.get(order_id) if isinstance(order_id, str) else None
            if event is None:
                continue
            event.fate = "parked"
            event.parked_request_id = dead_letter.request_id
            event.parked_message_id = parked.message_id
            event.parked_reason = self._park_reason(parked.content_identity)

    def _park_reason(self, identity: str) -> str:
        item = self.dynamodb.get_item(
            TableName=self.resources.table_name,
            Key={STATE_TABLE_KEY: {"S": RecordKind.MESSAGE.key(identity)}},
            ConsistentRead=True,
        ).get("Item", {})
        reason = json.loads(item.get("reason", {}).get("S", "{}"))
        return str(reason.get("why", ""))


def problems(act: FunctionAct, emailed: Counter[str]) -> list[str]:
    """What does not balance: a good event not e-mailed exactly once or parked, a poison one
    e-mailed or not parked with the function's error, an event lost or left in the DLQ."""
    found = []
    for event in act.events:
        if event.poison:
            if event.fate != "parked" or NoEmailAddress.__name__ not in event.parked_reason:
                found.append(
                    f"{event.order_id} (poison) is {event.fate}, not parked with the function's error"
                )
        elif emailed[event.order_id] != 1:
            found.append(
                f"{event.order_id} e-mailed {emailed[event.order_id]} times, not once ({event.fate})"
            )
    if not act.settled:
        found.append(f"not settled after {act.wall_seconds:g} s")
    return found
