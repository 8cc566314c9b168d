"""What SqsRedriver takes from its user, checked at synth, at one of two moments.

What the construct cannot be built without (its settings, its sources, the function's props, a
consumer to grant) raises SettingsError at once, led by the construct's path and naming the prop.
How it is wired is ``Wiring``: its queues, their redrive policies and retention, a parking lot and
table the user brings, sources of another kind, and what the rest of the app does with its DLQ
(another re-driver reading it, another queue dead-lettering into it). ``WiringValidation`` is added
to the construct's node and runs once the app is whole: CDK reports the findings of every construct
of the app together at synth, in one error, each line led by the construct's path; each finding
names what is at fault and the line to write.

The state table's layout lives here too: a table the user brings is checked against it and the
construct's own table is built with it (storage.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import Duration, Stack, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct, IValidation

from sqs_redriver.cdk.dead_letters import AttachedSource, construct_behind, same_value, source_findings
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.protocol.limits import SQS_DEFAULT_RETENTION_SECONDS, SQS_MAX_RETENTION_SECONDS
from sqs_redriver.protocol.settings import (
    BY_NAME,
    RENAMED_ENV,
    InvalidSetting,
    check_distinct_queues,
    check_queue_kinds,
    reraise_as,
)

MAX_RECEIVE_COUNT = BY_NAME["max_receive_count"]
# The state table's layout: the one the construct builds (storage.build_state_table) has it, and a
# table the user brings must have it too (state_table_findings).
PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"
DAY_SECONDS = 86_400
_ROLE = "the construct's least-privilege role: add statements with redriver.function.add_to_role_policy"
_ASYNC = "asynchronous invocation is the construct's: no retries, the next scheduled run is the retry"
_LOGS = "pass log_group (a logs.LogGroup with the retention, key and removal policy you want)"
# lambda_.FunctionOptions props the construct sets itself, and why; every other prop passes through.
OWNED_FUNCTION_PROPS: Mapping[str, str] = {
    # Not FunctionOptions props, but a FunctionProps (its subclass) or a mapping could carry them.
    "code": "it runs the re-driver's own code",
    "handler": "it runs the re-driver's own code",
    "runtime": "it runs the re-driver's own code, on the runtime the layers are built for",
    "timeout": "set it with settings=RedriverSettings(redriver_timeout_seconds=...)",
    "memory_size": "set it with settings=RedriverSettings(redriver_memory_mb=...)",
    "reserved_concurrent_executions": "set it with settings=RedriverSettings(max_workers=...)",
    "architecture": "is arm64: the Powertools and consumer kit layers are built for it",
    "role": _ROLE,
    "initial_policy": _ROLE,
    "tracing": "X-Ray stays active (a secure default the cdk-nag packs check)",
    "logging_format": "logs are JSON: Powertools writes structured logs",
    "log_format": "logs are JSON: Powertools writes structured logs",
    "log_retention": _LOGS,
    "log_retention_role": _LOGS,
    "log_retention_retry_options": _LOGS,
    "log_removal_policy": _LOGS,
    "dead_letter_queue": _ASYNC,
    "dead_letter_queue_enabled": _ASYNC,
    "dead_letter_topic": _ASYNC,
    "on_failure": _ASYNC,
    "on_success": _ASYNC,
    "retry_attempts": _ASYNC,
    "max_event_age": _ASYNC,
    "events": "the schedule (and the function's own continuation) is its only trigger",
    "durable_config": "the re-driver is a scheduled run, not a durable execution",
}


@contextmanager
def refused_at(construct: IConstruct) -> Iterator[None]:
    """A SettingsError raised while ``construct`` is built, led by its path as CDK leads a finding."""
    try:
        yield
    except SettingsError as error:
        raise SettingsError(f"[{construct.node.path}] {error}") from None


# --- the wiring, checked once the app is whole ----------------------------------------------------


@dataclass(frozen=True)
class Wiring:
    """What one re-driver (``redriver``) is attached to: its DLQ and its source queues or sources of
    another kind, and the parking lot and table the user brought, if any."""

    redriver: IConstruct
    settings: RedriverSettings
    dead_letter_queue: sqs.IQueue
    source_queues: tuple[sqs.IQueue, ...] = ()
    dead_letter_sources: tuple[AttachedSource, ...] = ()
    parking_lot: sqs.IQueue | None = None
    state_table: dynamodb.ITable | None = None
    # dlq_retention=, for the age alarm of an imported DLQ (monitoring); None: not given
    dlq_retention: Duration | None = None
    monitoring: bool = True

    def findings(self, wirings: Sequence[Wiring]) -> list[str]:
        """Every mistake in this re-driver's wiring; ``wirings``: the app's re-drivers' (this one's
        among them), in the order of the construct tree."""
        return [*self._own_findings(), *self._findings_in_the_app(wirings)]

    def shares_dlq_with(self, other: Wiring) -> bool:
        """Whether ``other`` reads this re-driver's DLQ: one queue (its token), one literal ARN, or
        one ARN once resolved in one stack (two stacks may be deployed to different accounts)."""
        mine, theirs = self.dead_letter_queue.queue_arn, other.dead_letter_queue.queue_arn
        if mine == theirs:
            return True
        if Stack.of(self.redriver).node.path != Stack.of(other.redriver).node.path:
            return False
        return same_value(self.redriver, mine, theirs)

    def _own_findings(self) -> Iterator[str]:
        dlq, settings = self.dead_letter_queue, self.settings
        if self.source_queues:
            yield from queue_findings(self.source_queues, dlq, settings.max_receive_count)
        else:
            yield from source_findings(self.dead_letter_sources, dlq, settings.consumer_verdicts)
        yield from retention_findings(
            settings.expiry_margin_seconds, dlq, self.dlq_retention, self.monitoring
        )
        if self.parking_lot is not None:
            yield from parking_lot_findings(self.parking_lot, dlq, self.source_queues)
        if self.state_table is not None:
            yield from state_table_findings(self.state_table)

    def _findings_in_the_app(self, wirings: Sequence[Wiring]) -> Iterator[str]:
        """Another re-driver on this DLQ (said by the later one), another queue dead-lettering into it."""
        path = self.redriver.node.path
        sharing = [w for w in wirings if w.redriver.node.path != path and w.shares_dlq_with(self)]
        paths = [w.redriver.node.path for w in wirings]
        earlier = [w for w in sharing if paths.index(w.redriver.node.path) < paths.index(path)]
        if earlier:
            yield self._shared_with(earlier[0])
        named = {queue.node.path for wiring in (self, *sharing) for queue in wiring.source_queues}
        unnamed = [
            _around(cfn)
            for cfn in _queues_of(self.redriver.node.root)
            if _around(cfn).node.path not in named and _redrives_into(cfn, self.dead_letter_queue)
        ]
        if unnamed:
            yield self._unnamed_sources(unnamed)

    def _shared_with(self, earlier: Wiring) -> str:
        dlq = _name(self.dead_letter_queue)
        finding = (
            f"dead_letter_queue {dlq} is read by the re-driver {earlier.redriver.node.path} too: two "
            "re-drivers of one DLQ take each other's messages, and each parks the other's dead "
            "letters as of no configured source. "
        )
        if not (self.source_queues and earlier.source_queues):
            return finding + "Give each source (queue, function, rule target, subscription) its own DLQ"
        theirs = {queue.node.path for queue in earlier.source_queues}
        mine = [queue for queue in self.source_queues if queue.node.path not in theirs]
        if not mine:
            return finding + f"Remove this one: {earlier.redriver.node.path} re-drives its queues already"
        queues = ", ".join(_variable(queue) for queue in (*earlier.source_queues[1:], *mine))
        return finding + (
            f"Keep one re-driver per DLQ: remove this one and name its queues in "
            f"{earlier.redriver.node.path}'s other_source_queues=[{queues}], or give them a DLQ of their own"
        )

    def _unnamed_sources(self, queues: Sequence[IConstruct]) -> str:
        dlq = _name(self.dead_letter_queue)
        paths = ", ".join(queue.node.path for queue in queues)
        if not self.source_queues:
            return (
                f"queues of the app dead-letter into dead_letter_queue {dlq}, which holds the dead "
                f"letters of {self.dead_letter_sources[0].label}: {paths}; a DLQ holds one kind's, so "
                "give each a DLQ of its own"
            )
        names = ", ".join(_variable(queue) for queue in (*self.source_queues[1:], *queues))
        return (
            f"queues of the app dead-letter into dead_letter_queue {dlq} that this re-driver does not "
            f"name: {paths}; their dead letters would be parked as of no configured source. Name them: "
            f"other_source_queues=[{names}] (or give each a DLQ of its own)"
        )


@jsii.implements(IValidation)
class WiringValidation:
    """The validation SqsRedriver adds to its node: its ``wiring``'s findings among ``wirings()``,
    the app's re-drivers' wirings when the app synthesizes."""

    def __init__(self, wiring: Wiring, wirings: Callable[[], Sequence[Wiring]]) -> None:
        self._wiring = wiring
        self._wirings = wirings

    def validate(self) -> list[str]:
        return self._wiring.findings(self._wirings())


def queue_findings(
    sources: Sequence[sqs.IQueue], dead_letter_queue: sqs.IQueue, max_receive_count: int
) -> Iterator[str]:
    """The schema's queue rules (each queue in one role, all of one kind), then each source's
    retention and redrive policy."""
    labelled = _labelled_sources(sources)
    dlq = ("dead_letter_queue", dead_letter_queue)
    # A queue's ARN token is the same string for the same queue; an imported queue's ARN is literal.
    yield from _raised(check_distinct_queues, [(label, queue.queue_arn) for label, queue in [dlq, *labelled]])
    kinds = [(label, queue.fifo) for label, queue in labelled]
    yield from _raised(check_queue_kinds, (dlq[0], dead_letter_queue.fifo), kinds)
    for label, queue in labelled:
        yield from _retention_findings(label, queue, dead_letter_queue)
        yield from _redrive_findings(label, queue, dead_letter_queue, max_receive_count)


def _labelled_sources(sources: Sequence[sqs.IQueue]) -> list[tuple[str, sqs.IQueue]]:
    """Each source queue with the prop that names it (none for a DLQ of another kind)."""
    return [
        ("source_queue" if index == 0 else f"other_source_queues[{index - 1}]", queue)
        for index, queue in enumerate(sources)
    ]


def _retention_findings(label: str, source_queue: sqs.IQueue, dead_letter_queue: sqs.IQueue) -> Iterator[str]:
    """A standard DLQ must keep messages longer than the source: a message keeps its first enqueue
    time there (a FIFO DLQ restarts the clock on arrival)."""
    source = known_retention_seconds(source_queue)
    dlq = known_retention_seconds(dead_letter_queue)
    if dead_letter_queue.fifo or source is None or dlq is None or dlq > source:
        return
    if source < SQS_MAX_RETENTION_SECONDS:
        fix = (
            f"set retention_period=Duration.days({SQS_MAX_RETENTION_SECONDS // DAY_SECONDS}) on "
            f"{_name(dead_letter_queue)} (the longest SQS keeps a message)"
        )
    else:
        fix = (
            f"SQS keeps a message {_days(SQS_MAX_RETENTION_SECONDS)} at most, so shorten the source's: "
            f"retention_period=Duration.days({SQS_MAX_RETENTION_SECONDS // DAY_SECONDS - 1}) or less "
            f"on {_name(source_queue)}"
        )
    yield (
        f"dead_letter_queue {_name(dead_letter_queue)} keeps messages {_days(dlq)}, no longer than "
        f"{label} {_name(source_queue)} ({_days(source)}): a message keeps its first enqueue time in "
        f"a standard DLQ, so SQS would delete it there before it could be re-driven; {fix}"
    )


def _redrive_findings(
    label: str, source_queue: sqs.IQueue, dead_letter_queue: sqs.IQueue, max_receive_count: int
) -> Iterator[str]:
    """A source of this app must dead-letter into ``dead_letter_queue`` (an imported one's redrive
    policy is not visible at synth)."""
    if not isinstance(source_queue, sqs.Queue):
        return
    cfn = source_queue.node.default_child
    assert isinstance(cfn, sqs.CfnQueue)
    target = redrive_target(cfn)
    if target is not None and same_value(cfn, target, dead_letter_queue.queue_arn):
        return
    count = known_max_receive_count(source_queue) or max_receive_count
    write = (
        f"dead_letter_queue=sqs.DeadLetterQueue(queue={_variable(dead_letter_queue)}, "
        f"max_receive_count={count})"
    )
    if target is None:
        yield (
            f"{label} {_name(source_queue)} has no redrive policy, so none of its messages ever reaches "
            f"dead_letter_queue {_name(dead_letter_queue)}: give it one, sqs.Queue(..., {write})"
        )
        return
    behind = construct_behind(target) if isinstance(target, str) else None
    elsewhere = behind.node.path if behind is not None else "another queue"
    that_one = f"dead_letter_queue={_variable(behind) if behind is not None else '...'}"
    yield (
        f"{label} {_name(source_queue)} dead-letters into {elsewhere}, not into dead_letter_queue "
        f"{_name(dead_letter_queue)}: pass {that_one} to the re-driver, or redrive the source into "
        f"this one: sqs.Queue(..., {write})"
    )


def redrive_target(queue: sqs.CfnQueue) -> Any:
    """The deadLetterTargetArn of ``queue``'s redrive policy (a token for a queue of this app, a
    resolved value if the whole policy is a token); None without one."""
    policy = queue.redrive_policy
    if policy is None:
        return None
    if not isinstance(policy, dict):
        policy = Stack.of(queue).resolve(policy)
    return policy.get("deadLetterTargetArn") if isinstance(policy, dict) else None


def _redrives_into(queue: sqs.CfnQueue, dead_letter_queue: sqs.IQueue) -> bool:
    target = redrive_target(queue)
    return target is not None and same_value(queue, target, dead_letter_queue.queue_arn)


def _queues_of(root: IConstruct) -> list[sqs.CfnQueue]:
    return [found for found in root.node.find_all() if isinstance(found, sqs.CfnQueue)]


def _around(cfn: sqs.CfnQueue) -> IConstruct:
    """The L2 queue around ``cfn`` (the one a user names), or ``cfn`` itself."""
    parent = cfn.node.scope
    if parent is not None and parent.node.default_child is not None:
        if parent.node.default_child.node.path == cfn.node.path:
            return parent
    return cfn


def retention_findings(
    margin_seconds: int, dead_letter_queue: sqs.IQueue, dlq_retention: Duration | None, monitoring: bool
) -> Iterator[str]:
    """The DLQ's retention against ``dlq_retention`` and the expiry margin: a margin as long as the
    retention would park every message on sight. An imported queue's retention is not visible here:
    its age alarm counts from ``dlq_retention`` (else SQS's default); without monitoring, the Lambda
    reads the retention at run time."""
    known = known_retention_seconds(dead_letter_queue)
    given = None if dlq_retention is None else int(dlq_retention.to_seconds())
    dlq = _name(dead_letter_queue)
    if known is not None and given is not None and given != known:
        yield (
            f"dlq_retention ({_days(given)}) contradicts the retention of dead_letter_queue {dlq} "
            f"({_days(known)}): omit dlq_retention=, which is for an imported queue"
        )
    if known is None and not monitoring:
        return
    retention = known if known is not None else given or SQS_DEFAULT_RETENTION_SECONDS
    if margin_seconds < retention:
        return
    if known is not None:
        longer = f"a longer retention_period on {dlq}"
    else:
        longer = "for an imported queue, dlq_retention=Duration.days(N), the retention it has"
    yield (
        f"expiry_margin_seconds ({margin_seconds} s: {_days(margin_seconds)}) must be shorter than the "
        f"retention of dead_letter_queue {dlq} ({_days(retention)}): messages are parked from "
        "retention - margin of age on, so every one would be parked on sight; set "
        f"settings=RedriverSettings(expiry_margin_seconds=...) below {retention}, or {longer}"
    )


def parking_lot_findings(
    parking_lot: sqs.IQueue, dead_letter_queue: sqs.IQueue, sources: Sequence[sqs.IQueue]
) -> Iterator[str]:
    """A parking lot the user brings: its own queue, the DLQ's kind, and not weaker than the DLQ."""
    labelled = [("dead_letter_queue", dead_letter_queue), *_labelled_sources(sources)]
    yield from _raised(
        check_distinct_queues,
        [(label, queue.queue_arn) for label, queue in [*labelled, ("parking_lot", parking_lot)]],
    )
    yield from _raised(
        check_queue_kinds, ("dead_letter_queue", dead_letter_queue.fifo), [("parking_lot", parking_lot.fifo)]
    )
    if dead_letter_queue.encryption_master_key is not None and parking_lot.encryption_master_key is None:
        yield (
            "parking_lot must be encrypted with a customer-managed KMS key, as the dead_letter_queue is: "
            "parked messages are the DLQ's, and must not land where a wider audience can read them "
            "(an imported parking lot: sqs.Queue.from_queue_attributes(..., key_arn=...) names its key, "
            "which the function is then granted)"
        )


def state_table_findings(table: dynamodb.ITable) -> Iterator[str]:
    """A table the user brings: a string ``PARTITION_KEY``, no sort key, TTL on ``TTL_ATTRIBUTE``.

    Checked for a table defined in this app (``Table`` or ``TableV2``); an imported table's schema is
    not visible at synth, so the README states the requirement.
    """
    cfn = table.node.default_child
    if not isinstance(cfn, dynamodb.CfnTable | dynamodb.CfnGlobalTable):
        return
    # Resolved to plain values: TableV2 renders its attribute definitions lazily.
    resolve = Stack.of(table).resolve
    keys = [(k["attributeName"], k["keyType"]) for k in resolve(cfn.key_schema)]
    types = {d["attributeName"]: d["attributeType"] for d in resolve(cfn.attribute_definitions) or []}
    if keys != [(PARTITION_KEY, "HASH")] or types.get(PARTITION_KEY) != "S":
        found = ", ".join(f"{key} ({key_type}, {types.get(key)})" for key, key_type in keys)
        yield (
            f"state_table must have the partition key {PARTITION_KEY!r} of type string and no sort key: "
            f"the re-driver keys every record by {PARTITION_KEY!r} alone; this table has {found}"
        )
    ttl = resolve(cfn.time_to_live_specification) or {}
    if ttl.get("attributeName") != TTL_ATTRIBUTE or ttl.get("enabled") is not True:
        yield (
            f"state_table must have time to live enabled on {TTL_ATTRIBUTE!r} (time_to_live_attribute="
            f"{TTL_ATTRIBUTE!r}): the re-driver's records expire by it, or they accumulate"
        )


def _raised(check: Callable[..., None], *args: Any) -> Iterator[str]:
    """The finding ``check`` raises (the schema's checks raise InvalidSetting), if any."""
    try:
        check(*args)
    except InvalidSetting as finding:
        yield str(finding)


def _name(queue: sqs.IQueue) -> str:
    """A queue as a finding names it: its construct path, and its ARN when imported by one."""
    arn = queue.queue_arn
    if isinstance(queue, sqs.Queue) or Token.is_unresolved(arn):
        return queue.node.path
    return f"{queue.node.path} ({arn})"


def _variable(construct: IConstruct) -> str:
    """The Python name a user would likely give ``construct``: its id in snake case."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", construct.node.id)
    return re.sub(r"\W+", "_", words).strip("_").lower() or "queue"


def _days(seconds: int) -> str:
    days = seconds / DAY_SECONDS
    if days.is_integer():
        return f"{int(days)} day{'' if days == 1 else 's'}"
    return f"{days:.2f} days ({seconds} s)"


# --- what the construct cannot be built without ---------------------------------------------------


def check_key_arns(queue_arns: Sequence[str], key_arns: Sequence[str | None]) -> None:
    if key_arns and len(key_arns) != len(queue_arns):
        raise SettingsError(
            f"other_source_queue_key_arns must name one key ARN (or None) per other_source_queue_arns "
            f"entry, in the same order: got {len(key_arns)} for {len(queue_arns)} queues"
        )


def function_options(
    function_props: lambda_.FunctionOptions | Mapping[str, Any] | None, environment: Mapping[str, str]
) -> dict[str, Any]:
    """The props of ``function_props`` that were set, once none is one the construct owns.

    ``environment`` (the construct's own variables): added variables must not replace one of them.
    """
    if function_props is None:
        return {}
    if isinstance(function_props, lambda_.FunctionOptions):
        # A jsii struct keeps the props that were given, by their Python names, in _values.
        given = dict(function_props._values)
    elif isinstance(function_props, Mapping):
        given = dict(function_props)
    else:
        raise SettingsError(
            f"function_props must be a lambda_.FunctionOptions, got {type(function_props).__name__}"
        )
    options = {name: value for name, value in given.items() if value is not None}
    for name in options:
        if name in OWNED_FUNCTION_PROPS:
            raise SettingsError(
                f"function_props.{name} is set by the construct: {OWNED_FUNCTION_PROPS[name]}"
            )
    # A former name of one of them (RENAMED in protocol/settings.py) would be read in its place.
    clashing = sorted(set(options.get("environment", {})) & {*environment, *RENAMED_ENV})
    if clashing:
        raise SettingsError(
            f"function_props.environment must not set the re-driver's own variables {clashing}: "
            "they come from its resources and settings (settings=RedriverSettings(...))"
        )
    return options


def check_consumer(consumer: object) -> None:
    """grant_consumer grants a consumer permissions: it must be something IAM can grant to."""
    if not hasattr(consumer, "grant_principal"):
        raise SettingsError(
            "grant_consumer: function must be a lambda_.Function of this app (its environment and "
            "layers are then set too), or what another consumer runs as (an imported function, an "
            f"ECS task role: any iam.IGrantable), got {type(consumer).__name__}"
        )


def consumer_max_receive_count(queue: sqs.IQueue, explicit: int | None, sources: Sequence[sqs.IQueue]) -> int:
    """The maxReceiveCount of the consumer's ``queue`` (one of ``sources``): its RedrivePolicy's,
    or ``explicit``."""
    if not any(queue is source for source in sources):
        raise SettingsError(
            "grant_consumer: queue must be this re-driver's source_queue or one of its "
            "other_source_queues: only their messages come back through its DLQ"
        )
    known = known_max_receive_count(queue)
    if explicit is None:
        if known is None:
            raise SettingsError(
                "grant_consumer: max_receive_count is required for a queue whose RedrivePolicy "
                "is not defined in this app (an imported queue): pass its maxReceiveCount, "
                f"{MAX_RECEIVE_COUNT.accepts}"
            )
        return known
    with reraise_as(SettingsError):
        checked: int = MAX_RECEIVE_COUNT.check(explicit, "grant_consumer: max_receive_count")
    if known is not None and checked != known:
        raise SettingsError(
            f"grant_consumer: max_receive_count ({checked}) contradicts the queue's "
            f"RedrivePolicy maxReceiveCount ({known}); omit it to use the queue's"
        )
    return checked


def known_max_receive_count(queue: sqs.IQueue) -> int | None:
    """The RedrivePolicy maxReceiveCount of a queue defined in this app; None if not visible."""
    if not isinstance(queue, sqs.Queue) or queue.dead_letter_queue is None:
        return None
    count = queue.dead_letter_queue.max_receive_count
    return None if Token.is_unresolved(count) else int(count)


def known_retention_seconds(queue: sqs.IQueue) -> int | None:
    """The retention of a queue defined in this app; None for imported queues or tokens."""
    if not isinstance(queue, sqs.Queue):
        return None
    cfn = queue.node.default_child
    assert isinstance(cfn, sqs.CfnQueue)
    retention = cfn.message_retention_period
    if retention is None:
        return SQS_DEFAULT_RETENTION_SECONDS
    if Token.is_unresolved(retention):
        return None
    return int(retention)
