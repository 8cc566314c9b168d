"""The CloudWatch metrics AWS would publish about the simulated world, published by the world.

moto publishes no AWS/SQS or AWS/Lambda metrics of its own. The world counts, per minute of the
simulated clock, what SQS and Lambda would count, and puts the sums into moto's CloudWatch:

- ``AWS/SQS``, dimension ``QueueName``, for every queue the world's one queue client touches:
  ``NumberOfMessagesReceived`` (messages ReceiveMessage returned, to anyone),
  ``NumberOfMessagesDeleted`` (successful delete entries) and ``NumberOfMessagesSent`` (successful
  send entries, by anyone: producers, the re-driver, a consumer kit). A RedrivePolicy's move to the
  DLQ is not a send, as in SQS;
- ``AWS/Lambda``, dimension ``FunctionName``, for the consumer function: ``Invocations``,
  ``Errors`` (the invocation raised) and ``Throttles`` (always 0: the world never throttles it).

One datapoint per metric and minute, Unit Count, Timestamp the minute's start as a naive UTC
datetime (a timezone-aware one put straight into moto's backend breaks every later read; through
boto3 it is turned naive anyway). A minute becomes visible when the clock reaches its end plus the
publication lag (SQS's and Lambda's arrive minutes late). A minute in which a queue or function
counted nothing publishes nothing for it (idle); an active one publishes each of its metrics,
zeros included, as SQS does for an active queue.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from local_aws.clients import ClientProxy
from local_aws.simulated_time import SimulatedClock

SQS_NAMESPACE = "AWS/SQS"
LAMBDA_NAMESPACE = "AWS/Lambda"
RECEIVED = "NumberOfMessagesReceived"
DELETED = "NumberOfMessagesDeleted"
SENT = "NumberOfMessagesSent"
INVOCATIONS = "Invocations"
ERRORS = "Errors"
THROTTLES = "Throttles"
DEFAULT_LAG_SECONDS = 120
MINUTE_MS = 60_000
MAX_DATAPOINTS_PER_PUT = 1000  # PutMetricData's limit
NAIVE_EPOCH = datetime(1970, 1, 1)


@dataclass(frozen=True)
class Series:
    """Whose metrics: a queue in AWS/SQS or a function in AWS/Lambda."""

    namespace: str
    dimension: str
    name: str

    @classmethod
    def queue(cls, queue_url: str) -> Series:
        """The AWS/SQS series of the queue at ``queue_url`` (dimension QueueName, its name)."""
        return cls(SQS_NAMESPACE, "QueueName", queue_url.rstrip("/").rsplit("/", 1)[-1])

    @classmethod
    def function(cls, function_name: str) -> Series:
        """The AWS/Lambda series of a function (dimension FunctionName)."""
        return cls(LAMBDA_NAMESPACE, "FunctionName", function_name)

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric an active minute publishes for this series."""
        if self.namespace == SQS_NAMESPACE:
            return (RECEIVED, DELETED, SENT)
        return (INVOCATIONS, ERRORS, THROTTLES)


@dataclass(frozen=True)
class Datapoint:
    """One published minute of one metric; ``minute`` is its start in epoch seconds."""

    series: Series
    metric: str
    minute: int
    value: int
    published_at_ms: int  # the simulated time it became visible


@dataclass(frozen=True)
class MetricsOptions:
    """How a world publishes: ``publish`` False leaves CloudWatch silent; a minute becomes visible
    ``lag_seconds`` after its end, plus a jitter in ``[0, lag_jitter_seconds)`` drawn per minute
    from ``seed`` (0: none)."""

    publish: bool = True
    lag_seconds: float = DEFAULT_LAG_SECONDS
    lag_jitter_seconds: float = 0
    seed: int = 7

    def __post_init__(self) -> None:
        if self.lag_seconds < 0 or self.lag_jitter_seconds < 0:
            raise ValueError(f"a publication lag is not negative: {self}")


