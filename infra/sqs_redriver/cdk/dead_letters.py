"""The dead-letter sources of another kind, read from the user's own constructs and checked at synth:
a Lambda function's asynchronous failures (its on-failure destination or its older DLQ), an
EventBridge rule target's DLQ, an SNS subscription's DLQ (``SqsRedriver.for_function``,
``for_rule_target``, ``for_subscription``).

Each is read into the protocol's ``DeadLetterSource`` (sqs_redriver.protocol.sources), whose ARNs
are CDK tokens here, resolved at deploy time in ``DEAD_LETTER_SOURCES``; with it an
``AttachedSource`` keeps what granting and watching it takes (the DLQ, the target's key, the
construct it came from, the breaker's table). What the re-driver cannot re-drive faithfully is a
SettingsError, in a sentence naming the construct and what is wrong with it.

ARNs are told apart by the resource a token references (``Reference.target``, a CloudFormation
resource of a known type) or, for an imported resource, by the service and resource type an ARN
string names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import jsii
from aws_cdk import CfnResource, Duration, IResolveContext, Reference, Stack, Token, Tokenization
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.protocol.limits import SQS_MAX_MESSAGE_BYTES
from sqs_redriver.protocol.sources import (
    MAX_PROBE_SECONDS,
    MAX_SOURCES,
    ConsumerBreaker,
    DeadLetterSource,
    Retries,
    SourceKind,
    TargetKind,
    read_source,
)
from sqs_redriver.protocol.wire import Rejection

# Lambda: an asynchronous invocation's payload (1 MB since 2025), its retries of a function error
# by default, and the longest wait between two of them (1 minute, then 2).
LAMBDA_ASYNC_MAX_PAYLOAD_BYTES = 1_048_576
LAMBDA_DEFAULT_RETRY_ATTEMPTS = 2
LAMBDA_LONGEST_RETRY_WAIT_SECONDS = 120
LAMBDA_DEFAULT_TIMEOUT_SECONDS = 3
# EventBridge's retry policy of a target that sets none: 185 retries within 24 hours.
EVENTBRIDGE_DEFAULT_RETRY_ATTEMPTS = 185
EVENTBRIDGE_DEFAULT_EVENT_AGE_SECONDS = 86_400
# What a rule target's rendered properties may hold that changes what the target is sent.
INPUT_PROPERTIES = ("input", "inputPath", "inputTransformer")
SUBSCRIPTION_TARGETS = {"sqs": TargetKind.QUEUE, "lambda": TargetKind.FUNCTION}
# A stand-in for a token while the protocol's parser checks what is known at synth.
_TOKEN_STAND_IN = "arn:aws:token:us-east-1:123456789012:resolved-at-deploy"


@dataclass(frozen=True)
class ConsumerBreakerProps:
    """The Powertools circuit breaker (DynamoDB persistence) the target keeps around its own work:
    while it is OPEN the re-driver sends the target nothing. ``table`` and ``name`` as the
    target passes them to Powertools; the attribute names are Powertools' defaults unless the
    target changed them. ``static_pk_value`` (a composite key, with ``sort_key_attr``): Powertools'
    default is ``circuit_breaker#<the function's name>``, filled in for a target function of this
    app. The re-drive function gets ``dynamodb:GetItem`` on that record of ``table`` alone."""

    table: dynamodb.ITable
    name: str
    recovery_timeout: Duration = Duration.seconds(30)
    key_attr: str = "id"
    sort_key_attr: str | None = None
    static_pk_value: str | None = None
    state_attr: str = "state"
    opened_at_attr: str = "opened_at"


@dataclass(frozen=True)
class AttachedSource:
    """One source as read from the user's constructs: ``source`` (its ARNs CDK tokens),
    ``dead_letter_queue`` (where its dead letters are), ``origin`` (the function, rule or
    subscription it was read from; its metrics are shown), ``target_key`` (the customer-managed key
    delivering to the target uses, when known), ``breaker_table`` (the target's breaker's table)."""

    source: DeadLetterSource
    dead_letter_queue: sqs.IQueue
    origin: IConstruct
    label: str  # "the function <path>", for sentences
    target_key: kms.IKey | None = None
    breaker_table: dynamodb.ITable | None = None

    @property
    def breaker_key(self) -> str:
        """The partition key of the target's breaker record: the circuit's name, or the static
        partition value of a composite key."""
        breaker = self.source.breaker
        assert breaker is not None, "only a source with a breaker has its key"
        return breaker.static_pk_value if breaker.sort_key_attr else breaker.name


# --- a Lambda function's asynchronous failures ----------------------------------------------------


def read_function(
    function: lambda_.Function,
    *,
    dead_letter_queue: sqs.IQueue | None = None,
    consumer_breaker: ConsumerBreakerProps | None = None,
) -> AttachedSource:
    """The function's on-failure destination or its older DLQ (``dead_letter_queue`` chooses when
    it has both), its retries and its timeout."""
    if not isinstance(function, lambda_.Function):
        raise SettingsError(
            "for_function: function must be a lambda_.Function of this app (its on-failure destination, "
            f"dead-letter queue, retries and timeout are read from it), got {type(function).__name__}"
        )
    label = f"the function {function.node.path}"
    config = _invoke_config(function)
    queue = _function_queue(function, label, config, dead_letter_queue)
    _check_function_queue(queue, label)
    retries = config.maximum_retry_attempts if config is not None else None
    attempts = (LAMBDA_DEFAULT_RETRY_ATTEMPTS if retries is None else _known_int(retries, label)) + 1
    timeout = function.timeout.to_seconds() if function.timeout else LAMBDA_DEFAULT_TIMEOUT_SECONDS
    source = DeadLetterSource(
        kind=SourceKind.FUNCTION,
        arn=function.function_arn,
        target_kind=TargetKind.FUNCTION,
        target_arn=function.function_arn,
        retries=Retries(attempts=attempts, attempt_seconds=int(timeout) + LAMBDA_LONGEST_RETRY_WAIT_SECONDS),
        probe_timeout_seconds=_probe_timeout(int(timeout), config),
    )
    return _attached(source, queue, function, label, function, consumer_breaker)


def _probe_timeout(timeout: int, config: lambda_.CfnEventInvokeConfig | None) -> int:
    """A function is probed synchronously (its answer is the canary's verdict at once) when a run
    can wait out its timeout, and no on-success destination expects every success (a synchronous
    invocation reaches none); else 0, its canaries asynchronous."""
    destinations = config.destination_config if config is not None else None
    if getattr(destinations, "on_success", None) is not None or timeout > MAX_PROBE_SECONDS:
        return 0
    return timeout


def _invoke_config(function: lambda_.Function) -> lambda_.CfnEventInvokeConfig | None:
    """The function's asynchronous invocation config ($LATEST's: ``on_failure=`` or
    ``configure_async_invoke``), if it has one."""
    child = function.node.try_find_child("EventInvokeConfig")
    config = child.node.default_child if child is not None else None
    return config if isinstance(config, lambda_.CfnEventInvokeConfig) else None


def _function_queue(
    function: lambda_.Function,
    label: str,
    config: lambda_.CfnEventInvokeConfig | None,
    chosen: sqs.IQueue | None,
) -> sqs.IQueue:
    """The queue the function dead-letters to: its on-failure destination, its DLQ, or ``chosen``
    (which must be one of them)."""
    destination = _failure_destination(config)
    if destination is not None:
        found, description = describe_arn(destination)
        if found is not TargetKind.QUEUE:
            raise SettingsError(
                f"the on-failure destination of {label} is {description}; the re-driver reads an SQS "
                "queue: give the function on_failure=destinations.SqsDestination(queue)"
            )
    if function.dead_letter_topic is not None:
        raise SettingsError(
            f"the dead-letter queue of {label} is an SNS topic (dead_letter_topic); the re-driver "
            "reads an SQS queue: give the function dead_letter_queue=queue instead"
        )
    candidates = [arn for arn in (destination, _queue_arn(function.dead_letter_queue)) if arn is not None]
    if not candidates:
        raise SettingsError(
            f"{label} has neither an on-failure destination nor a dead-letter queue: give it "
            "on_failure=destinations.SqsDestination(queue) (or dead_letter_queue=queue) before "
            "creating the re-driver, which then drains that queue"
        )
    if chosen is not None:
        if not any(same_value(function, arn, chosen.queue_arn) for arn in candidates):
            raise SettingsError(
                f"dead_letter_queue is not the on-failure destination nor the dead-letter queue of "
                f"{label}: omit it, or pass the queue the function sends its failures to"
            )
        return chosen
    if len(candidates) == 2 and not same_value(function, *candidates):
        raise SettingsError(
            f"{label} has both an on-failure destination and a dead-letter queue: pass "
            "dead_letter_queue= to say which one this re-driver drains"
        )
    return function.dead_letter_queue or queue_behind(candidates[0], label)


def _failure_destination(config: lambda_.CfnEventInvokeConfig | None) -> str | None:
    destinations = config.destination_config if config is not None else None
    on_failure = getattr(destinations, "on_failure", None)
    destination = getattr(on_failure, "destination", None)
    return destination if isinstance(destination, str) else None


def _queue_arn(queue: sqs.IQueue | None) -> str | None:
    return queue.queue_arn if queue is not None else None


def _check_function_queue(queue: sqs.IQueue, label: str) -> None:
    """Lambda sends to a standard queue only, and a record of a payload the queue cannot hold loses
    the payload: the queue must take SQS's largest message (its default)."""
    if queue.fifo:
        raise SettingsError(
            f"the dead_letter_queue of {label} is a FIFO queue: Lambda sends asynchronous failures "
            "to a standard queue only, and delivers none to it"
        )
    size = _maximum_message_size(queue)
    if size is not None and size < SQS_MAX_MESSAGE_BYTES:
        raise SettingsError(
            f"the dead_letter_queue of {label} takes messages of at most {size} bytes, less than "
            f"the {LAMBDA_ASYNC_MAX_PAYLOAD_BYTES} bytes of an asynchronous invocation's payload: "
            "records of larger payloads will drop their payload (an on-failure destination's) or be "
            "lost (a dead-letter queue's), and the re-driver can only park or never see them; leave "
            f"its maximum_message_size unset (SQS's {SQS_MAX_MESSAGE_BYTES} bytes)"
        )


