"""What each principal may do on a re-driver's resources, and no more: the re-drive function, a kit
consumer (``grant_consumer``) and the operator (``grant_operator``), each with explicit actions on
the very resources.

A dead-letter source of another kind (dead_letters.py): the re-drive function may make the one call
that delivers to its target (DELIVERY_ACTIONS), on that target alone, and read the target's
Powertools breaker record; never publish to a subscription's topic nor put events on a rule's bus.

The state table's records: every record's partition key starts with its kind (``BREAKER#``,
``MSG#``...), and the re-driver's own records embed its queue URLs, so ``dynamodb:LeadingKeys``
scopes each grant to the kinds, and where possible the very records, that the code reads or writes
with that operation. A batch operation is checked item by item: a BatchGetItem or BatchWriteItem
with one key outside the list is refused whole. ``ForAllValues`` holds vacuously for a request with
no leading key (Scan, Query), which is why no statement here allows one.

Customer-managed KMS keys: every principal here uses a key only as SQS (a queue's), DynamoDB (the
state table's) or S3 (the archive's) asks it to, so each key statement names its actions and carries
``kms:ViaService``: the grant cannot be used by calling KMS directly (to decrypt other data sealed
under the same key, or to make data keys of one's own), nor through another service. The service's
endpoint is in the key's region, the only one where SQS, DynamoDB and S3 can use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, cast

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs

from sqs_redriver.cdk.consumer import grant_metric_reads
from sqs_redriver.cdk.dead_letters import AttachedSource
from sqs_redriver.cdk.functions import acknowledge
from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.protocol.failure import FAILURE_RECORD_ATTRIBUTES, VERDICT_RECORD_ATTRIBUTES
from sqs_redriver.protocol.keys import (
    ARCHIVE_PREFIX,
    EDIT_ARCHIVE_PREFIX,
    IDENTITY_INDEX,
    PARK_RECORD_PREFIX,
    RETRY_RECORD_PREFIX,
    RecordKind,
    kit_record_prefix,
)
from sqs_redriver.protocol.sources import TargetKind

if TYPE_CHECKING:
    from sqs_redriver.cdk.redriver import SqsRedriver

# --- the re-drive function and a kit consumer -----------------------------------------------------

# What each principal uses of a customer-managed key, and no more: never kms:ReEncrypt*, which
# re-encrypts a ciphertext under another key (nothing here does), nor a wildcard action; and only
# through the service that uses it (grant_key).
QUEUE_SEND_ACTIONS = ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")
QUEUE_SEND_KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")  # SQS's data key for a producer
# What Queue.grant_consume_messages grants, without its unconditioned kms:Decrypt.
QUEUE_CONSUME_ACTIONS = (
    "sqs:ReceiveMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueUrl",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
)
QUEUE_CONSUME_KEY_ACTIONS = ("kms:Decrypt",)
# DynamoDB's table key, used as the caller for each item read or written (Table.grant_read_write_data
# would also grant kms:ReEncrypt* and every GenerateDataKey variant).
TABLE_KEY_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")
ARCHIVE_PUT_KEY_ACTIONS = ("kms:GenerateDataKey",)  # an SSE-KMS PutObject (Decrypt: reads, multipart)
# The one call that delivers a dead letter of another kind back to its target (and what it uses of
# a queue's or a topic's customer-managed key). An unqualified function ARN is what is invoked
# ($LATEST), so it is the resource: no ":*" for the function's versions and aliases.
DELIVERY_ACTIONS = {
    TargetKind.FUNCTION: "lambda:InvokeFunction",
    TargetKind.QUEUE: "sqs:SendMessage",
    TargetKind.TOPIC: "sns:Publish",
    TargetKind.STATE_MACHINE: "states:StartExecution",
    TargetKind.EVENT_BUS: "events:PutEvents",
}
TOPIC_PUBLISH_KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")  # SNS's data key for a publisher
BREAKER_READ_ACTIONS = ("dynamodb:GetItem",)  # the target's Powertools breaker record
BREAKER_KEY_ACTIONS = ("kms:Decrypt",)


def grant_send(function: lambda_.Function, queue: sqs.IQueue) -> None:
    """What ``queue.grant_send_messages`` grants, but for a KMS-encrypted queue only what sending
    uses of its key (grant_send_messages adds kms:Encrypt and kms:ReEncrypt*, which SQS never uses)."""
    queue.grant(function, *QUEUE_SEND_ACTIONS)
    grant_queue_key(function, queue)


def grant_consume(function: lambda_.Function, queue: sqs.IQueue) -> None:
    """What ``queue.grant_consume_messages`` grants, its key's kms:Decrypt through SQS only."""
    queue.grant(function, *QUEUE_CONSUME_ACTIONS)
    if queue.encryption_master_key is not None:
        grant_key(function, queue.encryption_master_key, QUEUE_CONSUME_KEY_ACTIONS, KeyUser.SQS)


