"""What SqsRedriver takes from its user, checked at synth: keys, an own parking lot, table, function props.

Each check raises SettingsError naming the construct prop at fault, like the settings do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.protocol.settings.kinds import reraise_as
from sqs_redriver.protocol.settings.rules import check_distinct_queues, check_queue_kinds

# What each principal uses of a customer-managed key, and no more: never kms:ReEncrypt*, which
# re-encrypts a ciphertext under another key (nothing here does), nor a wildcard action.
QUEUE_SEND_ACTIONS = ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")
QUEUE_SEND_KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")  # SQS's data key for a producer
# DynamoDB's table key, used as the caller for each item read or written (Table.grant_read_write_data
# would also grant kms:ReEncrypt* and every GenerateDataKey variant).
TABLE_KEY_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")
ARCHIVE_PUT_KEY_ACTIONS = ("kms:GenerateDataKey",)  # an SSE-KMS PutObject (Decrypt: reads, multipart)
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
    "reserved_concurrent_executions": "is 1: the breaker and the counts assume one run at a time",
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


def grant_send(function: lambda_.Function, queue: sqs.IQueue) -> None:
    """What ``queue.grant_send_messages`` grants, but for a KMS-encrypted queue only what sending
    uses of its key (grant_send_messages adds kms:Encrypt and kms:ReEncrypt*, which SQS never uses)."""
    queue.grant(function, *QUEUE_SEND_ACTIONS)
    grant_queue_key(function, queue)


def grant_queue_key(function: lambda_.Function, queue: sqs.IQueue) -> None:
    """What a producer of a KMS-encrypted ``queue`` uses of its key; nothing for other queues."""
    if queue.encryption_master_key is not None:
        queue.encryption_master_key.grant(function, *QUEUE_SEND_KEY_ACTIONS)


def grant_data_keys(
    function: lambda_.Function, *, table: dynamodb.ITable, archive: s3.IBucket | None = None
) -> None:
    """What ``function``'s item access to ``table`` and its PutObject to ``archive`` need of their
    customer-managed keys, if they have one."""
    if table.encryption_key is not None:
        table.encryption_key.grant(function, *TABLE_KEY_ACTIONS)
    if archive is not None and archive.encryption_key is not None:
        archive.encryption_key.grant(function, *ARCHIVE_PUT_KEY_ACTIONS)


def import_queue(scope: Construct, construct_id: str, arn: str, key_arn: str | None) -> sqs.IQueue:
    """An existing queue by ARN; with its KMS key's ARN, every queue grant also grants the key."""
    return sqs.Queue.from_queue_attributes(scope, construct_id, queue_arn=arn, key_arn=key_arn)


def check_key_arns(queue_arns: Sequence[str], key_arns: Sequence[str | None]) -> None:
    if key_arns and len(key_arns) != len(queue_arns):
        raise SettingsError(
            f"other_source_queue_key_arns must name one key ARN (or None) per other_source_queue_arns "
            f"entry, in the same order: got {len(key_arns)} for {len(queue_arns)} queues"
        )


def data_key(encryption_key: kms.IKey | None, dead_letter_queue: sqs.IQueue) -> kms.IKey | None:
    """The key of what the construct creates: ``encryption_key``, else the DLQ's own customer-managed
    key (its messages must not land where a wider audience can read them), else None."""
    return encryption_key or dead_letter_queue.encryption_master_key


def check_parking_lot(
    parking_lot: sqs.IQueue, dead_letter_queue: sqs.IQueue, sources: Sequence[sqs.IQueue]
) -> None:
    """A parking lot the user brings: its own queue, the DLQ's kind, and not weaker than the DLQ."""
    labelled = [("dead_letter_queue", dead_letter_queue), ("source_queue", sources[0])]
    labelled += [(f"other_source_queues[{index}]", queue) for index, queue in enumerate(sources[1:])]
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
    clashing = sorted(set(options.get("environment", {})) & set(environment))
    if clashing:
        raise SettingsError(
            f"function_props.environment must not set the re-driver's own variables {clashing}: "
            "they come from its resources and settings (settings=RedriverSettings(...))"
        )
    return options
