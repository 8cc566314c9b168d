"""Where a dead letter of another AWS service came from, and the one target it goes back to.

A re-driver's DLQ holds either an SQS consumer's dead letters (its source queues,
``SOURCE_QUEUE_URL``) or another kind's: a Lambda function's asynchronous failures (its on-failure
destination or its DLQ), an EventBridge rule target's, or an SNS subscription's. The construct
writes the sources of another kind as JSON (``DEAD_LETTER_SOURCES``); the re-drive Lambda and the
operator's tool read them here, once, into ``DeadLetterSource`` values.

Each source is delivered back to its one target, never re-published: a function is invoked
asynchronously, a rule's target is called the way EventBridge calls it, a subscription's endpoint
gets what SNS would have sent it. A source's ``address`` names it in routing, logs and the state
table (its breaker is ``BREAKER#<address>``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sqs_redriver.protocol.str_enum import StrEnum
from sqs_redriver.protocol.wire import (
    Rejection,
    array,
    integer,
    integer_of,
    json_depth,
    required,
    text,
    text_of,
)


class SourceKind(StrEnum):
    """Which AWS service dead-lettered the messages of a DLQ."""

    QUEUE = "sqs"  # an SQS consumer's (SOURCE_QUEUE_URL; never in DEAD_LETTER_SOURCES)
    FUNCTION = "lambda"  # a function's asynchronous invocations: on-failure destination or DLQ
    RULE_TARGET = "eventbridge"  # an EventBridge rule's target with a dead-letter queue
    SUBSCRIPTION = "sns"  # an SNS subscription with a redrive policy


class TargetKind(StrEnum):
    """What a dead letter is delivered back to, and so the one action the re-driver may take."""

    FUNCTION = "lambda"  # lambda:InvokeFunction, InvocationType=Event
    QUEUE = "sqs"  # sqs:SendMessage
    TOPIC = "sns"  # sns:Publish: a rule's target topic (never a subscription's own topic)
    STATE_MACHINE = "states"  # states:StartExecution
    EVENT_BUS = "events"  # events:PutEvents on the rule's target bus


# Which targets each kind of source may have: a subscription's endpoint is a queue or a function.
TARGETS_OF = {
    SourceKind.FUNCTION: frozenset({TargetKind.FUNCTION}),
    SourceKind.RULE_TARGET: frozenset(TargetKind),
    SourceKind.SUBSCRIPTION: frozenset({TargetKind.QUEUE, TargetKind.FUNCTION}),
}


MAX_SOURCES = 50
MAX_SOURCES_DEPTH = 4  # the array, a source, its breaker, and room for one more
MAX_ARN_CHARS = 2048
# Every source and target is regional and in an account (its region is where it is reached).
ARN_PATTERN = re.compile(r"arn:[a-z-]{1,16}:[a-z0-9-]{1,32}:[a-z0-9-]{1,32}:[0-9]{12}:[^\s]{1,1900}")
NAME_PATTERN = re.compile(r"[A-Za-z0-9._:#@/-]{1,255}")
# Seconds: a day bounds every retry span AWS offers a target (EventBridge's maximum event age).
MAX_ATTEMPT_SECONDS = 86_400
MAX_ATTEMPTS = 186  # EventBridge's 185 retries and the first attempt
# The longest a run waits for a function's synchronous answer to its canary.
MAX_PROBE_SECONDS = 60


@dataclass(frozen=True)
class Retries:
    """How the source tries a delivery before it dead-letters it: ``attempts`` tries, each within
    ``attempt_seconds``. A failure of what the re-driver delivered is back in the DLQ at most
    ``attempts`` × ``attempt_seconds`` later (for a function invoked asynchronously); a target
    that answers at once (a queue, a topic, a state machine, a bus) has 1 attempt."""

    attempts: int = 1
    attempt_seconds: int = 60


@dataclass(frozen=True)
class ConsumerBreaker:
    """A Powertools circuit breaker (``aws_lambda_powertools.utilities.circuit_breaker``, DynamoDB
    persistence) the target keeps around its own work: while it is OPEN the re-driver sends it
    nothing. The attribute names are Powertools' defaults unless the target changed them."""

    table: str
    name: str
    key_attr: str = "id"
    sort_key_attr: str = ""  # a composite key: the partition holds static_pk_value, the sort key the name
    static_pk_value: str = ""
    state_attr: str = "state"
    opened_at_attr: str = "opened_at"
    # The breaker's recovery_timeout: after it, the target lets a probe through (HALF_OPEN).
    recovery_timeout_seconds: int = 30


