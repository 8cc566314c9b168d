"""The resources a re-driver works on, created directly (without the stack): a source queue whose
RedrivePolicy points at its DLQ, a parking lot and the state table; standard or FIFO. And the
breaker's state read back from a state table (the stack's or one created here)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import boto3

from local_aws import REGION
from sqs_redriver.protocol.keys import IDENTITY_ATTRIBUTE, IDENTITY_INDEX

if TYPE_CHECKING:
    from mypy_boto3_sqs.literals import QueueAttributeNameType

STATE_TABLE = "redriver-state"
STATE_TABLE_KEY = "pk"
ARCHIVE_BUCKET = "redriver-archive"


@dataclass(frozen=True)
class Resources:
    sqs: Any
    dynamodb: Any
    source_url: str
    source_arn: str
    dlq_url: str
    parking_lot_url: str
    table_name: str
    s3: Any
    archive_bucket: str


class Clients(NamedTuple):
    """The clients of a world's resources."""

    sqs: Any
    dynamodb: Any
    s3: Any


def new_clients() -> Clients:
    """Clients of whatever AWS boto3 reaches now (moto in-process or a moto server's endpoint)."""
    return Clients(
        sqs=boto3.client("sqs", region_name=REGION),
        dynamodb=boto3.client("dynamodb", region_name=REGION),
        s3=boto3.client("s3", region_name=REGION),
    )


def create_resources(
    *,
    fifo: bool = False,
    max_receive_count: int = 2,
    source_visibility_timeout: int = 30,
    name: str = "orders",
    clients: Clients | None = None,
) -> Resources:
    """Queues ``name``, ``name-dlq`` and ``name-parking-lot`` (with ``.fifo`` for FIFO), the
    state table and the archive bucket, on whatever AWS boto3 reaches (moto in-process or a moto
    server); with ``clients``, or new ones."""
    sqs, dynamodb, s3 = clients or new_clients()
    kind: dict[QueueAttributeNameType, str] = {"FifoQueue": "true"} if fifo else {}
    suffix = ".fifo" if fifo else ""
    dlq_url = sqs.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=kind)["QueueUrl"]
    redrive_policy = {
        "deadLetterTargetArn": queue_arn(sqs, dlq_url),
        "maxReceiveCount": str(max_receive_count),
    }
    source_url = sqs.create_queue(
        QueueName=f"{name}{suffix}",
        Attributes={
            **kind,
            "VisibilityTimeout": str(source_visibility_timeout),
            "RedrivePolicy": json.dumps(redrive_policy),
        },
    )["QueueUrl"]
    parking_lot_url = sqs.create_queue(QueueName=f"{name}-parking-lot{suffix}", Attributes=kind)["QueueUrl"]
    create_state_table(dynamodb, STATE_TABLE)
    s3.create_bucket(Bucket=ARCHIVE_BUCKET)
    return Resources(
        sqs=sqs,
        dynamodb=dynamodb,
        source_url=source_url,
        source_arn=queue_arn(sqs, source_url),
        dlq_url=dlq_url,
        parking_lot_url=parking_lot_url,
        table_name=STATE_TABLE,
        s3=s3,
        archive_bucket=ARCHIVE_BUCKET,
    )


def queue_arn(sqs: Any, queue_url: str) -> str:
    arn: str = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return arn


def create_table(dynamodb: Any, name: str, key: str) -> None:
    """An on-demand table with one string hash key."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def create_state_table(dynamodb: Any, name: str) -> None:
    """A re-driver's state table, as the construct makes it: keyed by ``pk``, with the identity
    index (each message record's key under its ``identity``, keys only)."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": STATE_TABLE_KEY, "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": STATE_TABLE_KEY, "AttributeType": "S"},
            {"AttributeName": IDENTITY_ATTRIBUTE, "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": IDENTITY_INDEX,
                "KeySchema": [{"AttributeName": IDENTITY_ATTRIBUTE, "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def breaker_state(dynamodb: Any, table_name: str, breaker_key: str) -> str:
    """The state of the breaker stored under ``breaker_key`` (CLOSED before its first record)."""
    item = dynamodb.get_item(
        TableName=table_name, Key={STATE_TABLE_KEY: {"S": breaker_key}}, ConsistentRead=True
    ).get("Item")
    return str(item["state"]["S"]) if item else "CLOSED"