def grant_queue_key(grantee: iam.IGrantable, queue: sqs.IQueue) -> None:
    """What a producer of a KMS-encrypted ``queue`` uses of its key; nothing for other queues."""
    if queue.encryption_master_key is not None:
        grant_key(grantee, queue.encryption_master_key, QUEUE_SEND_KEY_ACTIONS, KeyUser.SQS)


def grant_data_keys(
    grantee: iam.IGrantable, *, table: dynamodb.ITable, archive: s3.IBucket | None = None
) -> None:
    """What ``grantee``'s item access to ``table`` and its PutObject to ``archive`` need of their
    customer-managed keys, if they have one."""
    if table.encryption_key is not None:
        grant_key(grantee, table.encryption_key, TABLE_KEY_ACTIONS, KeyUser.DYNAMODB)
    if archive is not None and archive.encryption_key is not None:
        grant_key(grantee, archive.encryption_key, ARCHIVE_PUT_KEY_ACTIONS, KeyUser.S3)


def grant_redrive_function(redriver: SqsRedriver) -> None:
    """Consume the DLQ, send to the sources (or deliver to each dead-letter source's target) and
    the parking lot, use the table's records (no Scan, no Query, no operator record written),
    invoke itself, write the archive and, with ``queue_metrics``, read metrics."""
    function = redriver.function
    grant_consume(function, redriver.dead_letter_queue)
    for queue in [*redriver.source_queues, redriver.parking_lot]:
        grant_send(function, queue)
    for attached in redriver.dead_letter_sources:
        grant_delivery(function, attached)
    addresses = [queue.queue_url for queue in redriver.source_queues]
    addresses += [attached.source.address for attached in redriver.dead_letter_sources]
    for statement in redriver_table_statements(
        redriver.state_table.table_arn,
        redriver.dead_letter_queue.queue_url,
        addresses,
        kit=not redriver.dead_letter_sources,
    ):
        function.add_to_role_policy(statement)
    grant_data_keys(function, table=redriver.state_table, archive=redriver.archive)
    _grant_continuation(redriver)
    if redriver.archive is not None:
        _grant_archive_writes(redriver, redriver.archive)
    if redriver.settings.queue_metrics:
        grant_metric_reads(redriver, function)


def grant_delivery(function: lambda_.Function, attached: AttachedSource) -> None:
    """The one call that delivers to the source's target, on that target; what it uses of the
    target's customer-managed key, through the target's service; and a read of the target's
    breaker record, if it keeps one."""
    source = attached.source
    function.add_to_role_policy(
        iam.PolicyStatement(actions=[DELIVERY_ACTIONS[source.target_kind]], resources=[source.target_arn])
    )
    if attached.target_key is not None and source.target_kind is TargetKind.QUEUE:
        grant_key(function, attached.target_key, QUEUE_SEND_KEY_ACTIONS, KeyUser.SQS)
    if attached.target_key is not None and source.target_kind is TargetKind.TOPIC:
        grant_key(function, attached.target_key, TOPIC_PUBLISH_KEY_ACTIONS, KeyUser.SNS)
    table = attached.breaker_table
    if table is not None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=list(BREAKER_READ_ACTIONS),
                resources=[table.table_arn],
                conditions={"ForAllValues:StringEquals": {LEADING_KEYS: [attached.breaker_key]}},
            )
        )
        if table.encryption_key is not None:
            grant_key(function, table.encryption_key, BREAKER_KEY_ACTIONS, KeyUser.DYNAMODB)