@dataclass(frozen=True)
class DeadLetterSource:
    """One source of a DLQ's dead letters and its one target.

    ``arn``: the function's ARN, the rule's ARN, or the subscription's ARN. ``target_arn``: the
    function; the rule target's ARN; the subscription's endpoint. ``target_id``: the rule target's
    id. ``topic_arn``: a subscription's topic (its dead letters name it; it is never published
    to). ``raw_delivery``: a subscription's RawMessageDelivery. ``target_role_arn``: the role
    EventBridge uses to reach the target, when the target needs one (a bus, a state machine)."""

    kind: SourceKind
    arn: str
    target_kind: TargetKind
    target_arn: str
    retries: Retries = Retries()
    target_id: str = ""
    topic_arn: str = ""
    raw_delivery: bool = False
    breaker: ConsumerBreaker | None = None
    # A function probed synchronously: its canary is invoked with RequestResponse, and the
    # function's answer is the verdict at once (a failing canary never leaves the DLQ). The
    # function's timeout; 0: its canaries go asynchronously, as every re-drive.
    probe_timeout_seconds: int = 0

    @property
    def address(self) -> str:
        """The source's name in routing, logs and the state table: a function's or a
        subscription's ARN; a rule target's rule ARN and target ARN (a rule has several targets)."""
        if self.kind is SourceKind.RULE_TARGET:
            return f"{self.arn}|{self.target_arn}"
        return self.arn

    @property
    def failures_return(self) -> bool:
        """Whether a failure of what the re-driver delivered comes back to this DLQ: a function's
        does (Lambda retries it, then writes a new record). A rule target's or a subscription's
        never does: the re-driver delivers to the target itself, not through EventBridge or SNS,
        so the target's answer to that call is the whole verdict."""
        return self.kind is SourceKind.FUNCTION

    def returns_under_request_id(self, *, probe: bool) -> bool:
        """Whether a re-drive's failure comes back here under the request id its call got back: a
        function's asynchronous Invoke (a canary probed synchronously is answered in the call)."""
        return self.failures_return and not (probe and self.probe_timeout_seconds > 0)

    @property
    def name(self) -> str:
        """The source's resource name (CloudWatch's FunctionName, RuleName or TopicName)."""
        resource = self.topic_arn if self.kind is SourceKind.SUBSCRIPTION else self.arn
        return resource.rsplit(":", 1)[-1].rsplit("/", 1)[-1]

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "kind": self.kind.value,
            "arn": self.arn,
            "target_kind": self.target_kind.value,
            "target_arn": self.target_arn,
            "attempts": self.retries.attempts,
            "attempt_seconds": self.retries.attempt_seconds,
        }
        optional = {
            "target_id": self.target_id,
            "topic_arn": self.topic_arn,
            "raw_delivery": self.raw_delivery,
            "probe_timeout_seconds": self.probe_timeout_seconds,
        }
        document.update({name: value for name, value in optional.items() if value})
        if self.breaker is not None:
            document["breaker"] = {name: value for name, value in vars(self.breaker).items() if value != ""}
        return document


def sources_json(sources: tuple[DeadLetterSource, ...] | list[DeadLetterSource]) -> str:
    """What the construct writes into ``DEAD_LETTER_SOURCES``."""
    return json.dumps([source.to_json() for source in sources], separators=(",", ":"), sort_keys=True)


def read_sources(text_value: str) -> tuple[DeadLetterSource, ...]:
    """Parse ``DEAD_LETTER_SOURCES``; raise ``Rejection`` naming the field at fault (the empty
    string: no sources of another kind)."""
    if not text_value.strip():
        return ()
    depth = json_depth(text_value)
    if depth > MAX_SOURCES_DEPTH:
        raise Rejection(
            "DEAD_LETTER_SOURCES",
            f"nests {depth} deep, more than {MAX_SOURCES_DEPTH}",
            subject="a valid setting",
        )
    try:
        document = json.loads(text_value)
    except ValueError as exc:
        raise Rejection("DEAD_LETTER_SOURCES", f"is not JSON ({exc})", subject="a valid setting") from None
    return read_source_list(document, "DEAD_LETTER_SOURCES", subject="a valid setting")


def read_source_list(value: object, field: str, *, subject: str) -> tuple[DeadLetterSource, ...]:
    """A JSON array of sources, none named twice; raise ``Rejection`` naming ``field[index]``'s
    field at fault, of ``subject``."""
    sources = []
    for index, item in enumerate(array(value, field, max_items=MAX_SOURCES)):
        try:
            sources.append(read_source(item))
        except Rejection as rejection:
            raise rejection.within(f"{field}[{index}]", subject=subject) from None
    addresses = [source.address for source in sources]
    if len(set(addresses)) != len(addresses):
        raise Rejection(field, "names a source twice", subject=subject)
    return tuple(sources)


