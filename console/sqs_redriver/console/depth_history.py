"""The depth of a deployment's queues over the last hours, as SQS publishes it to CloudWatch
(``ApproximateNumberOfMessagesVisible``): one GetMetricData call for every queue. A local endpoint
publishes no SQS metrics: the series are then empty."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.runtime.adapters import AwsCallError

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
    maximum of each period."""
    if not queues:
        return []
    queries = [
        {
            "Id": f"q{index}",
            "MetricStat": {
                "Metric": {
                    "Namespace": "AWS/SQS",
                    "MetricName": DEPTH_METRIC,
                    "Dimensions": [{"Name": "QueueName", "Value": name}],
                },
                "Period": period_seconds,
                "Stat": "Maximum",
            },
            "ReturnData": True,
        }
        for index, (_label, name) in enumerate(queues)
    ]
    found: dict[str, list[tuple[int, float]]] = {f"q{index}": [] for index in range(len(queues))}
    try:
        pages = cloudwatch.get_paginator("get_metric_data").paginate(
            MetricDataQueries=queries,
            StartTime=datetime.fromtimestamp(now - window_seconds, UTC),
            EndTime=datetime.fromtimestamp(now, UTC),
        )
        for page in pages:
            for result in page.get("MetricDataResults", []):
                stamps, values = result.get("Timestamps", []), result.get("Values", [])
                found.setdefault(result["Id"], []).extend(
                    (int(stamp.timestamp()), float(value))
                    for stamp, value in zip(stamps, values, strict=False)
                )
    except (ClientError, BotoCoreError) as exc:
        raise AwsCallError(f"GetMetricData failed: {exc}") from exc
    return [
        DepthSeries(label, name, tuple(sorted(found[f"q{index}"])))
        for index, (label, name) in enumerate(queues)
    ]
