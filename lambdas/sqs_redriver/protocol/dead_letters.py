"""Dead letters of other AWS services, read once from the DLQ message that holds them.

What lands in the DLQ of a Lambda function, an EventBridge rule target or an SNS subscription is
untrusted (anyone who may send to the DLQ can write anything in it): each shape is parsed here,
once, into a ``DeadLetter``: the source it belongs to, what goes back to the target, and what the
source said about the failure. A message that cannot be read is a ``DeadLetter`` with a
``problem`` naming the field; the run parks it with that reason. Nothing here raises.

Every text of a dead letter but what goes back (its payload and attributes: the message itself)
is redacted here, as it is read (``redact``): the source's error (a function's ``errorMessage``,
Lambda's ``ErrorMessage``, EventBridge's ``ERROR_MESSAGE``, and their codes), the request id,
where it says it came from, and any problem's words. Each is bounded too, in characters and as
JSON, as a consumer's failure is (``failure``), so a parking reason built of them fits the
parking lot's attribute. No log line, reason, record, metric or archive field gets them otherwise.

The shapes, as AWS documents them:

- A function's on-failure destination record (a JSON document: ``requestContext``,
  ``requestPayload``, ``responseContext``, ``responsePayload``). The event goes back re-serialised
  as compact JSON; when Lambda dropped it (the record did not fit), only what is known is kept.
- A function's dead-letter queue (``DeadLetterConfig``): the event as the body, unchanged, with
  the attributes ``RequestID`` (String), ``ErrorCode`` (Number, the HTTP status) and
  ``ErrorMessage`` (String, its first 1 KB). It does not name the function.
- An EventBridge rule target's dead-letter queue: the event as the body, with the attributes
  ``RULE_ARN``, ``TARGET_ARN``, ``ERROR_CODE``, ``ERROR_MESSAGE`` (and ``EXHAUSTED_RETRY_CONDITION``,
  ``RETRY_ATTEMPTS``, not needed here).
- An SNS subscription's dead-letter queue (its redrive policy): what SNS would have delivered, the
  notification's JSON envelope, or with raw message delivery the message itself and its
  attributes as SQS message attributes. SNS says nothing of the failure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqs_redriver.protocol.failure import MAX_ERROR_CLASS_JSON_BYTES, MAX_ERROR_MESSAGE_JSON_BYTES, bounded
from sqs_redriver.protocol.limits import (
    MAX_ERROR_CLASS_CHARS,
    MAX_ERROR_MESSAGE_CHARS,
    SQS_ATTRIBUTE_NAME_CHARACTERS,
    SQS_MAX_ATTRIBUTE_NAME_CHARS,
    SQS_MAX_ATTRIBUTE_TYPE_CHARS,
    SQS_MAX_MESSAGE_ATTRIBUTES,
    SQS_MAX_MESSAGE_BYTES,
)
from sqs_redriver.protocol.redact import redact_untrusted
from sqs_redriver.protocol.sources import ARN_PATTERN, MAX_ARN_CHARS, DeadLetterSource, SourceKind
from sqs_redriver.protocol.wire import Rejection, json_depth, required, text, text_of

MessageAttributes = Mapping[str, Mapping[str, Any]]

# What a cause keeps of the source's words (they go into logs and park reasons): as much as of a
# consumer's error class and message, so a parking reason is as long as a consumer failure's.
MAX_CAUSE_CODE_CHARS = MAX_ERROR_CLASS_CHARS
MAX_CAUSE_CODE_JSON_BYTES = MAX_ERROR_CLASS_JSON_BYTES
MAX_CAUSE_MESSAGE_CHARS = MAX_ERROR_MESSAGE_CHARS
MAX_CAUSE_MESSAGE_JSON_BYTES = MAX_ERROR_MESSAGE_JSON_BYTES
MAX_REQUEST_ID_CHARS = 256
# What is kept of where a dead letter says it came from (two ARNs for a rule target's).
MAX_ORIGIN_CHARS = 512
MAX_ORIGIN_JSON_BYTES = 1_024
# A dead letter's JSON is parsed (and a destination record's event re-serialised) recursively.
MAX_DEAD_LETTER_JSON_DEPTH = 128

# The attributes Lambda adds to a message of a function's dead-letter queue.
FUNCTION_DLQ_ATTRIBUTES = ("RequestID", "ErrorCode", "ErrorMessage")
# A destination record's condition when the invocation succeeded: an on-success record.
SUCCESS_CONDITION = "Success"
# arn:<partition>:lambda:<region>:<account>:function:<name>[:<version or alias>]
FUNCTION_ARN = re.compile(
    r"(arn:aws[a-z-]{0,12}:lambda:[a-z0-9-]{1,32}:[0-9]{12}:function:[A-Za-z0-9_-]{1,64})"
    r"(?::(?:\$LATEST|[A-Za-z0-9_-]{1,128}))?"
)
CONDITION_PATTERN = re.compile(r"[A-Za-z]{1,64}")
ATTRIBUTE_NAME = re.compile(f"[{SQS_ATTRIBUTE_NAME_CHARACTERS}]{{1,{SQS_MAX_ATTRIBUTE_NAME_CHARS}}}")

RECORD_SUBJECT = "a Lambda destination record"
FUNCTION_DLQ_SUBJECT = "a Lambda dead-letter message"
RULE_TARGET_SUBJECT = "an EventBridge dead-letter message"
SUBSCRIPTION_SUBJECT = "an SNS dead-letter message"


@dataclass(frozen=True)
class Cause:
    """What the source said about the failure: a code (Lambda's ErrorCode or the function's
    errorType, EventBridge's ERROR_CODE, a destination record's condition) and its message."""

    code: str
    message: str = ""

    def describe(self) -> str:
        """One line for a parking reason (as text: the run escapes it)."""
        said = f"source's error {self.code}"
        return f"{said}: {self.message}" if self.message else said


@dataclass(frozen=True)
class DeadLetter:
    """A dead letter of another service.

    ``source``: the configured source it belongs to (None: it names none, and is parked).
    ``payload``: what goes back to the target (None: the source dropped it, and it is parked as
    unreplayable). ``attributes``: the SQS message attributes delivered with it (a raw SNS
    delivery to a queue). ``problem``: why it cannot be re-driven at all, naming the field.
    ``origin``: where the message says it came from (a function's ARN as Lambda wrote it, a rule's
    and target's ARNs as ``rule|target``, a topic's ARN; empty when it names none), for the reason
    of one that belongs to no configured source."""

    source: DeadLetterSource | None
    payload: str | None
    attributes: MessageAttributes = field(default_factory=dict)
    cause: Cause | None = None
    request_id: str = ""
    problem: Rejection | None = None
    origin: str = ""

    @property
    def replayable(self) -> bool:
        return self.source is not None and self.payload is not None and self.problem is None


def read_dead_letter(
    body: str, attributes: MessageAttributes, sources: Sequence[DeadLetterSource]
) -> DeadLetter:
    """The dead letter a DLQ message of ``sources`` (all of one kind) holds. A message that is not
    one has a ``problem`` (and no source and no payload); one that belongs to none of the sources,
    or to more than one, has no source (and its payload)."""
    if not sources:
        return _unreadable(Rejection("DEAD_LETTER_SOURCES", "is empty", subject="a configured source"))
    kind = sources[0].kind
    of_kind = tuple(source for source in sources if source.kind is kind)
    try:
        checked_body = _body(body)
        if not isinstance(attributes, Mapping):
            raise Rejection("MessageAttributes", "is not a map of attributes")
        if kind is SourceKind.FUNCTION:
            if any(name in attributes for name in FUNCTION_DLQ_ATTRIBUTES):
                return _function_dlq_message(checked_body, attributes, of_kind)
            return _destination_record(checked_body, of_kind)
        if kind is SourceKind.RULE_TARGET:
            return _rule_target_message(checked_body, attributes, of_kind)
        if kind is SourceKind.SUBSCRIPTION:
            return _subscription_message(checked_body, attributes, of_kind)
        raise Rejection("kind", f"is {kind.value}: an SQS consumer's dead letters are not read here")
    except Rejection as rejection:
        return _unreadable(rejection)


def compact_json(value: Any) -> str:
    """A JSON value as the re-driver sends it: compact, non-ASCII kept as it is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- the shapes -----------------------------------------------------------------------------------


