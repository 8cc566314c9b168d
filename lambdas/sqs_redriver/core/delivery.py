"""Deliveries back to the one target of a dead letter of another AWS service: a function invoked
asynchronously, a queue, a topic, a state machine or an event bus. ``target_for`` gives the target
of a ``DeadLetterSource``; each has the surface a run uses for a source (``url``, ``send``,
``redrive_window``, ``backlog``), and ``send`` returns a ``BatchResult`` as ``SqsQueue.send`` does.

What each target receives:

- a function (``lambda.invoke``, ``InvocationType=Event``, one call per message): the payload as
  it is; for an SNS subscription, the event SNS invokes a function with, built from the SNS
  envelope the DLQ holds (``sns_lambda_event``). A canary of a function probed synchronously
  (``probe_timeout_seconds``) goes with ``RequestResponse``: the function's own error fails it
  (``FUNCTION_ERROR``), and it stays in the DLQ.
- a queue (``sqs.send_message_batch``): body and attributes as given; a FIFO queue needs the
  message's group and deduplication ids.
- a topic (``sns.publish``, a rule's target): the body as the message; a FIFO topic as a queue.
- a state machine (``stepfunctions.start_execution``): the body as the execution's input.
- an event bus (``events.put_events``, up to 10 a call): the entry built from the event JSON
  EventBridge wrote (``event_entry``). An event of an AWS service (source ``aws.*``) is refused:
  PutEvents answers NotAuthorizedForSourceException to every caller for those.

Before any call, a message the target cannot take as it is fails for good (a sender fault): over
the target's size limit (``MessageTooLong``), a payload that cannot be turned into the target's
request (``InvalidPayload``, naming the field and what is wrong with it), FIFO ids missing
(``MissingParameter``). A failure's message is what the delivery found, or what the service said of
that message (its error's message, the code apart); the parking reason of a refusal keeps both.

What the target answers, per message (a sender fault is parked; any other failure leaves the
message in the DLQ for a later run):

=================  ==================================================  ==========================
API                sender fault: the message will never succeed as is  any other code
=================  ==================================================  ==========================
Lambda Invoke      RequestTooLargeException,                           TooManyRequestsException,
                   SerializedRequestEntityTooLargeException,           ServiceException,
                   InvalidRequestContentException,                     ResourceNotFoundException,
                   UnsupportedMediaTypeException,                      ResourceConflictException,
                   InvalidParameterValueException                      KMS*, EC2*, ENI*, EFS*,
                                                                       SnapStart*, AccessDenied
SNS Publish        InvalidParameterException,                          NotFound, Throttled,
                   InvalidParameterValueException,                     InternalError, KMS*,
                   ValidationException                                 AuthorizationError
Step Functions     InvalidExecutionInput, ValidationException          ExecutionLimitExceeded,
StartExecution                                                         StateMachineDoesNotExist,
                                                                       StateMachineDeleting,
                                                                       InvalidArn, Kms*
EventBridge        per entry: InvalidArgument, MalformedDetail;        InternalFailure,
PutEvents          whole call: ValidationException (its entries are    ThrottlingException,
                   then sent one by one, to find the one at fault)     AccessDeniedException,
                                                                       NotAuthorizedFor*,
                                                                       ResourceNotFoundException
SQS                what SQS says (``SenderFault``)                     a missing queue
=================  ==================================================  ==========================

A code not in the table is not the message's fault: the target is missing, throttled, failing,
or the re-driver lacks a permission; its messages wait in the DLQ while it is fixed. A call that
gets no answer (botocore's retries exhausted: endpoint unreachable, timeouts) fails its entries
as ``CALL_FAILED`` and sets ``call_error``, as ``SqsQueue.send`` does; so does a batch call the
service fails as a whole for a reason not the entries'. Without a batch API, the first failure
that is not the message's own ends the batch: the messages after it are not tried (they fail as
``CALL_FAILED``, with ``call_error`` set only when the call got no answer), so an unreachable or
failing target costs one call's retries, not ten.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.core.sqs import (
    CALL_FAILED,
    QUEUE_MISSING_CODES,
    TOO_LONG,
    BatchResult,
    EntryFailure,
    Outgoing,
    RedriveWindow,
    SqsQueue,
)
from sqs_redriver.protocol.dead_letters import DeadLetter
from sqs_redriver.protocol.sources import DeadLetterSource, SourceKind, TargetKind
from sqs_redriver.protocol.wire import Rejection, array, json_depth, load_json_object, required, text

# The client of a service (boto3's name for it) in a region: a target is called in its own
# region, which its ARN names. The wiring makes and caches them.
ClientFor = Callable[[str, str], Any]

BOTO3_SERVICE = {
    TargetKind.FUNCTION: "lambda",
    TargetKind.QUEUE: "sqs",
    TargetKind.TOPIC: "sns",
    TargetKind.STATE_MACHINE: "stepfunctions",
    TargetKind.EVENT_BUS: "events",
}

# Size limits, in UTF-8 bytes (Lambda's and EventBridge's raised from 256 KB to 1 MB in 2025-2026).
LAMBDA_MAX_ASYNC_PAYLOAD_BYTES = 1_048_576
SNS_MAX_MESSAGE_BYTES = 262_144
STATES_MAX_INPUT_BYTES = 262_144
EVENTS_MAX_ENTRY_BYTES = 1_048_576  # an entry, and the entries of one PutEvents call together
EVENTS_MAX_ENTRIES = 10
EVENTS_TIME_BYTES = 14  # what EventBridge counts for an entry's Time
EVENT_MAX_DETAIL_TYPE_CHARS = 128
EVENT_MAX_RESOURCE_CHARS = 2_048
EVENT_MAX_RESOURCES = 1_000  # a bound of ours: EventBridge documents none
# Deeper JSON than this is refused before parsing (Python's parser recurses).
EVENT_MAX_JSON_DEPTH = 200
SNS_ENVELOPE_MAX_DEPTH = 8

# Codes of a refusal before any call (TOO_LONG, SQS's own code for a message too big, too).
INVALID_PAYLOAD = "InvalidPayload"
MISSING_PARAMETER = "MissingParameter"
RESERVED_SOURCE = "NotAuthorizedForSourceException"
# A PutEvents answer that says nothing of an entry: not known to be sent, so it stays in the DLQ.
NO_ANSWER = "NoAnswer"
# A function's error in its answer to a canary invoked synchronously, and how much of it is kept.
FUNCTION_ERROR = "FunctionError"
MAX_PROBE_ANSWER_BYTES = 1_024

LAMBDA_SENDER_FAULTS = frozenset(
    {
        "RequestTooLargeException",
        "SerializedRequestEntityTooLargeException",
        "InvalidRequestContentException",
        "UnsupportedMediaTypeException",
        "InvalidParameterValueException",
    }
)
SNS_SENDER_FAULTS = frozenset(
    {"InvalidParameterException", "InvalidParameterValueException", "ValidationException"}
)
STATES_SENDER_FAULTS = frozenset({"InvalidExecutionInput", "ValidationException"})
EVENTS_SENDER_FAULTS = frozenset({"InvalidArgument", "MalformedDetail", "ValidationException"})


@dataclass(frozen=True)
class Taken:
    """The target took a message. ``request_id``: what its answer named the request by (a
    function invoked asynchronously; empty for the others)."""

    request_id: str = ""


TAKEN = Taken()


class _Target:
    """What every target shares: its name in the run, its redrive window, no back-pressure."""

    def __init__(self, source: DeadLetterSource, client: Any) -> None:
        self.url = source.address
        self.source = source
        self._client = client

    def redrive_window(self) -> RedriveWindow:
        """A failure of what was delivered is back in the DLQ within the source's retries; for a
        target whose answer is the whole verdict (``failures_return`` false) at once."""
        if not self.source.failures_return:
            return RedriveWindow(visibility_timeout_seconds=0, max_receive_count=1)
        retries = self.source.retries
        return RedriveWindow(
            visibility_timeout_seconds=retries.attempt_seconds, max_receive_count=retries.attempts
        )

    def backlog(self) -> int:
        """No back-pressure signal from these targets."""
        return 0

    def canary_window_seconds(self) -> int:
        """0 when the canary's delivery answers it (a target whose answer is the whole verdict, or
        a function probed synchronously); else the source's redrive window."""
        if not self.source.failures_return or self.source.probe_timeout_seconds:
            return 0
        return self.redrive_window().seconds