def _grant_continuation(redriver: SqsRedriver) -> None:
    """A run hands over to the next by invoking its own function. A separate policy, not the role's
    default one, which the function depends on (that would be a cycle)."""
    role = redriver.function.role
    assert role is not None, "python_function gives every function a role"
    iam.Policy(
        redriver,
        "ContinuationPolicy",
        roles=[role],
        statements=[
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[redriver.function.function_arn])
        ],
    )


def _grant_archive_writes(redriver: SqsRedriver, archive: s3.IBucket) -> None:
    # PutObject only: grant_put would add tagging, legal hold and retention actions.
    redriver.function.add_to_role_policy(
        iam.PolicyStatement(actions=["s3:PutObject"], resources=[archive.arn_for_objects(ARCHIVE_OBJECTS)])
    )
    role = redriver.function.role
    assert role is not None, "python_function gives every function a role"
    acknowledge(
        role,
        f"AwsSolutions::AwsSolutions-IAM5[Resource::<{archive_logical_id(redriver)}.Arn>/{ARCHIVE_OBJECTS}]",
        "One object per parked message under a key the function makes up at run time "
        "(source, date, identity, message id): PutObject on the archive's parked/ prefix only.",
    )


def grant_kit_consumer(
    consumer: iam.IGrantable, *, dead_letter_queue: sqs.IQueue, state_table: dynamodb.ITable
) -> None:
    """What the consumer kit does: send to the DLQ, and update its own records of the state table
    (those of this DLQ's re-driver: their keys start with the DLQ's URL).

    Raises SettingsError for a consumer that cannot hold a policy (a service or account principal:
    grant a role it assumes)."""
    statement = consumer_table_statement(state_table.table_arn, dead_letter_queue.queue_url)
    added = consumer.grant_principal.add_to_principal_policy(statement)
    if not added.statement_added:
        raise SettingsError(
            f"grant_consumer: {type(consumer.grant_principal).__name__} cannot hold a policy: grant the "
            "role, user or group the consumer runs as"
        )
    # Only SendMessage (grant_send_messages adds GetQueueAttributes and GetQueueUrl, which the
    # kit never calls: it has the URL), and what sending needs of a KMS-encrypted DLQ's key.
    dead_letter_queue.grant(consumer, "sqs:SendMessage")
    grant_queue_key(consumer, dead_letter_queue)
    grant_data_keys(consumer, table=state_table)


# --- the operator: one IAM policy per grant_operator ----------------------------------------------

ARCHIVE_OBJECTS = f"{ARCHIVE_PREFIX}/*"  # the only objects the re-driver writes (and the operator reads)
EDITED_OBJECTS = f"{EDIT_ARCHIVE_PREFIX}/*"  # the originals of edited messages: the operator writes them
# What the operator's tool calls (grant_operator): nothing else, no wildcard actions.
OPERATOR_DATA_KEY_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")
# Decrypt to receive, GenerateDataKey to send: what SQS asks of the caller's key access.
OPERATOR_QUEUE_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
# Decrypt to read an archived message, GenerateDataKey to archive an edited one's original.
OPERATOR_ARCHIVE_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
OPERATOR_QUEUE_ACTIONS = (  # on the DLQ and the parking lot
    "sqs:ReceiveMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:SendMessage",
    "sqs:GetQueueAttributes",
)
OPERATOR_SOURCE_ACTIONS = ("sqs:SendMessage", "sqs:GetQueueAttributes")
OPERATOR_TABLE_ACTIONS = (  # items only: no Scan, no Query of the table
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:PutItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
)
# On the identity index alone (keys only): a dead letter's trips, for `outcome`.
OPERATOR_INDEX_ACTIONS = ("dynamodb:Query",)
OPERATOR_METRIC_ACTIONS = ("cloudwatch:GetMetricStatistics",)
# The audit trail: append (a stream per session) and read; never delete or change retention.
OPERATOR_AUDIT_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents", "logs:FilterLogEvents")