def _destination_record(body: str, sources: Sequence[DeadLetterSource]) -> DeadLetter:
    """A function's on-failure destination record. Lambda drops ``requestPayload`` (and
    ``responsePayload``) from a record too large for the destination: absent or null, there is
    nothing to invoke the function with again (a null event and a dropped one look the same)."""
    try:
        record = _json_object(body, "body")
        context = required(record, "requestContext")
        if not isinstance(context, Mapping):
            raise Rejection("requestContext", "is not a JSON object")
        function, request_id, condition = _request_context(context)
        event = record.get("requestPayload")
        payload = None if event is None else _text_of_json(event, "requestPayload")
    except Rejection as rejection:
        raise Rejection(rejection.field, rejection.problem, subject=RECORD_SUBJECT) from None
    cause = _function_cause(condition, record.get("responseContext"), record.get("responsePayload"))
    arn, unqualified = function.group(0), function.group(1)
    by_arn = {source.arn: source for source in sources}
    source = by_arn.get(arn) or by_arn.get(unqualified)
    return DeadLetter(source, payload, cause=cause, request_id=request_id, origin=_origin(arn))


def _request_context(context: Mapping[str, Any]) -> tuple[re.Match[str], str, str]:
    """The function's ARN (as Lambda wrote it, and its unqualified part), the request id and the
    condition."""
    try:
        function = FUNCTION_ARN.fullmatch(text_of(context, "functionArn", max_chars=MAX_ARN_CHARS))
        if function is None:
            raise Rejection("functionArn", "is not a Lambda function's ARN")
        request_id = redact_untrusted(text_of(context, "requestId", max_chars=MAX_REQUEST_ID_CHARS))
        condition = text_of(context, "condition", max_chars=64, pattern=CONDITION_PATTERN)
        if condition == SUCCESS_CONDITION:
            raise Rejection("condition", "is Success: an on-success record, not a failure")
    except Rejection as rejection:
        raise rejection.within("requestContext", subject=RECORD_SUBJECT) from None
    return function, request_id, condition