def read_source(item: object) -> DeadLetterSource:
    """One source of ``DEAD_LETTER_SOURCES``; raise ``Rejection`` naming the field."""
    if not isinstance(item, dict):
        raise Rejection("", "is not a JSON object")
    kind = _choice(required(item, "kind"), "kind", SourceKind)
    if kind is SourceKind.QUEUE:
        raise Rejection("kind", "is sqs: source queues are SOURCE_QUEUE_URL's")
    target_kind = _choice(required(item, "target_kind"), "target_kind", TargetKind)
    if target_kind not in TARGETS_OF[kind]:
        allowed = ", ".join(sorted(TARGETS_OF[kind]))
        raise Rejection(
            "target_kind", f"is {target_kind.value}; a {kind.value} source's target is one of {allowed}"
        )
    retries = Retries(
        attempts=integer_of(item, "attempts", low=1, high=MAX_ATTEMPTS),
        attempt_seconds=integer_of(item, "attempt_seconds", low=1, high=MAX_ATTEMPT_SECONDS),
    )
    target_arn = text_of(item, "target_arn", max_chars=MAX_ARN_CHARS, pattern=ARN_PATTERN)
    service = target_arn.split(":")[2]
    if service != target_kind.value:
        raise Rejection("target_arn", f"is an ARN of {service}, not of the target's kind {target_kind.value}")
    probe_timeout = integer(
        item.get("probe_timeout_seconds", 0), "probe_timeout_seconds", low=0, high=MAX_PROBE_SECONDS
    )
    if probe_timeout and kind is not SourceKind.FUNCTION:
        raise Rejection(
            "probe_timeout_seconds",
            f"is set on a {kind.value} source; only a function is probed synchronously",
        )
    breaker = item.get("breaker")
    return DeadLetterSource(
        kind=kind,
        arn=text_of(item, "arn", max_chars=MAX_ARN_CHARS, pattern=ARN_PATTERN),
        target_kind=target_kind,
        target_arn=target_arn,
        retries=retries,
        target_id=text(item.get("target_id", ""), "target_id", max_chars=64),
        topic_arn=_optional_arn(item, "topic_arn"),
        raw_delivery=_flag(item.get("raw_delivery", False), "raw_delivery"),
        breaker=None if breaker is None else _read_breaker(breaker),
        probe_timeout_seconds=probe_timeout,
    )


def _read_breaker(value: object) -> ConsumerBreaker:
    """The target's Powertools breaker: its table, its circuit's name, and where the record keeps
    what the re-driver reads (Powertools' attribute names unless the target changed them)."""
    if not isinstance(value, dict):
        raise Rejection("breaker", "is not a JSON object")
    defaults = ConsumerBreaker(table="", name="")
    try:
        attributes = {
            field: text(value.get(field, getattr(defaults, field)), field, max_chars=255, pattern=pattern)
            for field, pattern in BREAKER_ATTRIBUTES.items()
        }
        if attributes["sort_key_attr"] and not attributes["static_pk_value"]:
            raise Rejection("static_pk_value", "is empty: a composite key's partition needs it")
        timeout = value.get("recovery_timeout_seconds", defaults.recovery_timeout_seconds)
        return ConsumerBreaker(
            table=text_of(value, "table", max_chars=255, pattern=NAME_PATTERN),
            name=text_of(value, "name", max_chars=255),
            recovery_timeout_seconds=integer(
                timeout, "recovery_timeout_seconds", low=1, high=MAX_ATTEMPT_SECONDS
            ),
            **attributes,
        )
    except Rejection as rejection:
        raise rejection.within("breaker", subject="valid") from None


# The names a breaker's record is read by (an empty sort key: the circuit's name is the key).
ATTRIBUTE_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")
BREAKER_ATTRIBUTES = {
    "key_attr": ATTRIBUTE_NAME,
    "sort_key_attr": re.compile(r"[A-Za-z0-9._-]{0,255}"),
    "static_pk_value": None,
    "state_attr": ATTRIBUTE_NAME,
    "opened_at_attr": ATTRIBUTE_NAME,
}


def _choice(value: object, field: str, choices: type[StrEnum]) -> Any:
    allowed = ", ".join(choice.value for choice in choices)
    if not isinstance(value, str) or value not in {choice.value for choice in choices}:
        raise Rejection(field, f"is {str(value)[:40]!r}, not one of {allowed}")
    return choices(value)


def _optional_arn(item: dict[str, Any], field: str) -> str:
    value = item.get(field, "")
    return "" if value == "" else text(value, field, max_chars=MAX_ARN_CHARS, pattern=ARN_PATTERN)


def _flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise Rejection(field, "is not true or false")
    return value
