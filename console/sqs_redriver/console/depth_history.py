"""The depth of a deployment's queues over the last hours, as SQS publishes it to CloudWatch
(``ApproximateNumberOfMessagesVisible``), read with GetMetricStatistics. A local endpoint
publishes no SQS metrics: the series are then empty."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqs_redriver.console.aws import aws_call

DEPTH_WINDOW_SECONDS = 3 * 3600
DEPTH_PERIOD_SECONDS = 300
DEPTH_METRIC = "ApproximateNumberOfMessagesVisible"


@dataclass(frozen=True)
class DepthSeries:
    """One queue's visible messages over time: (epoch seconds, depth), oldest first."""

    label: str
    queue_name: str
    points: tuple[tuple[int, float], ...]


def depth_history(
    cloudwatch: Any,
    queues: Sequence[tuple[str, str]],
    now: int,
    *,
    window_seconds: int = DEPTH_WINDOW_SECONDS,
    period_seconds: int = DEPTH_PERIOD_SECONDS,
) -> list[DepthSeries]:
    """The depth of each ``(label, queue name)`` over the ``window_seconds`` before ``now``, the
    maximum of each period. GetMetricStatistics, one call a queue: what ``grant_operator`` already
    grants for ``status``."""
    return [
        DepthSeries(label, name, _points(cloudwatch, name, now, window_seconds, period_seconds))
        for label, name in queues
    ]


def _points(
    cloudwatch: Any, queue_name: str, now: int, window: int, period: int
) -> tuple[tuple[int, float], ...]:
    response = aws_call(
        "GetMetricStatistics",
        cloudwatch.get_metric_statistics,
        Namespace="AWS/SQS",
        MetricName=DEPTH_METRIC,
        Dimensions=[{"Name": "QueueName", "Value": queue_name}],
        StartTime=datetime.fromtimestamp(now - window, UTC),
        EndTime=datetime.fromtimestamp(now, UTC),
        Period=period,
        Statistics=["Maximum"],
    )
    found = []
    for point in response.get("Datapoints", []):
        try:  # what CloudWatch answers is read as untrusted: a point without a time or a value is left out
            found.append((int(point["Timestamp"].timestamp()), float(point["Maximum"])))
        except (KeyError, TypeError, AttributeError, ValueError, OverflowError):
            continue
    return tuple(sorted(found))