def _function_cause(condition: str, response_context: object, response: object) -> Cause:
    """The function's error (errorType, errorMessage) when it returned one, else the condition
    and the kind of function error (Unhandled, Handled). Neither is checked: a cause only informs."""
    function_error = response_context.get("functionError") if isinstance(response_context, Mapping) else None
    if isinstance(response, Mapping):
        error_type, error_message = response.get("errorType"), response.get("errorMessage")
        if isinstance(error_type, str) or isinstance(error_message, str):
            code = error_type if isinstance(error_type, str) else function_error
            return _cause(code if isinstance(code, str) else condition, error_message)
    return _cause(condition, function_error)


def _function_dlq_message(
    body: str, attributes: Mapping[Any, Any], sources: Sequence[DeadLetterSource]
) -> DeadLetter:
    """A message of a function's dead-letter queue: the event, unchanged, and Lambda's attributes.
    It does not name its function: it belongs to the one configured, if there is one."""
    try:
        _json_value(body, "body")  # an event Lambda invoked a function with is JSON
        request_id = redact_untrusted(_attribute(attributes, "RequestID", max_chars=MAX_REQUEST_ID_CHARS))
        code = _attribute(attributes, "ErrorCode", types=("Number", "String"))
        message = _optional_attribute(attributes, "ErrorMessage")
    except Rejection as rejection:
        raise Rejection(rejection.field, rejection.problem, subject=FUNCTION_DLQ_SUBJECT) from None
    source = sources[0] if len(sources) == 1 else None
    return DeadLetter(source, body, cause=_cause(code, message), request_id=request_id)


