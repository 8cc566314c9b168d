"""Where a re-driver keeps what it parks, what it remembers and what its operators did: the parking
lot, the archive bucket, the state table and the audit trail; the project's secure defaults for
queues, tables and buckets, which they are made with; and the queues a re-driver is attached to by ARN.

The audit trail is a CloudWatch Logs log group the operator's tool appends to (two events per
action: begun and ended; see the console's audit.py), kept for ``audit_retention``. Logs rather than
the state table: an operator who may write the table (pause, group records) could rewrite a record
there, but may only append to a log group (no DeleteLogEvents exists, and the operator's policy
grants no DeleteLogGroup or retention change).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sqs_redriver.cdk.functions import acknowledge
from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.cdk.validation import PARTITION_KEY, TTL_ATTRIBUTE
from sqs_redriver.protocol.keys import IDENTITY_ATTRIBUTE, IDENTITY_INDEX

PARKING_LOT_RETENTION = Duration.days(14)
ARCHIVE_EXPIRATION = Duration.days(365)
AUDIT_RETENTION = Duration.days(365)
# The retention periods CloudWatch Logs offers, in days.
RETENTION_DAYS = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
    2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}

# --- the project's secure defaults ----------------------------------------------------------------


def secure_queue(
    scope: Construct, construct_id: str, *, encryption_key: kms.IKey | None = None, **props: Any
) -> sqs.Queue:
    """A queue that refuses requests not made over TLS, encrypted with ``encryption_key`` (SSE-KMS)
    when given, SQS-managed encryption otherwise; ``props``: further ``sqs.Queue`` props."""
    return sqs.Queue(
        scope,
        construct_id,
        enforce_ssl=True,
        encryption=sqs.QueueEncryption.KMS if encryption_key is not None else sqs.QueueEncryption.SQS_MANAGED,
        encryption_master_key=encryption_key,
        **props,
    )


def secure_table(
    scope: Construct,
    construct_id: str,
    *,
    partition_key: str,
    ttl_attribute: str,
    removal_policy: RemovalPolicy,
    encryption_key: kms.IKey | None = None,
) -> dynamodb.Table:
    """An on-demand table with a string partition key, TTL, point-in-time recovery and encryption
    (with ``encryption_key`` when given, an AWS-managed key otherwise)."""
    return dynamodb.Table(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        time_to_live_attribute=ttl_attribute,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED
        if encryption_key is not None
        else dynamodb.TableEncryption.AWS_MANAGED,
        encryption_key=encryption_key,
        removal_policy=removal_policy,
    )


def secure_bucket(
    scope: Construct,
    construct_id: str,
    *,
    expiration: Duration | None,
    removal_policy: RemovalPolicy,
    encryption_key: kms.IKey | None = None,
) -> s3.Bucket:
    """A private bucket, TLS only, encrypted with ``encryption_key`` (SSE-KMS with an S3 Bucket Key,
    one KMS call per bucket key rather than per object) when given, S3-managed keys otherwise;
    objects deleted ``expiration`` after they were written (None: kept)."""
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.KMS if encryption_key is not None else s3.BucketEncryption.S3_MANAGED,
        encryption_key=encryption_key,
        bucket_key_enabled=True if encryption_key is not None else None,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        lifecycle_rules=[s3.LifecycleRule(expiration=expiration)] if expiration else None,
        removal_policy=removal_policy,
    )


# --- a re-driver's stores -------------------------------------------------------------------------


def data_key(encryption_key: kms.IKey | None, dead_letter_queue: sqs.IQueue) -> kms.IKey | None:
    """The key of what the construct creates: ``encryption_key``, else the DLQ's own customer-managed
    key (its messages must not land where a wider audience can read them), else None."""
    return encryption_key or dead_letter_queue.encryption_master_key


def build_parking_lot(
    scope: Construct, dead_letter_queue: sqs.IQueue, key: kms.IKey | None, removal_policy: RemovalPolicy
) -> sqs.Queue:
    """The terminal queue of poison messages (``ParkingLot``), of the DLQ's kind."""
    parking_lot = secure_queue(
        scope,
        "ParkingLot",
        retention_period=PARKING_LOT_RETENTION,
        removal_policy=removal_policy,
        # FIFO poison keeps its group: a FIFO DLQ parks into a FIFO parking lot.
        fifo=dead_letter_queue.fifo or None,
        encryption_key=key,
    )
    for rule_id in ("AwsSolutions::AwsSolutions-SQS3", "Serverless::Serverless-SQSRedrivePolicy"):
        acknowledge(
            parking_lot,
            rule_id,
            "The parking lot is the terminal queue for poison messages; nothing consumes it "
            "automatically, so a DLQ behind it would never receive anything. Messages are "
            "kept 14 days for inspection.",
        )
    return parking_lot


def build_archive_bucket(
    scope: Construct, expiration: Duration | None, removal_policy: RemovalPolicy, key: kms.IKey | None
) -> s3.Bucket:
    """The bucket (``Archive``) that keeps a copy of every parked message, one object each."""
    bucket = secure_bucket(
        scope, "Archive", expiration=expiration, removal_policy=removal_policy, encryption_key=key
    )
    acknowledge(
        bucket,
        "AwsSolutions::AwsSolutions-S1",
        "Only the re-drive function writes here (one PutObject per parked message) and people "
        "read it when investigating; CloudTrail records who did what. Access logs would need a "
        "second bucket that holds more noise than the archive itself.",
    )
    return bucket


def build_state_table(
    scope: Construct, key: kms.IKey | None, removal_policy: RemovalPolicy
) -> dynamodb.Table:
    """The table (``StateTable``) of the breakers, message records and operator records, with the
    identity index: each message record's key under its identity, how the operator's tool finds a
    dead letter's trips (keys only: one more write unit per message record created or deleted)."""
    table = secure_table(
        scope,
        "StateTable",
        partition_key=PARTITION_KEY,
        ttl_attribute=TTL_ATTRIBUTE,
        removal_policy=removal_policy,
        encryption_key=key,
    )
    table.add_global_secondary_index(
        index_name=IDENTITY_INDEX,
        partition_key=dynamodb.Attribute(name=IDENTITY_ATTRIBUTE, type=dynamodb.AttributeType.STRING),
        projection_type=dynamodb.ProjectionType.KEYS_ONLY,
    )
    return table


def import_queue(scope: Construct, construct_id: str, arn: str, key_arn: str | None) -> sqs.IQueue:
    """An existing queue by ARN; with its KMS key's ARN, every queue grant also grants the key."""
    return sqs.Queue.from_queue_attributes(scope, construct_id, queue_arn=arn, key_arn=key_arn)


# --- the audit trail ------------------------------------------------------------------------------


def audit_retention_days(retention: Duration) -> logs.RetentionDays:
    """The log group's retention for ``audit_retention``; SettingsError unless CloudWatch Logs
    offers that many days."""
    days = retention.to_days(integral=False)
    if days not in RETENTION_DAYS:
        allowed = ", ".join(str(d) for d in RETENTION_DAYS)
        raise SettingsError(
            f"audit_retention: {days:g} days is not a retention CloudWatch Logs offers; one of {allowed} days"
        )
    return RETENTION_DAYS[int(days)]


def build_audit_log(scope: Construct, retention: Duration, removal_policy: RemovalPolicy) -> logs.LogGroup:
    """The log group (``AuditLog``) of the operator's actions. CloudWatch Logs encrypts it at rest."""
    return logs.LogGroup(
        scope, "AuditLog", retention=audit_retention_days(retention), removal_policy=removal_policy
    )