def attach_operator_policy(redriver: SqsRedriver, principal: iam.IGrantable) -> None:
    """The policy ``SqsRedriver.grant_operator`` describes, attached to ``principal``."""
    statements = [
        *_resource_statements(redriver),
        *_key_statements(redriver),
        *(_archive_statements(redriver.archive) if redriver.archive is not None else []),
    ]
    taken = sum(1 for child in redriver.node.children if child.node.id.startswith("OperatorPolicy"))
    policy = iam.Policy(redriver, f"OperatorPolicy{taken + 1}", statements=statements)
    _attach(policy, principal.grant_principal)
    acknowledge(
        policy,
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        "cloudwatch:GetMetricStatistics supports no resource-level permissions; "
        "every other statement of the operator's policy names its resource.",
    )
    acknowledge(
        policy,
        f"AwsSolutions::AwsSolutions-IAM5[Resource::<{audit_log_logical_id(redriver)}.Arn>:*]",
        "The operator's tool appends to the audit log group's streams (one per session, named at run "
        "time) and reads them: CreateLogStream, PutLogEvents and FilterLogEvents on that group only.",
    )
    if redriver.archive is not None:
        acknowledge(
            policy,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::<{archive_logical_id(redriver)}.Arn>/{ARCHIVE_OBJECTS}]",
            "The operator reads parked messages from the archive, one object each under keys made "
            "up at run time: GetObject on the parked/ prefix only.",
        )
        acknowledge(
            policy,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::<{archive_logical_id(redriver)}.Arn>/{EDITED_OBJECTS}]",
            "The operator's tool archives the original of each message it edits before sending the "
            "edit, one object each under keys made up at run time: PutObject and GetObject on the "
            "edited/ prefix only.",
        )


def _resource_statements(redriver: SqsRedriver) -> list[iam.PolicyStatement]:
    """The queues, the table's items, the stack's outputs, the metrics and the audit trail."""
    queues = [redriver.dead_letter_queue, redriver.parking_lot]
    return [
        iam.PolicyStatement(
            actions=list(OPERATOR_QUEUE_ACTIONS), resources=[queue.queue_arn for queue in queues]
        ),
        *(
            [
                iam.PolicyStatement(
                    actions=list(OPERATOR_SOURCE_ACTIONS),
                    resources=[queue.queue_arn for queue in redriver.source_queues],
                )
            ]
            if redriver.source_queues  # a re-driver of dead letters of another kind has none
            else []
        ),
        # A replay or an edit of a dead letter of another kind delivers to its source's one target.
        *(
            iam.PolicyStatement(
                actions=[DELIVERY_ACTIONS[attached.source.target_kind]],
                resources=[attached.source.target_arn],
            )
            for attached in redriver.dead_letter_sources
        ),
        iam.PolicyStatement(actions=list(OPERATOR_TABLE_ACTIONS), resources=[redriver.state_table.table_arn]),
        iam.PolicyStatement(
            actions=list(OPERATOR_INDEX_ACTIONS), resources=[identity_index_arn(redriver.state_table)]
        ),
        iam.PolicyStatement(
            actions=["cloudformation:DescribeStacks"], resources=[Stack.of(redriver).stack_id]
        ),
        iam.PolicyStatement(actions=list(OPERATOR_METRIC_ACTIONS), resources=["*"]),
        iam.PolicyStatement(
            actions=list(OPERATOR_AUDIT_ACTIONS), resources=[redriver.audit_log.log_group_arn]
        ),
    ]