class _OneByOne(_Target):
    """A target without a batch API: one call per message, in order. A message the target
    refuses fails alone; any other failure ends the batch there (the target is out)."""

    operation: ClassVar[str]
    max_payload_bytes: ClassVar[int]
    sender_faults: ClassVar[frozenset[str]]

    def send(self, messages: Sequence[Outgoing]) -> BatchResult:
        result = BatchResult()
        for position, message in enumerate(messages):
            failure = self._deliver(message)
            if isinstance(failure, Taken):
                result.succeeded.append(message.entry_id)
                if failure.request_id:
                    result.request_ids[message.entry_id] = failure.request_id
                continue
            result.failed[message.entry_id] = failure
            if failure.sender_fault:
                continue
            if failure.code == CALL_FAILED:
                result.call_error = f"{self.operation} on {self.source.target_arn} failed: {failure.message}"
            not_tried = EntryFailure(
                CALL_FAILED, f"not sent: the message before it failed ({failure.code})", False
            )
            result.failed.update(dict.fromkeys((m.entry_id for m in messages[position + 1 :]), not_tried))
            break
        return result

    def _deliver(self, message: Outgoing) -> EntryFailure | Taken:
        """Deliver one message: why it failed, or that the target took it."""
        try:
            payload = self._payload(message)
        except Rejection as rejection:
            return _refused(INVALID_PAYLOAD, str(rejection))
        refusal = self._refusal(message) or _over_limit(payload, self.max_payload_bytes, self.operation)
        if refusal is not None:
            return refusal
        try:
            return self._call(payload, message)
        except ClientError as exc:
            code = _error_code(exc)
            return EntryFailure(code, _error_message(exc), sender_fault=code in self.sender_faults)
        except BotoCoreError as exc:
            return EntryFailure(CALL_FAILED, str(exc), sender_fault=False)

    def _payload(self, message: Outgoing) -> str:
        """What the target receives; ``Rejection`` when the message cannot be turned into it."""
        return message.body

    def _refusal(self, message: Outgoing) -> EntryFailure | None:
        return None

    def _call(self, payload: str, message: Outgoing) -> EntryFailure | Taken:
        raise NotImplementedError