def _maximum_message_size(queue: sqs.IQueue) -> int | None:
    """The MaximumMessageSize of a queue defined in this app, when set and known at synth."""
    cfn = queue.node.default_child if isinstance(queue, sqs.Queue) else None
    size = cfn.maximum_message_size if isinstance(cfn, sqs.CfnQueue) else None
    return None if size is None or Token.is_unresolved(size) else int(size)


# --- an EventBridge rule's target -----------------------------------------------------------------


def read_rule_target(
    rule: events.Rule,
    *,
    target: IConstruct | None = None,
    target_index: int | None = None,
    dead_letter_queue: sqs.IQueue | None = None,
    consumer_breaker: ConsumerBreakerProps | None = None,
) -> AttachedSource:
    """One target of ``rule`` (``target``, the construct it targets, or ``target_index``, its
    place among the rule's targets; either may be left out when the rule has one target)."""
    if not isinstance(rule, events.Rule):
        raise SettingsError(
            f"for_rule_target: rule must be an events.Rule of this app, got {type(rule).__name__}"
        )
    rendered = rendered_targets(rule)
    item = rendered[_target_index(rule, rendered, target, target_index)]
    label = f"the target {item.get('id')} of the rule {rule.node.path}"
    target_arn: str = item["arn"]
    kind, description = describe_arn(target_arn)
    if kind is None:
        raise SettingsError(
            f"{label} is {description}; the re-driver delivers to a Lambda function, an SQS queue, "
            "an SNS topic, a Step Functions state machine or an EventBridge event bus"
        )
    _check_delivered_as_matched(item, label)
    dlq_arn = (item.get("deadLetterConfig") or {}).get("arn")
    if dlq_arn is None:
        raise SettingsError(
            f"{label} has no dead-letter queue: give it dead_letter_queue=queue (an events_targets "
            "prop), which the re-driver then drains"
        )
    queue = _matching_queue(rule, dlq_arn, dead_letter_queue, label)
    _check_not_a_loop(rule, kind, target_arn, queue, label)
    source = DeadLetterSource(
        kind=SourceKind.RULE_TARGET,
        arn=rule.rule_arn,
        target_kind=kind,
        target_arn=target_arn,
        retries=rule_retries(item.get("retryPolicy") or {}, label),
        target_id=str(item.get("id", "")),
    )
    return _attached(source, queue, rule, label, construct_behind(target_arn), consumer_breaker)


