"""Fixtures shared by every layer of the suite."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from redriver.adapters.sqs_queue import SqsQueue
from redriver.adapters.state_table import StateTable
from redriver.decide.breaker import BreakerPolicy
from redriver.run.runner import Redriver
from redriver.settings import Settings
from tests.factories import FakeClock

REGION = "us-east-1"
IDEMPOTENCY_TABLE = "orders-idempotency"
MAX_RECEIVE_COUNT = 2
SOURCE_VISIBILITY_TIMEOUT = 30
# How long a failing canary takes to come back, as the re-driver computes it from the queue.
CANARY_WINDOW = SOURCE_VISIBILITY_TIMEOUT * (MAX_RECEIVE_COUNT + 1)


@pytest.fixture(autouse=True)
def fake_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "POWERTOOLS_SERVICE_NAME": "redriver-tests",
        "POWERTOOLS_METRICS_NAMESPACE": "RedriverTests",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "IDEMPOTENCY_TABLE_NAME": IDEMPOTENCY_TABLE,
    }.items():
        monkeypatch.setenv(name, value)


@dataclass
class Aws:
    sqs: Any
    dynamodb: Any
    source_url: str
    source_arn: str
    dlq_url: str
    parking_lot_url: str
    table_name: str


def create_aws(*, fifo: bool = False) -> Aws:
    """A source queue with its DLQ (maxReceiveCount 2), a parking lot and the tables; inside mock_aws."""
    sqs = boto3.client("sqs", region_name=REGION)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    suffix, kind = (".fifo", {"FifoQueue": "true"}) if fifo else ("", {})
    dlq_url = sqs.create_queue(QueueName=f"orders-dlq{suffix}", Attributes=kind)["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    source_url = sqs.create_queue(
        QueueName=f"orders{suffix}",
        Attributes={
            **kind,
            "VisibilityTimeout": str(SOURCE_VISIBILITY_TIMEOUT),
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVE_COUNT)}
            ),
        },
    )["QueueUrl"]
    source_arn = sqs.get_queue_attributes(QueueUrl=source_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    parking_lot_url = sqs.create_queue(QueueName=f"orders-parking-lot{suffix}", Attributes=kind)["QueueUrl"]
    for table, key in (("redriver-state", "pk"), (IDEMPOTENCY_TABLE, "id")):
        dynamodb.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    return Aws(sqs, dynamodb, source_url, source_arn, dlq_url, parking_lot_url, "redriver-state")


@pytest.fixture
def aws() -> Iterator[Aws]:
    with mock_aws():
        yield create_aws()


def make_settings(aws: Aws, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "dlq_url": aws.dlq_url,
        "source_queue_url": aws.source_url,
        "parking_lot_url": aws.parking_lot_url,
        "table_name": aws.table_name,
        "base_delay_seconds": 0,
        "max_delay_seconds": 0,
        "receive_wait_seconds": 0,
        "max_redrives_per_second": 500,  # the limiter has tests of its own; here it must not slow runs
        # moto's in-process receive is not atomic across threads (SQS's is): parallel batches are
        # tested on their own, with receives serialized as SQS does.
        "parallel_batches": 1,
        "breaker": BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2),
    }
    values.update(overrides)
    return Settings(**values)


def make_redriver(
    aws: Aws, settings: Settings, clock: FakeClock, sqs: Any = None, dynamodb: Any = None
) -> Redriver:
    sqs = sqs or aws.sqs
    return Redriver(
        settings,
        dlq=SqsQueue(settings.dlq_url, sqs),
        sources=[SqsQueue(url, sqs) for url in settings.source_queue_urls],
        parking_lot=SqsQueue(settings.parking_lot_url, sqs),
        state=StateTable(
            settings.table_name,
            dynamodb or aws.dynamodb,
            ttl_seconds=86_400,
            clock=clock,
            pause=lambda _: None,
        ),
        logger=logging.getLogger("redriver-tests"),
        clock=clock,
        rng=random.Random(7),
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the fault-injection figures when that suite ran."""
    from tests.faults import FIGURES, figures_line

    if FIGURES:
        terminalreporter.write_line(figures_line())
