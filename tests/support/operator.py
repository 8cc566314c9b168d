"""The operator's command-line tool on moto: run it on the world's resources, and park messages as
the re-driver would have for it to find."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from typer.testing import CliRunner

from local_aws import REGION
from local_aws.queues import make_visible
from sqs_redriver.console.cli import app
from sqs_redriver.console.tool import Connection, Target, Tool
from sqs_redriver.core.table import ParkCause, ParkReason
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, Mark, string_attribute
from sqs_redriver.protocol.failure import Failure, FailureKind
from tests.support.aws import Aws

FIRST_FAILED = 1_700_000_000


def tool(aws: Aws, *args: str, input: str | None = None) -> Any:
    """Run ``sqs-redriver`` on ``aws``'s resources, named explicitly."""
    target = [
        "--dlq-url",
        aws.dlq_url,
        "--source-url",
        aws.source_url,
        "--parking-lot-url",
        aws.parking_lot_url,
        "--table",
        aws.table_name,
    ]
    return CliRunner().invoke(app, [*target, *args], input=input)


def operator_tool(
    aws: Aws, *, audit_log_group: str | None = None, clock: Callable[[], float] = time.time
) -> Tool:
    """The operator's library over ``aws``'s resources, named explicitly (with the archive bucket,
    and the audit log group if given), on ``clock``."""
    target = Target(
        dlq_url=aws.dlq_url,
        source_urls=(aws.source_url,),
        parking_lot_url=aws.parking_lot_url,
        table=aws.table_name,
        archive_bucket=aws.archive_bucket,
        audit_log_group=audit_log_group,
    )
    return Tool(Connection(region=REGION), target, clock=clock)


def failure(fingerprint: str, at: int = FIRST_FAILED) -> Failure:
    return Failure(FailureKind.TERMINAL, "orders.InvalidOrder", "no items", fingerprint, at, 1, "arn")


def park(
    aws: Aws,
    body: str,
    *,
    count: int = 5,
    fingerprint: str | None = None,
    identity: str | None = None,
    first_failed: int = FIRST_FAILED,
    **attributes: str,
) -> None:
    """A message as the re-driver parks it: its attributes and its mark with the parking reason
    (identity ``id-<body>`` unless given; it first failed at ``first_failed``)."""
    mark = Mark(
        identity=identity or f"id-{body}",
        count=count,
        first_failed_at=first_failed,
        redriven_at=(first_failed + 60,),
        failure=failure(fingerprint, first_failed) if fingerprint else None,
    )
    cause = ParkCause.TERMINAL if fingerprint else ParkCause.OVER_LIMIT
    reason = ParkReason(cause, "test", count, first_failed, first_failed + 90, aws.source_url, "m-1")
    message_attributes = {name: string_attribute(value) for name, value in attributes.items()}
    message_attributes[MARK_ATTRIBUTE] = string_attribute(mark.to_json(parked=reason.to_dict()))
    aws.sqs.send_message(QueueUrl=aws.parking_lot_url, MessageBody=body, MessageAttributes=message_attributes)


def park_groups(aws: Aws, first_failed: int = FIRST_FAILED) -> None:
    """Three messages parked for one bug (fp-bad), one parked over the limit, one waiting in the DLQ."""
    for n in range(3):
        park(aws, f"bad-{n}", fingerprint="fp-bad", first_failed=first_failed)
    park(aws, "poison", first_failed=first_failed)
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="waiting")


def take_away(aws: Aws, message_id: str) -> None:
    """Another operator deletes one message of the parking lot; every other is visible again."""
    while True:
        received = aws.sqs.receive_message(QueueUrl=aws.parking_lot_url, MaxNumberOfMessages=10)
        for message in received["Messages"]:
            if message["MessageId"] == message_id:
                aws.sqs.delete_message(QueueUrl=aws.parking_lot_url, ReceiptHandle=message["ReceiptHandle"])
                make_visible(aws.parking_lot_url)
                return
