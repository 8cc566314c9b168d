"""What the re-drive function and a kit consumer may do, and no more: explicit actions on the very
resources (the state table's records are scoped in table_access.py, the operator's in
operator_access.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs

from sqs_redriver.cdk.consumer_metrics import grant_metric_reads
from sqs_redriver.cdk.functions import acknowledge
from sqs_redriver.cdk.key_access import KeyUser, grant_key
from sqs_redriver.cdk.operator_access import ARCHIVE_OBJECTS, archive_logical_id
from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.cdk.table_access import consumer_table_statement, redriver_table_statements

if TYPE_CHECKING:
    from sqs_redriver.cdk.redriver import SqsRedriver

# What each principal uses of a customer-managed key, and no more: never kms:ReEncrypt*, which
# re-encrypts a ciphertext under another key (nothing here does), nor a wildcard action; and only
# through the service that uses it (key_access.py).
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
    """Consume the DLQ, send to the sources and the parking lot, use the table's records (no Scan,
    no Query, no operator record written), invoke itself, write the archive and, with
    ``queue_metrics``, read metrics."""
    function = redriver.function
    grant_consume(function, redriver.dead_letter_queue)
    for queue in [*redriver.source_queues, redriver.parking_lot]:
        grant_send(function, queue)
    for statement in redriver_table_statements(
        redriver.state_table.table_arn,
        redriver.dead_letter_queue.queue_url,
        [queue.queue_url for queue in redriver.source_queues],
    ):
        function.add_to_role_policy(statement)
    grant_data_keys(function, table=redriver.state_table, archive=redriver.archive)
    _grant_continuation(redriver)
    if redriver.archive is not None:
        _grant_archive_writes(redriver, redriver.archive)
    if redriver.settings.queue_metrics:
        grant_metric_reads(redriver, function)


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
    """What the consumer kit does: send to the DLQ, and update its own records of the state table.

    Raises SettingsError for a consumer that cannot hold a policy (a service or account principal:
    grant a role it assumes)."""
    added = consumer.grant_principal.add_to_principal_policy(consumer_table_statement(state_table.table_arn))
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
