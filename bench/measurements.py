"""One measured drain of each design, and the rate the limiter achieves."""

from __future__ import annotations

import time
from dataclasses import dataclass

from bench.drains import drain_with_published, drain_with_redriver, fill_dlq
from bench.metering import Meter
from local_aws.server import reset_moto

DESIGNS = ("published", "redriver")


@dataclass
class Result:
    design: str
    messages: int
    latency_ms: int
    seconds: float
    per_second: float
    calls_per_message: float
    billable_per_message: float
    cost_per_million_usd: float
    operations: dict[str, int]


def measure(endpoint: str, design: str, messages: int, latency_ms: int) -> Result:
    """Drain a DLQ of ``messages`` with ``design`` on a fresh moto, every request metered."""
    reset_moto(endpoint)
    resources = fill_dlq(messages)
    meter = Meter(latency_seconds=latency_ms / 1000)
    started = time.perf_counter()
    if design == "published":
        drain_with_published(resources, meter)
    else:
        drain_with_redriver(resources, meter, messages)
    seconds = time.perf_counter() - started
    return Result(
        design=design,
        messages=messages,
        latency_ms=latency_ms,
        seconds=round(seconds, 2),
        per_second=round(messages / seconds, 1),
        calls_per_message=round(meter.calls / messages, 3),
        billable_per_message=round(meter.billable / messages, 3),
        cost_per_million_usd=round(meter.cost_per_million(messages), 2),
        operations=dict(meter.operations),
    )


def limiter_messages(rate: int) -> int:
    """At least 200 messages and about 4 s of draining: the bucket starts with one batch, which
    a short drain would count as speed."""
    return max(200, 4 * rate)


def limiter_rate(endpoint: str, rate: int, messages: int) -> float:
    """Messages per second achieved by one run with the rate limit set to ``rate``."""
    reset_moto(endpoint)
    resources = fill_dlq(messages)
    started = time.perf_counter()
    drain_with_redriver(resources, Meter(), messages, rate=rate)
    return round(messages / (time.perf_counter() - started), 1)