def identity_index_arn(table: dynamodb.ITable) -> str:
    """The ARN of the state table's identity index (``IDENTITY_INDEX``)."""
    return f"{table.table_arn}/index/{IDENTITY_INDEX}"


def _key_statements(redriver: SqsRedriver) -> list[iam.PolicyStatement]:
    """The customer-managed keys of the queues (through SQS), of the table (through DynamoDB) and
    of the archive (through S3), if any."""
    queues = [redriver.dead_letter_queue, redriver.parking_lot, *redriver.source_queues]
    queue_keys = [key for queue in queues if (key := queue.encryption_master_key) is not None]
    table_key = redriver.state_table.encryption_key
    archive_key = redriver.archive.encryption_key if redriver.archive is not None else None
    return [
        *key_statements(queue_keys, OPERATOR_QUEUE_KEY_ACTIONS, KeyUser.SQS),
        *key_statements(_target_keys(redriver, TargetKind.QUEUE), QUEUE_SEND_KEY_ACTIONS, KeyUser.SQS),
        *key_statements(_target_keys(redriver, TargetKind.TOPIC), TOPIC_PUBLISH_KEY_ACTIONS, KeyUser.SNS),
        *key_statements([table_key] if table_key else [], OPERATOR_DATA_KEY_ACTIONS, KeyUser.DYNAMODB),
        *key_statements([archive_key] if archive_key else [], OPERATOR_ARCHIVE_KEY_ACTIONS, KeyUser.S3),
    ]


def _target_keys(redriver: SqsRedriver, kind: TargetKind) -> list[kms.IKey]:
    """The customer-managed keys of the targets of this kind a replay delivers to."""
    return [
        attached.target_key
        for attached in redriver.dead_letter_sources
        if attached.target_key is not None and attached.source.target_kind is kind
    ]


def _archive_statements(archive: s3.IBucket) -> list[iam.PolicyStatement]:
    """Reading the archived messages (parked, and originals of edits), listing their prefixes, and
    archiving the original of a message before its edit is sent."""
    prefixes = [ARCHIVE_OBJECTS, EDITED_OBJECTS]
    return [
        iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[archive.arn_for_objects(prefix) for prefix in prefixes]
        ),
        iam.PolicyStatement(actions=["s3:PutObject"], resources=[archive.arn_for_objects(EDITED_OBJECTS)]),
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[archive.bucket_arn],
            conditions={"StringLike": {"s3:prefix": prefixes}},
        ),
    ]


def _attach(policy: iam.Policy, identity: iam.IPrincipal) -> None:
    """Attach ``policy`` to the role, user or group ``identity`` is."""
    # jsii interfaces cannot be isinstance-checked: tell the identities apart by their names (and
    # cast, which mypy cannot narrow from hasattr).
    if hasattr(identity, "role_name"):
        policy.attach_to_role(cast(iam.IRole, identity))
    elif hasattr(identity, "user_name"):
        policy.attach_to_user(cast(iam.IUser, identity))
    elif hasattr(identity, "group_name"):
        policy.attach_to_group(cast(iam.IGroup, identity))
    else:
        raise SettingsError(
            "grant_operator: principal must be an IAM role, user or group (or hold one, like a "
            f"function), got {type(identity).__name__}: grant a role it assumes instead"
        )


def audit_log_logical_id(redriver: SqsRedriver) -> str:
    """The audit log group's logical id, as cdk-nag names it in findings."""
    cfn_group = redriver.audit_log.node.default_child
    assert isinstance(cfn_group, logs.CfnLogGroup)
    return Stack.of(redriver).get_logical_id(cfn_group)