class FunctionTarget(_OneByOne):
    """A function, invoked asynchronously as its source invoked it; a canary synchronously, when the
    source is probed so."""

    operation = "Lambda Invoke"
    max_payload_bytes = LAMBDA_MAX_ASYNC_PAYLOAD_BYTES
    sender_faults = LAMBDA_SENDER_FAULTS

    def _payload(self, message: Outgoing) -> str:
        if self.source.kind is SourceKind.SUBSCRIPTION:
            return sns_lambda_event(message.body, self.source.arn, self.source.topic_arn)
        return message.body

    def _call(self, payload: str, message: Outgoing) -> EntryFailure | Taken:
        if message.probe and self.source.probe_timeout_seconds:
            return self._probe(payload)
        response = self._client.invoke(
            FunctionName=self.source.target_arn, InvocationType="Event", Payload=payload.encode("utf-8")
        )
        status = response.get("StatusCode")
        if status != 202:
            return EntryFailure("UnexpectedStatus", f"Invoke answered {status}, not 202", sender_fault=False)
        # The invocation's request id (x-amzn-RequestId): a failure of it comes back under it.
        request_id = response.get("ResponseMetadata", {}).get("RequestId")
        return Taken(request_id if isinstance(request_id, str) else "")

    def _probe(self, payload: str) -> EntryFailure | Taken:
        """A canary invoked synchronously: the function's own answer. Its error fails the canary
        (never the message's fault: it stays in the DLQ, and the breaker reopens)."""
        response = self._client.invoke(
            FunctionName=self.source.target_arn,
            InvocationType="RequestResponse",
            Payload=payload.encode("utf-8"),
        )
        if response.get("StatusCode") != 200:
            return EntryFailure(
                "UnexpectedStatus", f"Invoke answered {response.get('StatusCode')}, not 200", False
            )
        if "FunctionError" not in response:
            return TAKEN
        answer = response["Payload"].read(MAX_PROBE_ANSWER_BYTES).decode("utf-8", "replace")
        return EntryFailure(FUNCTION_ERROR, f"{response['FunctionError']}: {answer}", sender_fault=False)


