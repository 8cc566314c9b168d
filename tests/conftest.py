"""Fixtures shared by every layer of the suite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from local_aws import REGION
from local_aws.compose import local_redriver
from local_aws.resources import Resources, create_resources, create_table
from sqs_redriver.runtime.act.ratelimit import TokenBucket
from sqs_redriver.runtime.decide.breaker import BreakerPolicy
from sqs_redriver.runtime.run.runner import Redriver
from sqs_redriver.runtime.settings import Settings
from tests.factories import FakeClock

IDEMPOTENCY_TABLE = "orders-idempotency"
MAX_RECEIVE_COUNT = 2
SOURCE_VISIBILITY_TIMEOUT = 30
# How long a failing canary takes to come back, as the re-driver computes it from the queue.
CANARY_WINDOW = SOURCE_VISIBILITY_TIMEOUT * (MAX_RECEIVE_COUNT + 1)
Aws = Resources  # what the `aws` fixture yields


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


def create_aws(*, fifo: bool = False) -> Aws:
    """A source queue with its DLQ (maxReceiveCount 2), a parking lot, the state table and the
    consumer's idempotency table; inside mock_aws."""
    aws = create_resources(
        fifo=fifo, max_receive_count=MAX_RECEIVE_COUNT, source_visibility_timeout=SOURCE_VISIBILITY_TIMEOUT
    )
    create_table(aws.dynamodb, IDEMPOTENCY_TABLE, "id")
    return aws


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
        "archive_bucket": aws.archive_bucket,
        "base_delay_seconds": 0,
        "max_delay_seconds": 0,
        "receive_wait_seconds": 0,
        "max_redrives_per_second": 500,  # the limiter has tests of its own; here it must not slow runs
        # moto's in-process receive is not atomic across threads (SQS's is): parallel batches are
        # tested on their own, with receives serialized as SQS does.
        "parallel_batches": 1,
        # Slow start paces by time; it has tests of its own (tests/unit/test_ramp.py, the e2e recovery).
        "slow_start_seconds": 0,
        "breaker": BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2),
    }
    values.update(overrides)
    return Settings(**values)


def make_redriver(
    aws: Aws,
    settings: Settings,
    clock: FakeClock,
    sqs: Any = None,
    dynamodb: Any = None,
    limiter: TokenBucket | None = None,
    s3: Any = None,
) -> Redriver:
    """A re-driver on the fake clock (its pauses move it), over ``aws``'s clients or the proxies given."""
    return local_redriver(
        settings,
        sqs=sqs or aws.sqs,
        dynamodb=dynamodb or aws.dynamodb,
        s3=s3 or aws.s3,
        clock=clock,
        pause=clock.advance,
        logger_name="redriver-tests",
        limiter=limiter,
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the fault-injection figures when that suite ran."""
    from tests.faults import FIGURES, figures_line

    if FIGURES:
        terminalreporter.write_line(figures_line())
