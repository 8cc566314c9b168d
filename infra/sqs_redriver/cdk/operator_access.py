"""What the operator's tool may do on one re-driver's resources: one IAM policy (grant_operator)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3

from sqs_redriver.cdk.functions import acknowledge
from sqs_redriver.cdk.key_access import KeyUser, key_statements
from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.protocol.keys import ARCHIVE_PREFIX, EDIT_ARCHIVE_PREFIX

if TYPE_CHECKING:
    from sqs_redriver.cdk.redriver import SqsRedriver

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
OPERATOR_TABLE_ACTIONS = (  # items only: no Scan, no Query
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:PutItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
)
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
        iam.PolicyStatement(
            actions=list(OPERATOR_SOURCE_ACTIONS),
            resources=[queue.queue_arn for queue in redriver.source_queues],
        ),
        iam.PolicyStatement(actions=list(OPERATOR_TABLE_ACTIONS), resources=[redriver.state_table.table_arn]),
        iam.PolicyStatement(
            actions=["cloudformation:DescribeStacks"], resources=[Stack.of(redriver).stack_id]
        ),
        iam.PolicyStatement(actions=list(OPERATOR_METRIC_ACTIONS), resources=["*"]),
        iam.PolicyStatement(
            actions=list(OPERATOR_AUDIT_ACTIONS), resources=[redriver.audit_log.log_group_arn]
        ),
    ]


def _key_statements(redriver: SqsRedriver) -> list[iam.PolicyStatement]:
    """The customer-managed keys of the queues (through SQS), of the table (through DynamoDB) and
    of the archive (through S3), if any."""
    queues = [redriver.dead_letter_queue, redriver.parking_lot, *redriver.source_queues]
    queue_keys = [key for queue in queues if (key := queue.encryption_master_key) is not None]
    table_key = redriver.state_table.encryption_key
    archive_key = redriver.archive.encryption_key if redriver.archive is not None else None
    return [
        *key_statements(queue_keys, OPERATOR_QUEUE_KEY_ACTIONS, KeyUser.SQS),
        *key_statements([table_key] if table_key else [], OPERATOR_DATA_KEY_ACTIONS, KeyUser.DYNAMODB),
        *key_statements([archive_key] if archive_key else [], OPERATOR_ARCHIVE_KEY_ACTIONS, KeyUser.S3),
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
