"""Who may touch which records of the state table: the re-drive function and a kit consumer.

Every record's partition key starts with its kind (``BREAKER#``, ``MSG#``...), and the re-driver's
own records embed its queue URLs, so ``dynamodb:LeadingKeys`` scopes each grant to the kinds, and
where possible the very records, that the code reads or writes with that operation. A batch
operation is checked item by item: a BatchGetItem or BatchWriteItem with one key outside the list
is refused whole. ``ForAllValues`` holds vacuously for a request with no leading key (Scan, Query),
which is why no statement here allows one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import aws_iam as iam

from sqs_redriver.protocol.failure import FAILURE_RECORD_ATTRIBUTES, VERDICT_RECORD_ATTRIBUTES
from sqs_redriver.protocol.keys import (
    FAILURE_RECORD_PREFIX,
    PARK_RECORD_PREFIX,
    RETRY_RECORD_PREFIX,
    VERDICT_RECORD_PREFIX,
    RecordKind,
    breaker_key,
    continuation_record_key,
    idempotency_key_prefix,
    pause_key,
    runs_key,
    sweep_key,
)

MESSAGE_RECORD_PREFIX = RecordKind.MESSAGE.value
LEADING_KEYS = "dynamodb:LeadingKeys"
# What the consumer kit writes (sqs_redriver.kit/aws.py): conditional UpdateItems of its own records.
CONSUMER_RECORD_PREFIXES = (VERDICT_RECORD_PREFIX, FAILURE_RECORD_PREFIX)
CONSUMER_TABLE_ACTIONS = ("dynamodb:UpdateItem",)
CONSUMER_ATTRIBUTES = tuple(sorted(set(FAILURE_RECORD_ATTRIBUTES) | set(VERDICT_RECORD_ATTRIBUTES)))


@dataclass(frozen=True)
class TableAccess:
    """One operation on the records whose keys match ``keys`` (IAM StringLike patterns)."""

    action: str
    keys: tuple[str, ...]


def redriver_table_access(dlq_url: str, source_queue_urls: Sequence[str]) -> tuple[TableAccess, ...]:
    """Each operation the re-drive function makes, on exactly the records it makes it on.

    Its own records (breakers, sweep, run history, continuation slot, the operator's pause) by their
    full keys, and its idempotency records (Powertools: get, conditional put, update, delete) by
    their prefix; message records, the kit's records and the operator's group records by kind. It
    never writes an operator record (PAUSE#, RETRY#, PARK#) nor a kit record (VERDICTS#, FAILURE#).
    """
    breakers = tuple(breaker_key(url) for url in source_queue_urls)
    own = (*breakers, sweep_key(dlq_url), runs_key(dlq_url))
    continuation = continuation_record_key(dlq_url)
    idempotency = f"{idempotency_key_prefix(dlq_url)}#*"
    return (
        TableAccess("dynamodb:GetItem", (*own, pause_key(dlq_url), f"{VERDICT_RECORD_PREFIX}*", idempotency)),
        TableAccess("dynamodb:PutItem", (*own, continuation, idempotency)),
        TableAccess("dynamodb:UpdateItem", (idempotency,)),
        TableAccess("dynamodb:DeleteItem", (continuation, idempotency)),
        TableAccess(
            "dynamodb:BatchGetItem",
            tuple(
                f"{prefix}*"
                for prefix in (
                    MESSAGE_RECORD_PREFIX,
                    FAILURE_RECORD_PREFIX,
                    RETRY_RECORD_PREFIX,
                    PARK_RECORD_PREFIX,
                )
            ),
        ),
        TableAccess("dynamodb:BatchWriteItem", (f"{MESSAGE_RECORD_PREFIX}*",)),
    )


def redriver_table_statements(
    table_arn: str, dlq_url: str, source_queue_urls: Sequence[str]
) -> list[iam.PolicyStatement]:
    """One statement per operation of ``redriver_table_access``, on ``table_arn`` alone."""
    return [
        iam.PolicyStatement(
            actions=[access.action],
            resources=[table_arn],
            conditions={"ForAllValues:StringLike": {LEADING_KEYS: list(access.keys)}},
        )
        for access in redriver_table_access(dlq_url, source_queue_urls)
    ]


def consumer_table_statement(table_arn: str) -> iam.PolicyStatement:
    """UpdateItem of the kit's verdict and failure records, of the kit's attributes only, returning
    nothing: no read, no other record, no wholesale put."""
    return iam.PolicyStatement(
        actions=list(CONSUMER_TABLE_ACTIONS),
        resources=[table_arn],
        conditions={
            "ForAllValues:StringLike": {LEADING_KEYS: [f"{prefix}*" for prefix in CONSUMER_RECORD_PREFIXES]},
            "ForAllValues:StringEquals": {"dynamodb:Attributes": list(CONSUMER_ATTRIBUTES)},
            "StringEqualsIfExists": {"dynamodb:ReturnValues": ["NONE"]},
        },
    )