@jsii.implements(IResolveContext)
class _AsGiven:
    """A resolve context that hands values back as given: the targets a rule renders, with the
    tokens of their ARNs intact (Stack.resolve would turn them into CloudFormation references,
    and a token of another stack would lose its cross-stack export)."""

    def __init__(self, scope: IConstruct) -> None:
        self._scope = scope

    @property
    def scope(self) -> IConstruct:
        return self._scope

    @property
    def preparing(self) -> bool:
        return False

    @property
    def document_path(self) -> list[str]:
        return []

    def resolve(self, x: Any, *, remove_empty: bool | None = None) -> Any:
        return x

    def register_post_processor(self, post_processor: Any) -> None:
        """Nothing to post-process: the values are read, not written."""


def rendered_targets(rule: events.Rule) -> list[dict[str, Any]]:
    """The rule's targets as its CfnRule renders them (camelCase keys, tokens intact)."""
    cfn = rule.node.default_child
    assert isinstance(cfn, events.CfnRule)
    targets: Any = cfn.targets
    if targets is not None and hasattr(targets, "resolve"):  # Rule renders its targets lazily
        targets = targets.resolve(_AsGiven(cfn))
    return [dict(item) for item in targets or [] if isinstance(item, dict)]


def _target_index(
    rule: events.Rule, rendered: list[dict[str, Any]], target: object, index: int | None
) -> int:
    ids = ", ".join(str(item.get("id")) for item in rendered) or "none"
    if target is not None and index is not None:
        raise SettingsError("for_rule_target: pass target or target_index, not both")
    if target is not None:
        return _index_of(rule, rendered, target, ids)
    if index is None:
        if len(rendered) != 1:
            raise SettingsError(
                f"the rule {rule.node.path} has {len(rendered)} targets ({ids}): pass target= (the "
                "construct it targets) or target_index= to say which one's dead letters to re-drive"
            )
        return 0
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(rendered):
        raise SettingsError(
            f"target_index {index!r} names no target of the rule {rule.node.path} (its targets: {ids}); "
            "add the target with rule.add_target before creating the re-driver"
        )
    return index