def _rule_target_message(
    body: str, attributes: Mapping[Any, Any], sources: Sequence[DeadLetterSource]
) -> DeadLetter:
    """A message of a rule target's dead-letter queue: the event, unchanged, and EventBridge's
    attributes naming the rule and the target it failed to reach."""
    try:
        _json_object(body, "body")  # an EventBridge event is a JSON object
        rule = _attribute(attributes, "RULE_ARN", max_chars=MAX_ARN_CHARS, pattern=ARN_PATTERN)
        target = _attribute(attributes, "TARGET_ARN", max_chars=MAX_ARN_CHARS, pattern=ARN_PATTERN)
        code = _attribute(attributes, "ERROR_CODE")
        message = _optional_attribute(attributes, "ERROR_MESSAGE")
    except Rejection as rejection:
        raise Rejection(rejection.field, rejection.problem, subject=RULE_TARGET_SUBJECT) from None
    source = next((s for s in sources if s.arn == rule and s.target_arn == target), None)
    return DeadLetter(source, body, cause=_cause(code, message), origin=_origin(f"{rule}|{target}"))


def _subscription_message(
    body: str, attributes: Mapping[Any, Any], sources: Sequence[DeadLetterSource]
) -> DeadLetter:
    """A message of a subscription's dead-letter queue: what SNS would have delivered. With one
    subscription configured, it is that one's; with several, the one subscription (without raw
    delivery) of the topic its envelope names, if there is one."""
    try:
        if len(sources) == 1 and sources[0].raw_delivery:
            return DeadLetter(sources[0], body, attributes=_delivered_attributes(attributes))
        topic = _envelope_topic(body)
        if len(sources) == 1:
            expected = sources[0].topic_arn
            if topic is None:
                raise Rejection("body", "is not an SNS notification (Type, MessageId, TopicArn, Message)")
            if expected and topic != expected:
                raise Rejection("TopicArn", f"is {topic}, not the subscription's topic {expected}")
            return DeadLetter(sources[0], body, origin=_origin(topic))
    except Rejection as rejection:
        raise Rejection(rejection.field, rejection.problem, subject=SUBSCRIPTION_SUBJECT) from None
    of_topic = [s for s in sources if topic is not None and not s.raw_delivery and s.topic_arn == topic]
    source = of_topic[0] if len(of_topic) == 1 else None
    return DeadLetter(source, body, origin=_origin(topic or ""))


# --- the parts ------------------------------------------------------------------------------------


def _unreadable(problem: Rejection) -> DeadLetter:
    return DeadLetter(source=None, payload=None, problem=problem)


def _body(body: object) -> str:
    """The message's body: text of valid Unicode, at most SQS's size limit."""
    if not isinstance(body, str):
        raise Rejection("body", "is not text")
    try:
        size = len(body.encode("utf-8"))
    except UnicodeEncodeError:
        raise Rejection("body", "is not valid Unicode (a lone surrogate)") from None
    if size > SQS_MAX_MESSAGE_BYTES:
        raise Rejection("body", f"is {size} bytes, more than {SQS_MAX_MESSAGE_BYTES}")
    return body


def _json_value(json_text: str, field: str) -> Any:
    """Any JSON value, nested at most MAX_DEAD_LETTER_JSON_DEPTH deep, its numbers finite. Not
    wire.load_json_object: a destination record's event goes back, so a fraction stays a number."""
    brackets = json_text.count("[") + json_text.count("{")  # fewer cannot nest deeper: no scan
    depth = json_depth(json_text) if brackets > MAX_DEAD_LETTER_JSON_DEPTH else 0
    if depth > MAX_DEAD_LETTER_JSON_DEPTH:
        raise Rejection(field, f"nests {depth} deep, more than {MAX_DEAD_LETTER_JSON_DEPTH}")
    try:
        return json.loads(json_text, parse_constant=_no_constant, parse_float=_finite)
    except ValueError as exc:  # JSONDecodeError, NaN or out of range, ints past Python's digit limit
        raise Rejection(field, f"is not JSON ({str(exc)[:120]})") from None


def _json_object(json_text: str, field: str) -> Mapping[str, Any]:
    value = _json_value(json_text, field)
    if not isinstance(value, dict):
        raise Rejection(field, "is not a JSON object")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON can carry")


def _finite(number: str) -> float:
    value = float(number)
    if math.isinf(value):
        raise ValueError(f"{number[:24]} is out of a double's range")
    return value


def _text_of_json(value: Any, field: str) -> str:
    payload = compact_json(value)
    try:
        payload.encode("utf-8")
    except UnicodeEncodeError:
        raise Rejection(field, "is not valid Unicode (a lone surrogate)") from None
    return payload