class PublishedMetrics:
    """Counts what the world does per minute and publishes due minutes whenever the clock moves.

    ``published`` holds every datapoint put into CloudWatch, in order; ``sums`` reads it back."""

    def __init__(
        self, cloudwatch: Any, clock: SimulatedClock, function_name: str, options: MetricsOptions
    ) -> None:
        self._cloudwatch = cloudwatch
        self._clock = clock
        self._function = Series.function(function_name)
        self.options = options
        self.published: list[Datapoint] = []
        self._pending: dict[int, dict[Series, Counter[str]]] = {}
        self._visible_at_ms: dict[int, int] = {}  # when each pending minute becomes visible
        self._lock = threading.Lock()
        if options.publish:
            clock.on_move(self.publish_due)

    def queue_client(self, client: Any) -> Any:
        """``client`` (the world's SQS client), its calls counted; itself when nothing is published."""
        return CountingQueueCalls(client, self.count) if self.options.publish else client

    def invoked(self, *, error: bool) -> None:
        """The event source mapping invoked the consumer function now; ``error``: it raised."""
        self.count(self._function, INVOCATIONS, 1)
        self.count(self._function, ERRORS, int(error))

    def count(self, series: Series, metric: str, amount: int) -> None:
        """Add ``amount`` to ``metric`` in the current minute; 0 leaves an idle minute idle."""
        if not amount or not self.options.publish:
            return
        minute = self._clock.now_ms // MINUTE_MS * 60
        with self._lock:
            if minute not in self._pending:
                self._visible_at_ms[minute] = self.visible_at_ms(minute)
            self._pending.setdefault(minute, {}).setdefault(series, Counter())[metric] += amount

    def visible_at_ms(self, minute: int) -> int:
        """When the minute starting at ``minute`` (epoch seconds) becomes visible: its end plus the
        lag, plus the minute's own jitter (the same for a given seed and minute)."""
        jitter_ms = round(self.options.lag_jitter_seconds * 1000)
        extra_ms = random.Random(f"{self.options.seed}/{minute}").randrange(jitter_ms) if jitter_ms else 0
        return (minute + 60) * 1000 + round(self.options.lag_seconds * 1000) + extra_ms

    def publish_due(self, now_ms: int) -> None:
        """Put every counted minute visible at ``now_ms`` into CloudWatch (the clock's listener)."""
        with self._lock:
            due = sorted(m for m, at_ms in self._visible_at_ms.items() if at_ms <= now_ms)
            minutes = [(m, self._pending.pop(m)) for m in due]
            for minute in due:
                del self._visible_at_ms[minute]
        points = [
            Datapoint(series, metric, minute, counts[metric], now_ms)
            for minute, by_series in minutes
            for series, counts in by_series.items()
            for metric in series.metrics
        ]
        for namespace in sorted({p.series.namespace for p in points}):
            self._put(namespace, [p for p in points if p.series.namespace == namespace])
        self.published.extend(points)

    def sums(self, metric: str, name: str) -> dict[int, int]:
        """The published sums of ``metric`` for the queue or function ``name``, by minute start."""
        return {p.minute: p.value for p in self.published if p.metric == metric and p.series.name == name}

    def _put(self, namespace: str, points: list[Datapoint]) -> None:
        data = [
            {
                "MetricName": p.metric,
                "Dimensions": [{"Name": p.series.dimension, "Value": p.series.name}],
                "Timestamp": NAIVE_EPOCH + timedelta(seconds=p.minute),
                "Value": float(p.value),
                "Unit": "Count",
            }
            for p in points
        ]
        for start in range(0, len(data), MAX_DATAPOINTS_PER_PUT):
            self._cloudwatch.put_metric_data(
                Namespace=namespace, MetricData=data[start : start + MAX_DATAPOINTS_PER_PUT]
            )


class CountingQueueCalls(ClientProxy):
    """An SQS client whose receives, deletes and sends are counted for AWS/SQS, per queue, as SQS
    counts them: messages returned, successful entries. A call that raises counts nothing."""

    def __init__(self, client: Any, count: Callable[[Series, str, int], None]) -> None:
        super().__init__(client)
        self._count = count

    def receive_message(self, **kwargs: Any) -> Any:
        response = self._client.receive_message(**kwargs)
        self._count(Series.queue(kwargs["QueueUrl"]), RECEIVED, len(response.get("Messages", [])))
        return response

    def delete_message(self, **kwargs: Any) -> Any:
        response = self._client.delete_message(**kwargs)
        self._count(Series.queue(kwargs["QueueUrl"]), DELETED, 1)
        return response

    def delete_message_batch(self, **kwargs: Any) -> Any:
        response = self._client.delete_message_batch(**kwargs)
        self._count(Series.queue(kwargs["QueueUrl"]), DELETED, len(response.get("Successful", [])))
        return response

    def send_message(self, **kwargs: Any) -> Any:
        response = self._client.send_message(**kwargs)
        self._count(Series.queue(kwargs["QueueUrl"]), SENT, 1)
        return response

    def send_message_batch(self, **kwargs: Any) -> Any:
        response = self._client.send_message_batch(**kwargs)
        self._count(Series.queue(kwargs["QueueUrl"]), SENT, len(response.get("Successful", [])))
        return response
