"""Where a re-driver keeps what it parks and what it remembers: the parking lot, the archive bucket
and the state table, with the project's secure defaults; and the queues it is attached to by ARN."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sqs_redriver.cdk.defaults import secure_bucket, secure_queue, secure_table
from sqs_redriver.cdk.functions import acknowledge

PARKING_LOT_RETENTION = Duration.days(14)
ARCHIVE_EXPIRATION = Duration.days(365)
# The state table's layout, which a table the user brings must have too (validation.check_state_table).
PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"


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
    """The table (``StateTable``) of the breakers, message records and operator records."""
    return secure_table(
        scope,
        "StateTable",
        partition_key=PARTITION_KEY,
        ttl_attribute=TTL_ATTRIBUTE,
        removal_policy=removal_policy,
        encryption_key=key,
    )


def import_queue(scope: Construct, construct_id: str, arn: str, key_arn: str | None) -> sqs.IQueue:
    """An existing queue by ARN; with its KMS key's ARN, every queue grant also grants the key."""
    return sqs.Queue.from_queue_attributes(scope, construct_id, queue_arn=arn, key_arn=key_arn)