class TopicTarget(_OneByOne):
    """A rule's target topic (never a subscription's own topic: that would reach every subscriber)."""

    operation = "SNS Publish"
    max_payload_bytes = SNS_MAX_MESSAGE_BYTES
    sender_faults = SNS_SENDER_FAULTS

    def _refusal(self, message: Outgoing) -> EntryFailure | None:
        return _fifo_refusal(message, self.source.target_arn)

    def _call(self, payload: str, message: Outgoing) -> EntryFailure | Taken:
        request: dict[str, Any] = {"TopicArn": self.source.target_arn, "Message": payload}
        if _is_fifo(self.source.target_arn):
            request["MessageGroupId"] = message.group_id
            request["MessageDeduplicationId"] = message.deduplication_id
        self._client.publish(**request)
        return TAKEN


class StateMachineTarget(_OneByOne):
    """A rule's target state machine: one execution per message, the body its input."""

    operation = "Step Functions StartExecution"
    max_payload_bytes = STATES_MAX_INPUT_BYTES
    sender_faults = STATES_SENDER_FAULTS

    def _call(self, payload: str, message: Outgoing) -> EntryFailure | Taken:
        self._client.start_execution(stateMachineArn=self.source.target_arn, input=payload)
        return TAKEN


class QueueTarget(_Target):
    """A rule's target queue or a subscription's queue, through ``SqsQueue``'s batch send."""

    def __init__(self, source: DeadLetterSource, client: Any) -> None:
        super().__init__(source, client)
        self.queue_url = queue_url(source.target_arn)
        self._queue = SqsQueue(self.queue_url, client)
        self._fifo = _is_fifo(source.target_arn)

    def send(self, messages: Sequence[Outgoing]) -> BatchResult:
        result = BatchResult()
        sendable = []
        for message in messages:
            refusal = _fifo_refusal(message, self.source.target_arn)
            if refusal is not None:
                result.failed[message.entry_id] = refusal
            elif self._fifo:
                sendable.append(message)
            else:  # a standard queue refuses a deduplication id
                sendable.append(replace(message, group_id=None, deduplication_id=None))
        sent = self._queue.send(sendable) if sendable else BatchResult()
        # A missing target queue is the target's outage, not the message's fault.
        sent.failed = {
            key: replace(failure, sender_fault=False) if failure.code in QUEUE_MISSING_CODES else failure
            for key, failure in sent.failed.items()
        }
        result.merge(sent)
        return result


