"""Fixtures shared by every layer of the suite (their helpers are in tests/support)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from local_aws import REGION
from tests.support.aws import IDEMPOTENCY_TABLE, Aws, create_aws
from tests.support.factories import FakeClock
from tests.support.shared_dlq import create_payments


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


@pytest.fixture
def aws() -> Iterator[Aws]:
    with mock_aws():
        yield create_aws()


@pytest.fixture
def fifo() -> Iterator[Aws]:
    """As ``aws``, with FIFO queues."""
    with mock_aws():
        yield create_aws(fifo=True)


@pytest.fixture
def payments(aws: Aws) -> str:
    """A second source queue of ``aws``'s DLQ."""
    return create_payments(aws)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the fault-injection figures when that suite ran."""
    from tests.support.faults import FIGURES, figures_line

    if FIGURES:
        terminalreporter.write_line(figures_line())