def _index_of(rule: events.Rule, rendered: list[dict[str, Any]], target: object, ids: str) -> int:
    if not isinstance(target, Construct):
        raise SettingsError(
            "for_rule_target: target must be the construct the rule targets (the function, queue, "
            "topic, state machine or event bus), not its events_targets wrapper, got "
            f"{type(target).__name__}; or pass target_index"
        )
    found = [
        index for index, item in enumerate(rendered) if same_construct(construct_behind(item["arn"]), target)
    ]
    if not found:
        raise SettingsError(
            f"the rule {rule.node.path} has no target on {target.node.path} (its targets: {ids}): add "
            "it with rule.add_target(...) before creating the re-driver, or pass the construct the rule "
            "does target"
        )
    if len(found) != 1:
        raise SettingsError(
            f"the rule {rule.node.path} has {len(found)} targets on {target.node.path} (its targets: "
            f"{ids}): pass target_index to say which one"
        )
    return found[0]


def _check_delivered_as_matched(item: dict[str, Any], label: str) -> None:
    """EventBridge dead-letters the event as it matched: a target sent something else cannot be
    given what it would have got."""
    transformed = [name for name in INPUT_PROPERTIES if item.get(name) is not None]
    if transformed:
        raise SettingsError(
            f"{label} has {' and '.join(transformed)}: its DLQ holds the event as it matched, "
            "untransformed, so re-delivering it would give the target something other than what it "
            "gets from the rule; send it the event as is (transform it in the target) to re-drive it"
        )
    fifo = isinstance(queue := construct_behind(item["arn"]), sqs.Queue) and queue.fifo
    if fifo or item.get("sqsParameters") is not None:
        raise SettingsError(
            f"{label} is a FIFO queue: its dead letters do not carry the message group id a FIFO "
            "queue needs, so the re-driver could only park them"
        )