class EventBusTarget(_Target):
    """A rule's target bus: each event put back onto it, up to 10 a call."""

    def send(self, messages: Sequence[Outgoing]) -> BatchResult:
        result = BatchResult()
        ready: list[_Entry] = []
        for message in messages:
            prepared = self._prepare(message)
            if isinstance(prepared, EntryFailure):
                result.failed[message.entry_id] = prepared
            else:
                ready.append(prepared)
        for chunk in _event_chunks(ready):
            self._put(chunk, result)
        return result

    def _prepare(self, message: Outgoing) -> _Entry | EntryFailure:
        """The message's entry, or why PutEvents would refuse it."""
        try:
            entry = event_entry(message.body, self.source.target_arn)
        except Rejection as rejection:
            return _refused(INVALID_PAYLOAD, str(rejection))
        source = entry["Source"]
        if source.lower().startswith("aws."):
            return _refused(
                RESERVED_SOURCE, f"source {source[:64]!r} is AWS's own: PutEvents refuses it from any caller"
            )
        size = entry_size(entry)
        if size > EVENTS_MAX_ENTRY_BYTES:
            return _refused(
                TOO_LONG, f"{size} bytes, over PutEvents' {EVENTS_MAX_ENTRY_BYTES}-byte limit for an entry"
            )
        return _Entry(message.entry_id, entry, size)

    def _put(self, chunk: list[_Entry], result: BatchResult) -> None:
        try:
            response = self._client.put_events(Entries=[entry.request for entry in chunk])
        except ClientError as exc:
            code = _error_code(exc)
            if code not in EVENTS_SENDER_FAULTS:
                self._fail_call(chunk, exc, result)
            elif len(chunk) > 1:  # which entry is at fault: each alone
                for entry in chunk:
                    self._put([entry], result)
            else:
                result.failed[chunk[0].entry_id] = EntryFailure(code, _error_message(exc), sender_fault=True)
        except BotoCoreError as exc:
            self._fail_call(chunk, exc, result)
        else:
            _collect_answers(chunk, response.get("Entries", []), result)

    def _fail_call(self, chunk: list[_Entry], exc: Exception, result: BatchResult) -> None:
        result.call_error = f"EventBridge PutEvents on {self.source.target_arn} failed: {exc}"
        for entry in chunk:
            result.failed[entry.entry_id] = EntryFailure(CALL_FAILED, str(exc), sender_fault=False)


def _collect_answers(chunk: list[_Entry], answers: Sequence[Mapping[str, Any]], result: BatchResult) -> None:
    """PutEvents answers entry by entry, in the order of the request."""
    for index, entry in enumerate(chunk):
        answer = answers[index] if index < len(answers) else {"ErrorCode": NO_ANSWER}
        error_code = str(answer.get("ErrorCode") or "")
        if error_code:
            sender_fault = error_code in EVENTS_SENDER_FAULTS
            result.failed[entry.entry_id] = EntryFailure(
                error_code, answer.get("ErrorMessage", ""), sender_fault
            )
        else:
            result.succeeded.append(entry.entry_id)


Target = FunctionTarget | QueueTarget | TopicTarget | StateMachineTarget | EventBusTarget

TARGET_CLASSES: Mapping[TargetKind, type[Target]] = {
    TargetKind.FUNCTION: FunctionTarget,
    TargetKind.QUEUE: QueueTarget,
    TargetKind.TOPIC: TopicTarget,
    TargetKind.STATE_MACHINE: StateMachineTarget,
    TargetKind.EVENT_BUS: EventBusTarget,
}


def delivered(entry_id: str, dead_letter: DeadLetter, *, probe: bool = False) -> Outgoing:
    """A dead letter as its target gets it: its payload, with the attributes delivered with it (a
    raw SNS delivery's); ``probe``: a canary, which a target may answer at once. ValueError for one
    whose payload was dropped (the run parks those, the tool refuses them)."""
    if dead_letter.payload is None:
        raise ValueError("a dead letter without its payload cannot be delivered")
    return Outgoing(
        entry_id=entry_id, body=dead_letter.payload, attributes=dict(dead_letter.attributes), probe=probe
    )


def target_for(source: DeadLetterSource, clients: ClientFor) -> Target:
    """The target a source's dead letters go back to, with a client in the target's region.
    ``Rejection`` naming ``target_arn`` when it is not an ARN of the target's kind with a region."""
    _, _, service, region, account, _ = _arn_parts(source.target_arn)
    if service != source.target_kind.value:
        raise Rejection("target_arn", f"is a {service[:32]!r} ARN, not one of {source.target_kind.value}")
    if not region or not account:
        raise Rejection("target_arn", "names no region or no account")
    client = clients(BOTO3_SERVICE[source.target_kind], region)
    return TARGET_CLASSES[source.target_kind](source, client)


def queue_url(queue_arn: str) -> str:
    """The URL of the queue an ARN names (``arn:<partition>:sqs:<region>:<account>:<name>``)."""
    _, partition, _, region, account, name = _arn_parts(queue_arn)
    domain = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
    return f"https://sqs.{region}.{domain}/{account}/{name}"