def _cause(code: object, message: object) -> Cause:
    return Cause(
        _words(code, MAX_CAUSE_CODE_CHARS, MAX_CAUSE_CODE_JSON_BYTES),
        _words(message, MAX_CAUSE_MESSAGE_CHARS, MAX_CAUSE_MESSAGE_JSON_BYTES),
    )


def _origin(claimed: str) -> str:
    return _words(claimed, MAX_ORIGIN_CHARS, MAX_ORIGIN_JSON_BYTES)


def _words(value: object, max_chars: int, max_json_bytes: int) -> str:
    """A source's words as they may be shown: redacted, cut short (in characters and as JSON),
    a lone surrogate replaced."""
    if not isinstance(value, str):
        return ""
    return bounded(redact_untrusted(value, max_chars), max_chars, max_json_bytes)


def _attribute(
    attributes: Mapping[Any, Any],
    name: str,
    *,
    types: tuple[str, ...] = ("String",),
    max_chars: int = SQS_MAX_MESSAGE_BYTES,
    pattern: re.Pattern[str] | None = None,
) -> str:
    """The value of a String (or Number) attribute as SQS returns it; a rejection naming it."""
    where = f"MessageAttributes.{name}"
    value = attributes.get(name)
    if value is None:
        raise Rejection(where, "is missing")
    if not isinstance(value, Mapping):
        raise Rejection(where, "is not an attribute (DataType, StringValue)")
    data_type = value.get("DataType")
    if not isinstance(data_type, str) or data_type.split(".", 1)[0] not in types:
        raise Rejection(where, f"has data type {str(data_type)[:40]!r}, not {' or '.join(types)}")
    return text(value.get("StringValue"), where, max_chars=max_chars, pattern=pattern)


def _optional_attribute(attributes: Mapping[Any, Any], name: str) -> str:
    return "" if attributes.get(name) is None else _attribute(attributes, name)


def _envelope_topic(body: str) -> str | None:
    """The topic of an SNS notification's JSON envelope; None when the body is not one."""
    try:
        envelope = _json_object(body, "body")
    except Rejection:
        return None
    if envelope.get("Type") != "Notification":
        return None
    text_of(envelope, "MessageId", max_chars=MAX_REQUEST_ID_CHARS)
    text_of(envelope, "Message", max_chars=SQS_MAX_MESSAGE_BYTES)
    return text_of(envelope, "TopicArn", max_chars=MAX_ARN_CHARS, pattern=ARN_PATTERN)


def _delivered_attributes(attributes: Mapping[Any, Any]) -> dict[str, dict[str, Any]]:
    """A raw delivery's attributes, as SendMessage takes them back: at most 10, each String,
    Number or Binary (a custom label after a period allowed) with its value."""
    if len(attributes) > SQS_MAX_MESSAGE_ATTRIBUTES:
        raise Rejection("MessageAttributes", f"has {len(attributes)}, more than {SQS_MAX_MESSAGE_ATTRIBUTES}")
    delivered = {}
    for name, value in attributes.items():
        if not isinstance(name, str) or not ATTRIBUTE_NAME.fullmatch(name):
            raise Rejection("MessageAttributes", f"has the name {str(name)[:40]!r}, not an attribute's")
        where = f"MessageAttributes.{name}"
        data_type = value.get("DataType") if isinstance(value, Mapping) else None
        if not isinstance(data_type, str) or len(data_type) > SQS_MAX_ATTRIBUTE_TYPE_CHARS:
            raise Rejection(where, "has no data type")
        if data_type.split(".", 1)[0] == "Binary":
            binary = value.get("BinaryValue")
            if not isinstance(binary, bytes):
                raise Rejection(where, "is Binary without bytes")
            delivered[name] = {"DataType": data_type, "BinaryValue": binary}
        elif data_type.split(".", 1)[0] in ("String", "Number"):
            string = text(value.get("StringValue"), where, max_chars=SQS_MAX_MESSAGE_BYTES)
            delivered[name] = {"DataType": data_type, "StringValue": string}
        else:
            raise Rejection(where, f"has data type {data_type[:40]!r}, not String, Number or Binary")
    return delivered