def archive_logical_id(redriver: SqsRedriver) -> str:
    """The archive bucket's logical id, as cdk-nag names it in findings."""
    assert redriver.archive is not None
    cfn_bucket = redriver.archive.node.default_child
    assert isinstance(cfn_bucket, s3.CfnBucket)
    return Stack.of(redriver).get_logical_id(cfn_bucket)


# --- the state table's records, by their keys -----------------------------------------------------

MESSAGE_RECORD_PREFIX = RecordKind.MESSAGE.value
LEADING_KEYS = "dynamodb:LeadingKeys"
# What the consumer kit writes (sqs_redriver.kit.aws): conditional UpdateItems of its own records,
# each kind's keys scoped to the re-driver's DLQ (kit_record_key).
CONSUMER_RECORD_KINDS = (RecordKind.VERDICTS, RecordKind.FAILURE)
CONSUMER_TABLE_ACTIONS = ("dynamodb:UpdateItem",)
CONSUMER_ATTRIBUTES = tuple(sorted(set(FAILURE_RECORD_ATTRIBUTES) | set(VERDICT_RECORD_ATTRIBUTES)))


@dataclass(frozen=True)
class TableAccess:
    """One operation on the records whose keys match ``keys`` (IAM StringLike patterns)."""

    action: str
    keys: tuple[str, ...]


def redriver_table_access(
    dlq_url: str, source_addresses: Sequence[str], *, kit: bool = True
) -> tuple[TableAccess, ...]:
    """Each operation the re-drive function makes, on exactly the records it makes it on.

    ``source_addresses``: what names each source's breaker: a source queue's URL, a dead-letter
    source's address (DeadLetterSource.address). ``kit``: its consumers may run the kit (an SQS
    consumer's DLQ); a re-driver of dead letters of another kind reads no kit record.

    Its own records (breakers, sweep, run history, held groups, continuation slot, a large drain's
    record, the operator's pause, one SQS source's growth baseline) by their full keys, its large
    drains' worker leases and its idempotency records (Powertools: get, conditional put, update,
    delete) and the kit's records of its own DLQ by their prefix; message records and the
    operator's group records by kind. It never writes an operator record (PAUSE#, RETRY#, PARK#)
    nor a kit record (VERDICTS#, FAILURE#).
    """
    breakers = tuple(RecordKind.BREAKER.key(address) for address in source_addresses)
    own = (
        *breakers,
        RecordKind.SWEEP.key(dlq_url),
        RecordKind.RUNS.key(dlq_url),
        RecordKind.HELD.key(dlq_url),
    )
    continuation = RecordKind.CONTINUATION.key(dlq_url)
    idempotency = f"{RecordKind.IDEMPOTENCY.key(dlq_url)}#*"
    pause, drain, workers = (
        RecordKind.PAUSE.key(dlq_url),
        RecordKind.DRAIN.key(dlq_url),
        f"{RecordKind.WORKER.key(dlq_url)}#*",
    )
    verdicts = (f"{kit_record_prefix(RecordKind.VERDICTS, dlq_url)}*",) if kit else ()
    # the growth baseline of a re-driver of one SQS source (core/source_growth.py), by its URL
    watched = kit and len(source_addresses) == 1
    baselines = (RecordKind.BACKLOG.key(source_addresses[0]),) if watched else ()
    failures = (f"{kit_record_prefix(RecordKind.FAILURE, dlq_url)}*",) if kit else ()
    return (
        TableAccess("dynamodb:GetItem", (*own, pause, drain, *baselines, *verdicts, idempotency)),
        TableAccess("dynamodb:PutItem", (*own, continuation, drain, *baselines, workers, idempotency)),
        TableAccess("dynamodb:UpdateItem", (idempotency,)),
        TableAccess("dynamodb:DeleteItem", (continuation, workers, idempotency)),
        TableAccess(
            "dynamodb:BatchGetItem",
            (
                f"{MESSAGE_RECORD_PREFIX}*",
                *failures,
                f"{RETRY_RECORD_PREFIX}*",
                f"{PARK_RECORD_PREFIX}*",
                # the held groups, read with the batch's group marks (runtime/held.py)
                RecordKind.HELD.key(dlq_url),
                # what a large drain's worker checks before each batch (runtime/workers.py)
                *breakers,
                pause,
                drain,
                *verdicts,
            ),
        ),
        TableAccess("dynamodb:BatchWriteItem", (f"{MESSAGE_RECORD_PREFIX}*",)),
    )