def _arn_parts(arn: str) -> list[str]:
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn":
        raise Rejection("target_arn", "is not an ARN")
    return parts


# --- what a function subscribed to a topic receives ----------------------------------------------

# The envelope's fields copied into the event's ``Sns`` record, by their names there. The envelope
# delivered to a queue spells two of them differently (SigningCertURL, UnsubscribeURL).
SNS_REQUIRED_FIELDS = ("Type", "MessageId", "TopicArn", "Message", "Timestamp")
SNS_OPTIONAL_FIELDS = {
    "SignatureVersion": ("SignatureVersion",),
    "Signature": ("Signature",),
    "SigningCertUrl": ("SigningCertURL", "SigningCertUrl"),
    "UnsubscribeUrl": ("UnsubscribeURL", "UnsubscribeUrl"),
}
SNS_MAX_FIELD_CHARS = 2_048


def sns_lambda_event(envelope_json: str, subscription_arn: str, topic_arn: str) -> str:
    """The event SNS invokes a subscribed function with, from the envelope of one notification
    (the body of a subscription's dead letter); ``Rejection`` naming the envelope's field at fault."""
    envelope = load_json_object(
        envelope_json, "body", max_bytes=LAMBDA_MAX_ASYNC_PAYLOAD_BYTES, max_depth=SNS_ENVELOPE_MAX_DEPTH
    )
    record: dict[str, Any] = {}
    for field in SNS_REQUIRED_FIELDS:
        limit = LAMBDA_MAX_ASYNC_PAYLOAD_BYTES if field == "Message" else SNS_MAX_FIELD_CHARS
        record[field] = text(required(envelope, field), field, max_chars=limit)
    if record["Type"] != "Notification":
        raise Rejection("Type", f"is {record['Type'][:40]!r}, not Notification")
    if topic_arn and record["TopicArn"] != topic_arn:
        raise Rejection("TopicArn", f"is not the subscription's topic {topic_arn}")
    subject = envelope.get("Subject")
    record["Subject"] = None if subject is None else text(subject, "Subject", max_chars=SNS_MAX_FIELD_CHARS)
    for name, spellings in SNS_OPTIONAL_FIELDS.items():
        for spelling in spellings:
            if spelling in envelope:
                record[name] = text(envelope[spelling], spelling, max_chars=SNS_MAX_FIELD_CHARS)
                break
    record["MessageAttributes"] = _sns_attributes(envelope.get("MessageAttributes", {}))
    event = {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription_arn,
                "Sns": record,
            }
        ]
    }
    return _json_text(event, "body")


def _sns_attributes(value: object) -> dict[str, dict[str, str]]:
    """An envelope's MessageAttributes: name -> {"Type": ..., "Value": ...}, as SNS writes them."""
    if not isinstance(value, dict):
        raise Rejection("MessageAttributes", "is not a JSON object")
    attributes = {}
    for name, attribute in value.items():
        field = f"MessageAttributes.{str(name)[:64]}"
        if not isinstance(attribute, dict):
            raise Rejection(field, "is not a JSON object")
        try:
            attributes[name] = {
                "Type": text(required(attribute, "Type"), "Type", max_chars=256),
                "Value": text(required(attribute, "Value"), "Value", max_chars=SNS_MAX_MESSAGE_BYTES),
            }
        except Rejection as rejection:
            raise rejection.within(field, subject="valid") from None
    return attributes


# --- what an event bus receives --------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    entry_id: str
    request: dict[str, Any]
    size: int