def _check_not_a_loop(
    rule: events.Rule, kind: TargetKind, target_arn: str, queue: sqs.IQueue, label: str
) -> None:
    if kind is TargetKind.EVENT_BUS and _is_own_bus(rule, target_arn):
        raise SettingsError(
            f"{label} is the rule's own event bus: re-delivering there would publish each event to "
            "every rule of the bus, not to the one target that failed"
        )
    if kind is TargetKind.QUEUE and same_value(rule, target_arn, queue.queue_arn):
        raise SettingsError(f"{label} is its own dead-letter queue: a re-drive would never leave it")


def _is_own_bus(rule: events.Rule, bus_arn: str) -> bool:
    """Whether ``bus_arn`` is the bus ``rule`` is on (by its construct, its ARN or its name)."""
    cfn = rule.node.default_child
    assert isinstance(cfn, events.CfnRule)
    own = cfn.event_bus_name or "default"
    if same_construct(construct_behind(bus_arn), construct_behind(own)):
        return True
    if not Token.is_unresolved(own) and own.startswith("arn:"):
        return same_value(rule, bus_arn, own)
    own_arn = Stack.of(rule).format_arn(service="events", resource="event-bus", resource_name=own)
    return same_value(rule, bus_arn, own_arn)


def rule_retries(policy: dict[str, Any], label: str) -> Retries:
    """EventBridge's tries: the first and ``maximumRetryAttempts`` more, all within
    ``maximumEventAgeInSeconds``, so each within its share of that age."""
    retries = policy.get("maximumRetryAttempts", EVENTBRIDGE_DEFAULT_RETRY_ATTEMPTS)
    age = policy.get("maximumEventAgeInSeconds", EVENTBRIDGE_DEFAULT_EVENT_AGE_SECONDS)
    attempts = _known_int(retries, label) + 1
    return Retries(attempts=attempts, attempt_seconds=max(1, math.ceil(_known_int(age, label) / attempts)))


# --- an SNS subscription --------------------------------------------------------------------------


def read_subscription(
    subscription: sns.Subscription,
    *,
    dead_letter_queue: sqs.IQueue | None = None,
    consumer_breaker: ConsumerBreakerProps | None = None,
) -> AttachedSource:
    """The subscription's DLQ (its redrive policy) and its endpoint, a queue or a function."""
    if not isinstance(subscription, sns.Subscription):
        raise SettingsError(
            "for_subscription: subscription must be an sns.Subscription of this app, got "
            f"{type(subscription).__name__}"
        )
    cfn = subscription.node.default_child
    assert isinstance(cfn, sns.CfnSubscription)
    label = f"the subscription {subscription.node.path}"
    kind = SUBSCRIPTION_TARGETS.get(cfn.protocol)
    if kind is None:
        raise SettingsError(
            f"the endpoint protocol of {label} is {cfn.protocol}; the re-driver delivers to an SQS "
            "queue (sqs) or a Lambda function (lambda)"
        )
    endpoint = cfn.endpoint
    assert endpoint is not None, "a subscription of a queue or a function names its endpoint"
    queue = _subscription_queue(subscription, label, dead_letter_queue)
    if kind is TargetKind.QUEUE and same_value(subscription, endpoint, queue.queue_arn):
        raise SettingsError(
            f"the endpoint of {label} is its own dead-letter queue: a re-drive would never leave it"
        )
    target = construct_behind(endpoint)
    if isinstance(target, sqs.Queue) and target.fifo:
        raise SettingsError(
            f"the endpoint of {label} is a FIFO queue: its dead letters do not carry the message group "
            "id a FIFO queue needs, so the re-driver could only park them"
        )
    raw = cfn.raw_message_delivery
    source = DeadLetterSource(
        kind=SourceKind.SUBSCRIPTION,
        arn=cfn.ref,
        target_kind=kind,
        target_arn=endpoint,
        topic_arn=cfn.topic_arn,
        raw_delivery=raw is True,
    )
    return _attached(source, queue, subscription, label, target, consumer_breaker)


