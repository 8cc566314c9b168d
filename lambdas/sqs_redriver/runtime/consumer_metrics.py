"""What CloudWatch published about the source queues' consumers (the ``ActivitySource`` port).

One logical read per run: a single ``GetMetricData`` request asks for every source's metrics at
once, and its pages (``NextToken``) are followed to the end. Per source queue it asks for the
one-minute sums of ``AWS/SQS`` ``NumberOfMessagesReceived`` and ``NumberOfMessagesDeleted``
(dimension ``QueueName``) and, when the consumer function is known, of ``AWS/Lambda``
``Invocations``, ``Errors`` and ``Throttles`` (dimension ``FunctionName``): 2 or 5 metrics, each
billed as one metric requested (per page).

The response is untrusted and checked here, each datapoint by consumer_health's ``minute_count``
and ``minute_start``. A metric whose status is
``Forbidden`` or ``InternalError`` (or still ``PartialData`` after the last page), that is missing,
or that holds one bad datapoint, leaves its queue out of the reading, with one warning naming the
queue, the metric, the field and the problem: a reading with a hole would pass a busy minute for
an idle one. A call that fails is ``AwsCallError``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.protocol.sources import DeadLetterSource, SourceKind
from sqs_redriver.runtime.consumer_health import (
    SECONDS_PER_MINUTE,
    Minute,
    QueueActivity,
    WatchedQueue,
    minute_count,
    minute_start,
)
from sqs_redriver.runtime.errors import Problem

if TYPE_CHECKING:
    import logging
    from collections.abc import Iterator, Mapping, Sequence


SQS_NAMESPACE = "AWS/SQS"


LAMBDA_NAMESPACE = "AWS/Lambda"


STAT = "Sum"


# GetMetricData's limit of metrics in one request (without a Metrics Insights query).
MAX_QUERIES = 500


# 50 pages of up to 100,800 datapoints: a week of minutes of 500 metrics, far longer than a run
# reads. More means a NextToken that never ends; the run must not spend its time on it.
MAX_PAGES = 50


# The statuses a page may give a metric; only COMPLETE may be the last.
COMPLETE, PARTIAL = "Complete", "PartialData"


REFUSED = "the queue is left out of this run's reading"


@dataclass(frozen=True)
class Series:
    """One metric of a queue's consumer, and the ``Minute`` field its sums fill."""

    namespace: str
    metric: str
    dimension: str
    field: str

    @property
    def label(self) -> str:
        return f"{self.namespace} {self.metric}"


QUEUE_SERIES = (
    Series(SQS_NAMESPACE, "NumberOfMessagesReceived", "QueueName", "received"),
    Series(SQS_NAMESPACE, "NumberOfMessagesDeleted", "QueueName", "deleted"),
)


FUNCTION_SERIES = (
    Series(LAMBDA_NAMESPACE, "Invocations", "FunctionName", "invocations"),
    Series(LAMBDA_NAMESPACE, "Errors", "FunctionName", "errors"),
    Series(LAMBDA_NAMESPACE, "Throttles", "FunctionName", "throttles"),
)


EVENTS_NAMESPACE = "AWS/Events"


SNS_NAMESPACE = "AWS/SNS"


# A source of another kind, by its own metrics: what its target took ("taken", or "delivered"
# plus "failed") and what failed, in each minute (``source_minute``).
SOURCE_SERIES = {
    SourceKind.FUNCTION: (
        Series(LAMBDA_NAMESPACE, "Invocations", "FunctionName", "taken"),
        Series(LAMBDA_NAMESPACE, "Errors", "FunctionName", "failed"),
        Series(LAMBDA_NAMESPACE, "Throttles", "FunctionName", "throttles"),
    ),
    SourceKind.RULE_TARGET: (
        Series(EVENTS_NAMESPACE, "Invocations", "RuleName", "taken"),
        Series(EVENTS_NAMESPACE, "FailedInvocations", "RuleName", "failed"),
    ),
    SourceKind.SUBSCRIPTION: (
        Series(SNS_NAMESPACE, "NumberOfNotificationsDelivered", "TopicName", "delivered"),
        Series(SNS_NAMESPACE, "NumberOfNotificationsFailed", "TopicName", "failed"),
    ),
}