def event_entry(event_json: str, bus_arn: str) -> dict[str, Any]:
    """The PutEvents entry that puts an event (as EventBridge wrote it to the DLQ) onto a bus;
    ``Rejection`` naming the event's field at fault."""
    depth = json_depth(event_json)
    if depth > EVENT_MAX_JSON_DEPTH:
        raise Rejection("body", f"nests {depth} deep, more than {EVENT_MAX_JSON_DEPTH}")
    try:
        event = json.loads(event_json, parse_constant=_no_constant)
    except ValueError as exc:
        raise Rejection("body", f"is not JSON ({exc})") from None
    if not isinstance(event, dict):
        raise Rejection("body", "is not a JSON object")
    detail = required(event, "detail")
    if not isinstance(detail, dict):
        raise Rejection("detail", "is not a JSON object")
    resources = array(event.get("resources", []), "resources", max_items=EVENT_MAX_RESOURCES)
    entry: dict[str, Any] = {
        "EventBusName": bus_arn,
        "Source": text(required(event, "source"), "source", max_chars=256),
        "DetailType": text(
            required(event, "detail-type"), "detail-type", max_chars=EVENT_MAX_DETAIL_TYPE_CHARS
        ),
        "Detail": _json_text(detail, "detail"),
        "Resources": [
            text(resource, f"resources[{index}]", max_chars=EVENT_MAX_RESOURCE_CHARS)
            for index, resource in enumerate(resources)
        ],
    }
    if not entry["Source"]:
        raise Rejection("source", "is empty")
    if "time" in event:
        entry["Time"] = _event_time(event["time"])
    return entry


def entry_size(entry: Mapping[str, Any]) -> int:
    """An entry's size as EventBridge counts it against its limit."""
    parts = [entry["Source"], entry["DetailType"], entry["Detail"], *entry["Resources"]]
    time_bytes = EVENTS_TIME_BYTES if "Time" in entry else 0
    return time_bytes + sum(len(part.encode("utf-8")) for part in parts)


def _event_time(value: object) -> datetime:
    stamp = text(value, "time", max_chars=64)
    try:
        return datetime.fromisoformat(stamp)
    except ValueError:
        raise Rejection("time", f"is {stamp!r}, not an RFC 3339 time") from None


def _event_chunks(entries: Sequence[_Entry]) -> Iterator[list[_Entry]]:
    """PutEvents calls: at most 10 entries, and their sizes within the limit together."""
    chunk: list[_Entry] = []
    total = 0
    for entry in entries:
        if chunk and (len(chunk) == EVENTS_MAX_ENTRIES or total + entry.size > EVENTS_MAX_ENTRY_BYTES):
            yield chunk
            chunk, total = [], 0
        chunk.append(entry)
        total += entry.size
    if chunk:
        yield chunk


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# --- shared -----------------------------------------------------------------------------------------


def _refused(code: str, problem: str) -> EntryFailure:
    return EntryFailure(code, problem, sender_fault=True)


def _over_limit(payload: str, limit: int, operation: str) -> EntryFailure | None:
    size = len(payload.encode("utf-8"))
    if size <= limit:
        return None
    return _refused(TOO_LONG, f"{size} bytes, over {operation}'s {limit}-byte limit")


def _is_fifo(arn: str) -> bool:
    return arn.endswith(".fifo")


def _fifo_refusal(message: Outgoing, target_arn: str) -> EntryFailure | None:
    """A FIFO queue or topic takes a message only with its group and deduplication ids."""
    if not _is_fifo(target_arn):
        return None
    for name, value in (
        ("MessageGroupId", message.group_id),
        ("MessageDeduplicationId", message.deduplication_id),
    ):
        if not value:
            return _refused(MISSING_PARAMETER, f"{name} is missing: the FIFO target {target_arn} needs one")
    return None


def _json_text(value: object, field: str) -> str:
    """Compact JSON, counted in UTF-8 as the target counts it; ``Rejection`` for what JSON or
    UTF-8 cannot hold (an infinite number, a lone surrogate)."""
    try:
        rendered = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a number too big for a float parses to infinity
        raise Rejection(field, "holds a number out of JSON's range") from None
    try:
        rendered.encode("utf-8")
    except UnicodeEncodeError:
        raise Rejection(field, "is not valid Unicode (a lone surrogate)") from None
    return rendered


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "")) or "Unknown"


def _error_message(exc: ClientError) -> str:
    """What the service said of one message (the code apart, as SQS's batch answers give it)."""
    return str(exc.response.get("Error", {}).get("Message", "")) or str(exc)