def _subscription_queue(subscription: sns.Subscription, label: str, given: sqs.IQueue | None) -> sqs.IQueue:
    """The subscription's DLQ: ``given`` (an imported queue with its key) must be it."""
    queue = subscription.dead_letter_queue
    if queue is None:
        raise SettingsError(
            f"{label} has no dead-letter queue (redrive policy): subscribe with dead_letter_queue=queue, "
            "which the re-driver then drains"
        )
    if given is not None and not same_value(subscription, given.queue_arn, queue.queue_arn):
        raise SettingsError(
            f"dead_letter_queue is not the dead-letter queue of {label}: omit it, or pass that one"
        )
    return given or queue


# --- what every kind shares -----------------------------------------------------------------------


def _attached(
    source: DeadLetterSource,
    queue: sqs.IQueue,
    origin: IConstruct,
    label: str,
    target: IConstruct | None,
    breaker: ConsumerBreakerProps | None,
) -> AttachedSource:
    """The source with its breaker, checked with the protocol's own parser (so the re-drive
    Lambda reads at cold start what synth accepted), and the target's key."""
    if breaker is not None:
        source = replace(source, breaker=_consumer_breaker(breaker, target, label))
    check_readable(source, label)
    return AttachedSource(
        source=source,
        dead_letter_queue=queue,
        origin=origin,
        label=label,
        target_key=_key_of(target),
        breaker_table=breaker.table if breaker is not None else None,
    )


def _consumer_breaker(props: ConsumerBreakerProps, target: IConstruct | None, label: str) -> ConsumerBreaker:
    static = props.static_pk_value
    if props.sort_key_attr and static is None:
        if not isinstance(target, lambda_.Function):
            raise SettingsError(
                f"consumer_breaker.static_pk_value is required with sort_key_attr for {label}, whose "
                "target is not a Lambda function of this app: Powertools' default names the function "
                "that keeps the breaker (circuit_breaker#<its name>)"
            )
        static = f"circuit_breaker#{target.function_name}"
    return ConsumerBreaker(
        table=props.table.table_name,
        name=props.name,
        key_attr=props.key_attr,
        sort_key_attr=props.sort_key_attr or "",
        static_pk_value=(static or "") if props.sort_key_attr else "",
        state_attr=props.state_attr,
        opened_at_attr=props.opened_at_attr,
        recovery_timeout_seconds=int(props.recovery_timeout.to_seconds()),
    )


def check_readable(source: DeadLetterSource, label: str) -> None:
    """Parse the source's JSON as the re-drive Lambda will, each token standing in for what it
    resolves to at deploy (an ARN; the target's of the target's service); raise SettingsError
    naming the field that would be refused."""
    stand_ins = {"target_arn": _TOKEN_STAND_IN.replace("token", source.target_kind.value, 1)}
    document = _stand_ins(source.to_json(), stand_ins)
    try:
        read_source(document)
    except Rejection as rejection:
        raise SettingsError(f"{label} cannot be re-driven as configured: {rejection}") from None


def _stand_ins(value: Any, by_field: dict[str, str], field: str = "") -> Any:
    if isinstance(value, dict):
        return {name: _stand_ins(item, by_field, name) for name, item in value.items()}
    if isinstance(value, str) and Token.is_unresolved(value):
        return by_field.get(field, _TOKEN_STAND_IN)
    return value