def source_minute(kind: SourceKind, at: int, sums: Mapping[str, int]) -> Minute:
    """A source of another kind's minute, in the terms consumer_health judges: what its target
    took is received, what it took and did not fail is deleted (processed). Those services
    publish a metric only for a minute it counted something: a missing one is 0. A topic counts
    what it delivered and what failed, apart."""
    failed = sums.get("failed", 0)
    taken = sums.get("delivered", 0) + failed if kind is SourceKind.SUBSCRIPTION else sums.get("taken", 0)
    return Minute(at=at, received=taken, deleted=max(taken - failed, 0), throttles=sums.get("throttles", 0))


@dataclass(frozen=True)
class Query:
    """One metric asked for: its queue, its series, and its dimension's value."""

    queue: WatchedQueue
    series: Series
    dimension_value: str

    def request(self, query_id: str) -> dict[str, Any]:
        metric = {
            "Namespace": self.series.namespace,
            "MetricName": self.series.metric,
            "Dimensions": [{"Name": self.series.dimension, "Value": self.dimension_value}],
        }
        return {
            "Id": query_id,
            "MetricStat": {"Metric": metric, "Period": SECONDS_PER_MINUTE, "Stat": STAT},
            "ReturnData": True,
        }


def queries_of(queues: Sequence[WatchedQueue]) -> dict[str, Query]:
    """Every metric to ask for, by query id (``q<position>_<field>``, as GetMetricData allows)."""
    queries = {}
    for index, queue in enumerate(queues):
        if queue.source is not None:
            wanted = [(series, queue.source.name) for series in SOURCE_SERIES[queue.source.kind]]
        else:
            wanted = [(series, queue.queue_name) for series in QUEUE_SERIES]
        if queue.function_name:
            wanted += [(series, queue.function_name) for series in FUNCTION_SERIES]
        for series, value in wanted:
            queries[f"q{index}_{series.field}"] = Query(queue, series, value)
    return queries


def check_fits(queues: Sequence[WatchedQueue]) -> None:
    """Raise ValueError, saying what to do, when the queues' metrics do not fit one request."""
    needed = len(queries_of(queues))
    if needed > MAX_QUERIES:
        raise ValueError(
            f"reading the consumers of {len(queues)} source queues takes {needed} CloudWatch metrics "
            f"({len(QUEUE_SERIES)} per queue, {len(FUNCTION_SERIES)} more with a consumer function), "
            f"over the {MAX_QUERIES} one GetMetricData request allows: set QUEUE_METRICS to false, "
            "or give the DLQ fewer source queues"
        )


@dataclass
class Collected:
    """A metric's datapoints over every page, its last status, and what made it unusable, if
    anything did (the response field and the problem)."""

    timestamps: list[object] = field(default_factory=list)
    values: list[object] = field(default_factory=list)
    status: object = None
    broken: tuple[str, str] | None = None


class CloudWatchActivity:
    """Reads the source queues' consumer metrics from CloudWatch, one request per run."""

    def __init__(
        self, client: Any, logger: logging.Logger | Any, *, watched: Sequence[WatchedQueue] = ()
    ) -> None:
        """``watched``: the queues runs will ask about, checked here (at cold start) to fit one
        request; raises ValueError with what to do when they do not."""
        check_fits(watched)
        self._client = client
        self._log = logger

    def read(self, queues: Sequence[WatchedQueue], *, start: int, end: int) -> dict[str, QueueActivity]:
        """The minutes in ``[start, end)``, both rounded down to the minute, of each queue whose
        metrics are all valid, by queue URL: one logical ``GetMetricData`` read (its pages
        followed). ``AwsCallError`` when a call fails; ValueError for ``end`` before ``start``."""
        start, end = _minute(start), _minute(end)
        if end < start:
            raise ValueError(f"the minutes to read end ({end}) before they start ({start})")
        check_fits(queues)
        queries = queries_of(queues)
        if not queues or end == start:  # nothing to ask about, or not one whole minute
            return {queue.queue_url: QueueActivity(queue.queue_url, start, end) for queue in queues}
        collected = self._fetch(queries, start, end)
        readings = {}
        for queue in queues:
            own = {query_id: query for query_id, query in queries.items() if query.queue is queue}
            try:
                minutes, complete_until = _minutes_of(own, collected, start, end, queue.source)
            except Problem as problem:
                self._report(problem)
                continue
            readings[queue.queue_url] = QueueActivity(queue.queue_url, start, complete_until, minutes)
        return readings

    def _fetch(self, queries: Mapping[str, Query], start: int, end: int) -> dict[str, Collected]:
        request = {
            "MetricDataQueries": [query.request(query_id) for query_id, query in queries.items()],
            "StartTime": datetime.fromtimestamp(start, tz=UTC),
            "EndTime": datetime.fromtimestamp(end, tz=UTC),
            "ScanBy": "TimestampAscending",
        }
        collected: dict[str, Collected] = {}
        for page in self._pages(request):
            for result in page.get("MetricDataResults") or []:
                query_id = result.get("Id")
                if query_id in queries:  # an id that was not asked for names no queue
                    _collect(collected.setdefault(query_id, Collected()), result)
        return collected

    def _pages(self, request: dict[str, Any]) -> Iterator[Mapping[str, Any]]:
        token = None
        for _ in range(MAX_PAGES):
            try:
                page = self._client.get_metric_data(**request, **({"NextToken": token} if token else {}))
            except (ClientError, BotoCoreError) as exc:
                raise AwsCallError(f"CloudWatch GetMetricData failed: {exc}") from exc
            yield page
            token = page.get("NextToken")
            if not token:
                return
        raise AwsCallError(f"CloudWatch GetMetricData gave more than {MAX_PAGES} pages: read stopped")

    def _report(self, problem: Problem) -> None:
        self._log.warning(
            "queue metrics not usable",
            extra={
                "queue_url": problem.query.queue.queue_url,
                "metric": problem.query.series.label,
                "dimension": f"{problem.query.series.dimension}={problem.query.dimension_value}",
                "field": problem.field,
                "problem": problem.problem,
                "fate": REFUSED,
            },
        )