def redriver_table_statements(
    table_arn: str, dlq_url: str, source_addresses: Sequence[str], *, kit: bool = True
) -> list[iam.PolicyStatement]:
    """One statement per operation of ``redriver_table_access``, on ``table_arn`` alone."""
    return [
        iam.PolicyStatement(
            actions=[access.action],
            resources=[table_arn],
            conditions={"ForAllValues:StringLike": {LEADING_KEYS: list(access.keys)}},
        )
        for access in redriver_table_access(dlq_url, source_addresses, kit=kit)
    ]


def consumer_table_keys(dlq_url: str) -> tuple[str, ...]:
    """The keys a kit consumer of the re-driver of ``dlq_url`` may update (IAM StringLike patterns)."""
    return tuple(f"{kit_record_prefix(kind, dlq_url)}*" for kind in CONSUMER_RECORD_KINDS)


def consumer_table_statement(table_arn: str, dlq_url: str) -> iam.PolicyStatement:
    """UpdateItem of the kit's verdict and failure records of the re-driver of ``dlq_url``, of the
    kit's attributes only, returning nothing: no read, no other record (another re-driver's on a
    shared table neither), no wholesale put."""
    return iam.PolicyStatement(
        actions=list(CONSUMER_TABLE_ACTIONS),
        resources=[table_arn],
        conditions={
            "ForAllValues:StringLike": {LEADING_KEYS: list(consumer_table_keys(dlq_url))},
            "ForAllValues:StringEquals": {"dynamodb:Attributes": list(CONSUMER_ATTRIBUTES)},
            "StringEqualsIfExists": {"dynamodb:ReturnValues": ["NONE"]},
        },
    )


# --- customer-managed keys, through the service that uses them ------------------------------------

VIA_SERVICE = "kms:ViaService"


class KeyUser(StrEnum):
    """The services that use a key on a principal's behalf (their endpoint's first label)."""

    SQS = "sqs"
    SNS = "sns"
    DYNAMODB = "dynamodb"
    S3 = "s3"


def via_service(key: kms.IKey, service: KeyUser) -> str:
    """``service``'s endpoint in ``key``'s region, as ``kms:ViaService`` names it."""
    return f"{service.value}.{key.env.region}.{Stack.of(key).url_suffix}"


def key_statements(
    keys: Iterable[kms.IKey], actions: Sequence[str], service: KeyUser
) -> list[iam.PolicyStatement]:
    """``actions`` on ``keys`` through ``service`` only: one statement per region the keys are in."""
    by_endpoint: dict[str, list[str]] = {}
    for key in keys:
        arns = by_endpoint.setdefault(via_service(key, service), [])
        if key.key_arn not in arns:
            arns.append(key.key_arn)
    return [
        iam.PolicyStatement(
            actions=list(actions), resources=arns, conditions={"StringEquals": {VIA_SERVICE: endpoint}}
        )
        for endpoint, arns in by_endpoint.items()
    ]


def grant_key(grantee: iam.IGrantable, key: kms.IKey, actions: Sequence[str], service: KeyUser) -> None:
    """Let ``grantee`` use ``key`` for ``actions`` through ``service`` only (in its own policy: the
    key policy of a key made by the CDK already delegates to the account's IAM policies)."""
    for statement in key_statements([key], actions, service):
        grantee.grant_principal.add_to_principal_policy(statement)