def source_findings(
    sources: Sequence[AttachedSource], dead_letter_queue: sqs.IQueue, consumer_verdicts: bool = False
) -> Iterator[str]:
    """What one re-driver's sources must share: their DLQ (``dead_letter_queue``) and their kind;
    no source twice; and no consumer verdicts (the kit reports on SQS consumers alone)."""
    if consumer_verdicts:
        yield (
            "consumer_verdicts is on for a DLQ of another kind: the consumer kit reports on SQS "
            "consumers alone, never on a function, a rule target or a subscription; remove "
            "consumer_verdicts=True from its settings"
        )
    if len(sources) > MAX_SOURCES:
        yield f"dead_letter_sources: at most {MAX_SOURCES} sources, got {len(sources)}"
    kinds = {attached.source.kind for attached in sources}
    if len(kinds) > 1:
        yield (
            f"dead_letter_sources are of {len(kinds)} kinds ({', '.join(sorted(kinds))}): a DLQ holds "
            "one kind's dead letters, so one re-driver takes sources of one kind"
        )
    for attached in sources:
        if not same_value(attached.origin, attached.dead_letter_queue.queue_arn, dead_letter_queue.queue_arn):
            yield f"{attached.label} dead-letters to another queue than dead_letter_queue"
    addresses = [attached.source.address for attached in sources]
    if len(set(addresses)) != len(addresses):
        yield "dead_letter_sources name one source twice"


# --- ARNs and the constructs behind them ----------------------------------------------------------

# The target each CloudFormation resource type is delivered to as; a description for the others.
TARGETS_BY_TYPE = {
    "AWS::Lambda::Function": TargetKind.FUNCTION,
    "AWS::Lambda::Alias": TargetKind.FUNCTION,
    "AWS::Lambda::Version": TargetKind.FUNCTION,
    "AWS::SQS::Queue": TargetKind.QUEUE,
    "AWS::SNS::Topic": TargetKind.TOPIC,
    "AWS::StepFunctions::StateMachine": TargetKind.STATE_MACHINE,
    "AWS::Events::EventBus": TargetKind.EVENT_BUS,
}
TARGET_DESCRIPTIONS = {
    TargetKind.FUNCTION: "a Lambda function",
    TargetKind.QUEUE: "an SQS queue",
    TargetKind.TOPIC: "an SNS topic",
    TargetKind.STATE_MACHINE: "a Step Functions state machine",
    TargetKind.EVENT_BUS: "an EventBridge event bus",
}
OTHER_DESCRIPTIONS = {
    "AWS::S3::Bucket": "an S3 bucket",
    "AWS::ECS::Cluster": "an ECS task (its cluster)",
    "AWS::Events::ApiDestination": "an API destination",
    "AWS::Kinesis::Stream": "a Kinesis stream",
    "AWS::KinesisFirehose::DeliveryStream": "a Firehose stream",
    "AWS::Logs::LogGroup": "a CloudWatch Logs log group",
    "AWS::CodeBuild::Project": "a CodeBuild project",
    "AWS::CodePipeline::Pipeline": "a CodePipeline pipeline",
    "AWS::Batch::JobQueue": "a Batch job queue",
}
# An ARN's service, and the start of its resource for the services with several kinds of resource.
TARGETS_BY_SERVICE = {
    ("lambda", "function:"): TargetKind.FUNCTION,
    ("sqs", ""): TargetKind.QUEUE,
    ("sns", ""): TargetKind.TOPIC,
    ("states", "stateMachine:"): TargetKind.STATE_MACHINE,
    ("events", "event-bus/"): TargetKind.EVENT_BUS,
}
SERVICE_DESCRIPTIONS = {
    ("s3", ""): "an S3 bucket",
    ("ecs", ""): "an ECS task (its cluster)",
    ("events", "api-destination/"): "an API destination",
    ("kinesis", ""): "a Kinesis stream",
    ("firehose", ""): "a Firehose stream",
    ("logs", ""): "a CloudWatch Logs log group",
}