def _minute(epoch_seconds: int) -> int:
    return epoch_seconds - epoch_seconds % SECONDS_PER_MINUTE


def _collect(into: Collected, result: Mapping[str, Any]) -> None:
    """Add one page's result of a metric. A status other than complete or partial sticks, and so
    do timestamps and values that cannot be paired."""
    timestamps, values = result.get("Timestamps") or [], result.get("Values") or []
    if len(timestamps) != len(values) and into.broken is None:
        into.broken = ("Values", f"{len(values)} values for {len(timestamps)} timestamps")
    if into.status in (None, COMPLETE, PARTIAL):
        into.status = result.get("StatusCode")
    into.timestamps.extend(timestamps)
    into.values.extend(values)


def _minutes_of(
    queries: Mapping[str, Query],
    collected: Mapping[str, Collected],
    start: int,
    end: int,
    source: DeadLetterSource | None = None,
) -> tuple[tuple[Minute, ...], int]:
    """One queue's minutes from its ``queries``, their sums merged into one ``Minute`` per
    timestamp, and where the reading is complete; raises Problem for the first thing wrong with
    any of its metrics. SQS publishes both of a queue's series, zeros included, for every minute of
    an active queue: a minute with one and not the other is still being published, and the
    reading ends before it (a receive without its delete is not read as a failure). A source of
    another kind is read as ``source_minute`` says."""
    counts: dict[int, dict[str, int]] = {}
    for query_id, query in queries.items():
        found = collected.get(query_id)
        if found is None:
            raise Problem(query, "MetricDataResults", f"no result for query {query_id}")
        for at, count in _datapoints(query, found, start, end):
            counts.setdefault(at, {})[query.series.field] = count
    if source is not None:
        return tuple(source_minute(source.kind, at, sums) for at, sums in sorted(counts.items())), end
    half = [at for at, fields in counts.items() if ("received" in fields) != ("deleted" in fields)]
    complete_until = min(half, default=end)
    minutes = tuple(Minute(at=at, **fields) for at, fields in sorted(counts.items()) if at < complete_until)
    return minutes, complete_until


def _datapoints(query: Query, found: Collected, start: int, end: int) -> Iterator[tuple[int, int]]:
    if found.status != COMPLETE:
        raise Problem(query, "StatusCode", f"{found.status!s:.100}, not {COMPLETE}, after the last page")
    if found.broken is not None:
        raise Problem(query, *found.broken)
    seen: set[int] = set()
    for index, (timestamp, value) in enumerate(zip(found.timestamps, found.values, strict=True)):
        at = minute_start(timestamp, start=start, end=end)
        if not isinstance(at, int):
            raise Problem(query, f"Timestamps[{index}]", f"{at}: {timestamp!r:.100}")
        if at in seen:
            raise Problem(query, f"Timestamps[{index}]", f"a second datapoint for {timestamp!r:.100}")
        count = minute_count(value)
        if not isinstance(count, int):
            raise Problem(query, f"Values[{index}]", f"{count}: {value!r:.100}")
        seen.add(at)
        yield at, count
