"""What SqsRedriver takes from its user, checked at synth: queues, keys, an own parking lot and table,
function props, a consumer to grant; and the state table's layout, which a table the user brings is
checked against and the construct's own table is built with (storage.py).

Each check raises SettingsError naming the construct prop (or grant_consumer's parameter) at fault,
like the settings do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Stack, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.protocol.limits import SQS_DEFAULT_RETENTION_SECONDS
from sqs_redriver.protocol.settings import (
    BY_NAME,
    RENAMED_ENV,
    check_distinct_queues,
    check_queue_kinds,
    reraise_as,
)

MAX_RECEIVE_COUNT = BY_NAME["max_receive_count"]
# The state table's layout: the one the construct builds (storage.build_state_table) has it, and a
# table the user brings must have it too (check_state_table).
PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"
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


def check_props(
    settings: RedriverSettings,
    sources: Sequence[sqs.IQueue],
    dead_letter_queue: sqs.IQueue,
    *,
    parking_lot: sqs.IQueue | None,
    state_table: dynamodb.ITable | None,
) -> None:
    """What the construct can check before it builds anything: the queues, the expiry margin
    against the DLQ's retention, and the parking lot and table a user brings. ``sources``: the
    source queues, none for a DLQ of another kind (dead_letters.py checks its sources)."""
    if sources:
        check_queues(sources, dead_letter_queue)
    check_expiry_margin(settings.expiry_margin_seconds, dead_letter_queue)
    if parking_lot is not None:
        check_parking_lot(parking_lot, dead_letter_queue, sources)
    if state_table is not None:
        check_state_table(state_table, partition_key=PARTITION_KEY, ttl_attribute=TTL_ATTRIBUTE)


def check_queues(sources: Sequence[sqs.IQueue], dead_letter_queue: sqs.IQueue) -> None:
    """The schema's queue rules (each queue in one role, all of one kind), then the CDK-only ones."""
    labelled = _labelled_sources(sources)
    dlq = ("dead_letter_queue", dead_letter_queue)
    with reraise_as(SettingsError):
        # A queue's ARN token is the same string for the same queue; an imported queue's ARN is literal.
        check_distinct_queues([(label, queue.queue_arn) for label, queue in [dlq, *labelled]])
        check_queue_kinds(
            (dlq[0], dead_letter_queue.fifo), [(label, queue.fifo) for label, queue in labelled]
        )
    for label, queue in labelled:
        _check_source(label, queue, dead_letter_queue)


def _labelled_sources(sources: Sequence[sqs.IQueue]) -> list[tuple[str, sqs.IQueue]]:
    """Each source queue with the prop that names it (none for a DLQ of another kind)."""
    return [
        ("source_queue" if index == 0 else f"other_source_queues[{index - 1}]", queue)
        for index, queue in enumerate(sources)
    ]


def _check_source(label: str, source_queue: sqs.IQueue, dead_letter_queue: sqs.IQueue) -> None:
    source_retention = known_retention_seconds(source_queue)
    dlq_retention = known_retention_seconds(dead_letter_queue)
    standard = not dead_letter_queue.fifo  # a FIFO DLQ restarts the retention clock on arrival
    if (
        standard
        and source_retention is not None
        and dlq_retention is not None
        and dlq_retention <= source_retention
    ):
        raise SettingsError(
            f"dead_letter_queue retention ({dlq_retention} s) must be longer than {label} "
            f"retention ({source_retention} s): a standard queue's message keeps its original "
            "enqueue time in the DLQ, so a shorter retention deletes it before it can be re-driven"
        )
    if isinstance(source_queue, sqs.Queue) and source_queue.dead_letter_queue is not None:
        if source_queue.dead_letter_queue.queue is not dead_letter_queue:
            raise SettingsError(f"{label}'s RedrivePolicy points to a different dead_letter_queue")


def check_expiry_margin(margin_seconds: int, dead_letter_queue: sqs.IQueue) -> None:
    """A margin as long as the DLQ's retention would park every message on sight (an imported
    queue's retention is unknown here: the Lambda reads it at run time)."""
    retention = known_retention_seconds(dead_letter_queue)
    if retention is not None and margin_seconds >= retention:
        raise SettingsError(
            f"expiry_margin_seconds ({margin_seconds}) must be shorter than the dead_letter_queue's "
            f"retention ({retention} s): messages are parked from retention - margin of age on"
        )


def check_key_arns(queue_arns: Sequence[str], key_arns: Sequence[str | None]) -> None:
    if key_arns and len(key_arns) != len(queue_arns):
        raise SettingsError(
            f"other_source_queue_key_arns must name one key ARN (or None) per other_source_queue_arns "
            f"entry, in the same order: got {len(key_arns)} for {len(queue_arns)} queues"
        )


def check_parking_lot(
    parking_lot: sqs.IQueue, dead_letter_queue: sqs.IQueue, sources: Sequence[sqs.IQueue]
) -> None:
    """A parking lot the user brings: its own queue, the DLQ's kind, and not weaker than the DLQ."""
    labelled = [("dead_letter_queue", dead_letter_queue), *_labelled_sources(sources)]
    with reraise_as(SettingsError):
        check_distinct_queues(
            [(label, queue.queue_arn) for label, queue in [*labelled, ("parking_lot", parking_lot)]]
        )
        check_queue_kinds(("dead_letter_queue", dead_letter_queue.fifo), [("parking_lot", parking_lot.fifo)])
    if dead_letter_queue.encryption_master_key is not None and parking_lot.encryption_master_key is None:
        raise SettingsError(
            "parking_lot must be encrypted with a customer-managed KMS key, as the dead_letter_queue is: "
            "parked messages are the DLQ's, and must not land where a wider audience can read them "
            "(an imported parking lot: sqs.Queue.from_queue_attributes(..., key_arn=...) names its key, "
            "which the function is then granted)"
        )


def check_state_table(table: dynamodb.ITable, *, partition_key: str, ttl_attribute: str) -> None:
    """A table the user brings: a string ``partition_key``, no sort key, TTL on ``ttl_attribute``.

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
    if keys != [(partition_key, "HASH")] or types.get(partition_key) != "S":
        found = ", ".join(f"{key} ({key_type}, {types.get(key)})" for key, key_type in keys)
        raise SettingsError(
            f"state_table must have the partition key {partition_key!r} of type string and no sort key: "
            f"the re-driver keys every record by {partition_key!r} alone; this table has {found}"
        )
    ttl = resolve(cfn.time_to_live_specification) or {}
    if ttl.get("attributeName") != ttl_attribute or ttl.get("enabled") is not True:
        raise SettingsError(
            f"state_table must have time to live enabled on {ttl_attribute!r} (time_to_live_attribute="
            f"{ttl_attribute!r}): the re-driver's records expire by it, or they accumulate"
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