def describe_arn(arn: str) -> tuple[TargetKind | None, str]:
    """The target kind ``arn`` is delivered to as (None: none the re-driver delivers to), and what
    it is, in words."""
    referenced = _referenced(arn)
    if isinstance(referenced, CfnResource):
        resource_type = referenced.cfn_resource_type
        kind = TARGETS_BY_TYPE.get(resource_type)
        if kind is not None:
            return kind, TARGET_DESCRIPTIONS[kind]
        return None, OTHER_DESCRIPTIONS.get(resource_type, f"a {resource_type}")
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn" or Token.is_unresolved(parts[2]):
        return None, "a resource whose ARN is not known at synth"
    service, resource = parts[2], parts[5]
    for table in (TARGETS_BY_SERVICE, SERVICE_DESCRIPTIONS):
        for (known, prefix), value in table.items():
            if service == known and resource.startswith(prefix):
                if isinstance(value, TargetKind):
                    return value, TARGET_DESCRIPTIONS[value]
                return None, value
    return None, f"a resource of the {service} service"


def construct_behind(value: str) -> IConstruct | None:
    """The construct whose attribute ``value`` is (a token referencing its CloudFormation
    resource): the L2 around that resource; None for a literal or computed value."""
    referenced = _referenced(value)
    if referenced is None:
        return None
    parent = referenced.node.scope
    own_resource = parent.node.default_child if parent is not None else None
    return parent if parent is not None and same_construct(own_resource, referenced) else referenced


def same_construct(first: IConstruct | None, second: IConstruct | None) -> bool:
    """One construct (jsii may hand back a new Python object for the same one: compare paths)."""
    return first is not None and second is not None and first.node.path == second.node.path


def _referenced(value: str) -> IConstruct | None:
    if not isinstance(value, str) or not Token.is_unresolved(value):
        return None
    fragments = Tokenization.reverse_string(value)
    token = fragments.first_token if fragments.length == 1 else None
    return token.target if isinstance(token, Reference) else None


def queue_behind(arn: str, label: str) -> sqs.IQueue:
    """The queue (of this app) whose ARN ``arn`` is; raise SettingsError for an imported one, which
    only the caller has."""
    queue = construct_behind(arn)
    if not isinstance(queue, sqs.Queue):
        raise SettingsError(
            f"the dead-letter queue of {label} is not a queue of this app: pass it as "
            "dead_letter_queue= (sqs.Queue.from_queue_attributes, with key_arn if it has a "
            "customer-managed key)"
        )
    return queue


def _matching_queue(scope: IConstruct, arn: str, given: sqs.IQueue | None, label: str) -> sqs.IQueue:
    if given is None:
        return queue_behind(arn, label)
    if not same_value(scope, arn, given.queue_arn):
        raise SettingsError(
            f"dead_letter_queue is not the dead-letter queue of {label}: omit it, or pass that one"
        )
    return given


def same_value(scope: IConstruct, first: str, second: str) -> bool:
    """The same string, or the same once resolved (one queue imported twice, two tokens of one
    attribute): in the stack of the resource they reference, else in ``scope``'s (a reference
    resolves only in its own stack before synth prepares the app)."""
    if first == second:
        return True
    referenced = {Stack.of(found).node.path: found for found in map(_referenced, (first, second)) if found}
    if len(referenced) > 1:
        return False
    resolve = Stack.of(next(iter(referenced.values()), scope)).resolve
    return bool(json.dumps(resolve(first), sort_keys=True) == json.dumps(resolve(second), sort_keys=True))


def _key_of(target: IConstruct | None) -> kms.IKey | None:
    """The customer-managed key a delivery to ``target`` uses: a queue's or a topic's."""
    if isinstance(target, sqs.Queue):
        return target.encryption_master_key
    if isinstance(target, sns.Topic):
        return target.master_key
    return None


def _known_int(value: object, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or Token.is_unresolved(value):
        raise SettingsError(f"the retry policy of {label} must be known at synth, got {value!r}")
    return int(value)
