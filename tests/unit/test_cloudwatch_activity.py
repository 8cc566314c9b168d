"""CloudWatchActivity against botocore's Stubber: the one request, its pages, and every response
that leaves a queue out of the reading (with one warning naming what was wrong)."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.runtime.consumer_health import MAX_MINUTE_COUNT, Minute, QueueActivity, WatchedQueue
from sqs_redriver.runtime.consumer_metrics import MAX_PAGES, CloudWatchActivity, queries_of

ORDERS = WatchedQueue("https://sqs.eu-west-1.amazonaws.com/123456789012/orders", "orders-consumer")
PAYMENTS = WatchedQueue("https://sqs.eu-west-1.amazonaws.com/123456789012/payments")
T0 = 1_795_000_020  # a minute's start
START, END = T0, T0 + 5 * 60
LOGGER = "cloudwatch-activity-tests"


def at(minute: int) -> datetime:
    return datetime.fromtimestamp(T0 + 60 * minute, tz=UTC)


def result(query_id: str, points: dict[int, float], status: str = "Complete") -> dict[str, Any]:
    """A MetricDataResult: ``points`` maps a minute (from T0) to its value."""
    return {
        "Id": query_id,
        "Label": query_id,
        "Timestamps": [at(minute) for minute in points],
        "Values": list(points.values()),
        "StatusCode": status,
    }


def quiet(*query_ids: str) -> list[dict[str, Any]]:
    return [result(query_id, {}) for query_id in query_ids]


ORDERS_IDS = ("q0_received", "q0_deleted", "q0_invocations", "q0_errors", "q0_throttles")
PAYMENTS_IDS = ("q1_received", "q1_deleted")


def metric(query_id: str, namespace: str, name: str, dimension: str, value: str) -> dict[str, Any]:
    return {
        "Id": query_id,
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": name,
                "Dimensions": [{"Name": dimension, "Value": value}],
            },
            "Period": 60,
            "Stat": "Sum",
        },
        "ReturnData": True,
    }


EXPECTED_QUERIES = [
    metric("q0_received", "AWS/SQS", "NumberOfMessagesReceived", "QueueName", "orders"),
    metric("q0_deleted", "AWS/SQS", "NumberOfMessagesDeleted", "QueueName", "orders"),
    metric("q0_invocations", "AWS/Lambda", "Invocations", "FunctionName", "orders-consumer"),
    metric("q0_errors", "AWS/Lambda", "Errors", "FunctionName", "orders-consumer"),
    metric("q0_throttles", "AWS/Lambda", "Throttles", "FunctionName", "orders-consumer"),
    metric("q1_received", "AWS/SQS", "NumberOfMessagesReceived", "QueueName", "payments"),
    metric("q1_deleted", "AWS/SQS", "NumberOfMessagesDeleted", "QueueName", "payments"),
]


def request(start: int = START, end: int = END, token: str | None = None) -> dict[str, Any]:
    expected = {
        "MetricDataQueries": EXPECTED_QUERIES,
        "StartTime": datetime.fromtimestamp(start, tz=UTC),
        "EndTime": datetime.fromtimestamp(end, tz=UTC),
        "ScanBy": "TimestampAscending",
    }
    return {**expected, "NextToken": token} if token else expected


@pytest.fixture
def stubbed() -> Iterator[tuple[CloudWatchActivity, Stubber]]:
    client = boto3.client("cloudwatch", region_name="eu-west-1")
    with Stubber(client) as stubber:
        yield CloudWatchActivity(client, logging.getLogger(LOGGER)), stubber
        stubber.assert_no_pending_responses()


def read(activity: CloudWatchActivity, start: int = START, end: int = END) -> dict[str, QueueActivity]:
    return activity.read([ORDERS, PAYMENTS], start=start, end=end)


# --- the request and what it reads --------------------------------------------------------------


def test_one_request_reads_every_source_and_merges_its_metrics_into_one_minute_each(
    stubbed: tuple[CloudWatchActivity, Stubber],
) -> None:
    # GIVEN orders (with its function) received 4, deleted 3 and ran 2 times, failing once, in
    # minute 1, was throttled in minute 3; payments deleted 1 in minute 2; nothing else happened
    activity, stubber = stubbed
    results = [
        result("q0_received", {1: 4.0}),
        result("q0_deleted", {1: 3.0}),
        result("q0_invocations", {1: 2.0}),
        result("q0_errors", {1: 1.0}),
        result("q0_throttles", {3: 5.0}),
        result("q1_received", {2: 0.0}),  # SQS publishes both series of an active queue's minute
        result("q1_deleted", {2: 1.0}),
    ]
    stubber.add_response("get_metric_data", {"MetricDataResults": results}, request())

    # WHEN
    readings = read(activity)

    # THEN each queue has one Minute per minute with a datapoint; the quiet minutes are absent
    t = T0 + 60
    assert readings == {
        ORDERS.queue_url: QueueActivity(
            ORDERS.queue_url,
            START,
            END,
            (
                Minute(at=t, received=4, deleted=3, invocations=2, errors=1),
                Minute(at=t + 120, throttles=5),
            ),
        ),
        PAYMENTS.queue_url: QueueActivity(PAYMENTS.queue_url, START, END, (Minute(at=t + 60, deleted=1),)),
    }


def test_a_minute_with_one_of_the_queues_two_series_ends_the_reading_before_it(
    stubbed: tuple[CloudWatchActivity, Stubber],
) -> None:
    # GIVEN minute 3's receives are published and its deletes not yet (SQS publishes both, zeros
    # included, for every minute of an active queue)
    activity, stubber = stubbed
    results = [
        result("q0_received", {1: 2.0, 3: 1.0}),
        result("q0_deleted", {1: 2.0}),
        *quiet(*ORDERS_IDS[2:]),
        *quiet(*PAYMENTS_IDS),
    ]
    stubber.add_response("get_metric_data", {"MetricDataResults": results}, request())

    # WHEN
    orders = read(activity)[ORDERS.queue_url]

    # THEN the reading is complete up to minute 3 only: a receive is never read without its delete
    assert orders.complete_until == T0 + 180
    assert orders.minutes == (Minute(at=T0 + 60, received=2, deleted=2),)


def test_start_and_end_are_rounded_down_to_the_minute(stubbed: tuple[CloudWatchActivity, Stubber]) -> None:
    activity, stubber = stubbed
    stubber.add_response(
        "get_metric_data", {"MetricDataResults": quiet(*ORDERS_IDS, *PAYMENTS_IDS)}, request()
    )

    readings = read(activity, start=START + 59, end=END + 1)

    assert {(r.start, r.complete_until) for r in readings.values()} == {(START, END)}


def test_query_ids_are_what_get_metric_data_allows_and_each_metric_is_asked_once() -> None:
    queries = queries_of([ORDERS, PAYMENTS, WatchedQueue(ORDERS.queue_url + "-2", "other")])

    assert all(re.fullmatch(r"[a-z][a-zA-Z0-9_]*", query_id) for query_id in queries)
    assert len({(q.series, q.dimension_value, q.queue.queue_url) for q in queries.values()}) == 12


def test_pages_are_followed_and_a_metric_split_over_two_pages_is_merged(
    stubbed: tuple[CloudWatchActivity, Stubber],
) -> None:
    # GIVEN a first page with part of orders' receives (PartialData), the rest on the second
    activity, stubber = stubbed
    first = [
        result("q0_received", {0: 1.0}, status="PartialData"),
        result("q0_deleted", {0: 0.0, 4: 0.0}),
        *quiet(*ORDERS_IDS[2:]),
    ]
    second = [result("q0_received", {4: 2.0}), *quiet(*PAYMENTS_IDS)]
    stubber.add_response("get_metric_data", {"MetricDataResults": first, "NextToken": "page-2"}, request())
    stubber.add_response("get_metric_data", {"MetricDataResults": second}, request(token="page-2"))

    # WHEN
    readings = read(activity)

    # THEN
    assert readings[ORDERS.queue_url].minutes == (Minute(at=T0, received=1), Minute(at=T0 + 240, received=2))
    assert readings[PAYMENTS.queue_url].minutes == ()


def test_no_whole_minute_to_read_asks_nothing(stubbed: tuple[CloudWatchActivity, Stubber]) -> None:
    activity, _ = stubbed  # no response stubbed: a call would fail the test

    readings = read(activity, start=START + 1, end=START + 59)

    assert readings == {q.queue_url: QueueActivity(q.queue_url, START, START) for q in (ORDERS, PAYMENTS)}
    assert activity.read([], start=START, end=END) == {}


def test_an_end_before_the_start_is_a_clear_error(stubbed: tuple[CloudWatchActivity, Stubber]) -> None:
    with pytest.raises(ValueError, match="end .* before they start"):
        read(stubbed[0], start=END, end=START)


# --- what leaves a queue out ----------------------------------------------------------------------


BAD_VALUES = [
    pytest.param(math.nan, "Values[0]", "not finite: nan", id="nan"),
    pytest.param(math.inf, "Values[0]", "not finite: inf", id="infinity"),
    pytest.param(-1.0, "Values[0]", "negative: -1.0", id="negative"),
    pytest.param(2.5, "Values[0]", "not a whole number: 2.5", id="fraction"),
    pytest.param(MAX_MINUTE_COUNT + 1.0, "Values[0]", "more than 1,000,000,000", id="too-large"),
]


@pytest.mark.parametrize(("value", "field", "problem"), BAD_VALUES)
def test_a_bad_value_leaves_its_queue_out_with_one_warning(
    stubbed: tuple[CloudWatchActivity, Stubber],
    caplog: pytest.LogCaptureFixture,
    value: float,
    field: str,
    problem: str,
) -> None:
    # GIVEN orders' Errors holds a bad value, and its other metrics and payments' are fine
    activity, stubber = stubbed
    results = [*quiet(*ORDERS_IDS[:3]), result("q0_errors", {1: value}), *quiet("q0_throttles")]
    results += [result("q1_received", {1: 7.0}), *quiet("q1_deleted")]
    stubber.add_response("get_metric_data", {"MetricDataResults": results}, request())

    # WHEN
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        readings = read(activity)

    # THEN orders is left out, payments is read, and one warning names the queue, metric, field, problem
    assert list(readings) == [PAYMENTS.queue_url]
    assert_one_warning(caplog, ORDERS, "AWS/Lambda Errors", field, problem)


def assert_one_warning(
    caplog: pytest.LogCaptureFixture, queue: WatchedQueue, metric_label: str, field: str, problem: str
) -> None:
    [record] = caplog.records
    assert record.levelno == logging.WARNING and record.getMessage() == "queue metrics not usable"
    assert (record.queue_url, record.metric, record.field) == (queue.queue_url, metric_label, field)
    assert problem in record.problem


BAD_TIMES = [
    pytest.param(
        [at(1) + (at(1) - at(0)) / 2], [1.0], "Timestamps[0]", "not the start of a whole minute", id="off"
    ),
    pytest.param([at(-1)], [1.0], "Timestamps[0]", "outside the minutes read", id="before"),
    pytest.param([at(5)], [1.0], "Timestamps[0]", "outside the minutes read", id="at-end"),
    pytest.param([at(1), at(1)], [1.0, 2.0], "Timestamps[1]", "a second datapoint", id="repeated"),
    pytest.param([at(1), at(2)], [1.0], "Values", "1 values for 2 timestamps", id="unpaired"),
]


@pytest.mark.parametrize(("timestamps", "values", "field", "problem"), BAD_TIMES)
def test_a_bad_timestamp_leaves_its_queue_out(
    stubbed: tuple[CloudWatchActivity, Stubber],
    caplog: pytest.LogCaptureFixture,
    timestamps: list[datetime],
    values: list[float],
    field: str,
    problem: str,
) -> None:
    activity, stubber = stubbed
    bad = {**result("q1_deleted", {}), "Timestamps": timestamps, "Values": values}
    results = [*quiet(*ORDERS_IDS, "q1_received"), bad]
    stubber.add_response("get_metric_data", {"MetricDataResults": results}, request())

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        readings = read(activity)

    assert list(readings) == [ORDERS.queue_url]
    assert_one_warning(caplog, PAYMENTS, "AWS/SQS NumberOfMessagesDeleted", field, problem)


@pytest.mark.parametrize(
    ("pages", "problem"),
    [
        pytest.param(["Forbidden"], "Forbidden, not Complete", id="forbidden"),
        pytest.param(["InternalError"], "InternalError, not Complete", id="internal-error"),
        pytest.param(["PartialData"], "PartialData, not Complete, after the last page", id="partial-at-end"),
        pytest.param(["Forbidden", "Complete"], "Forbidden, not Complete", id="forbidden-sticks"),
    ],
)
def test_a_metric_cloudwatch_could_not_give_whole_leaves_its_queue_out(
    stubbed: tuple[CloudWatchActivity, Stubber],
    caplog: pytest.LogCaptureFixture,
    pages: list[str],
    problem: str,
) -> None:
    activity, stubber = stubbed
    for number, status in enumerate(pages, 1):
        page: dict[str, Any] = {"MetricDataResults": [result("q1_received", {}, status=status)]}
        if number == 1:
            page["MetricDataResults"] += quiet(*ORDERS_IDS, "q1_deleted")
        if number < len(pages):
            page["NextToken"] = f"page-{number + 1}"
        stubber.add_response("get_metric_data", page, request(token=f"page-{number}" if number > 1 else None))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        readings = read(activity)

    assert list(readings) == [ORDERS.queue_url]
    assert_one_warning(caplog, PAYMENTS, "AWS/SQS NumberOfMessagesReceived", "StatusCode", problem)


def test_a_metric_missing_from_the_response_leaves_its_queue_out_and_an_unknown_id_is_ignored(
    stubbed: tuple[CloudWatchActivity, Stubber], caplog: pytest.LogCaptureFixture
) -> None:
    activity, stubber = stubbed
    results = [*quiet(*ORDERS_IDS[:-1], *PAYMENTS_IDS), result("q9_received", {1: 1.0})]
    stubber.add_response("get_metric_data", {"MetricDataResults": results}, request())

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        readings = read(activity)

    assert list(readings) == [PAYMENTS.queue_url]
    assert_one_warning(
        caplog, ORDERS, "AWS/Lambda Throttles", "MetricDataResults", "no result for query q0_throttles"
    )


# --- failed calls and limits ----------------------------------------------------------------------


@pytest.mark.parametrize("code", ["Throttling", "AccessDenied", "InvalidParameterValue"])
def test_a_refused_call_is_an_aws_call_error(stubbed: tuple[CloudWatchActivity, Stubber], code: str) -> None:
    activity, stubber = stubbed
    stubber.add_client_error("get_metric_data", code, expected_params=request())

    with pytest.raises(AwsCallError, match=f"CloudWatch GetMetricData failed: .*{code}"):
        read(activity)


class RaisingClient:
    def get_metric_data(self, **_: Any) -> dict[str, Any]:
        raise EndpointConnectionError(endpoint_url="https://monitoring.eu-west-1.amazonaws.com")


class EndlessClient:
    def __init__(self) -> None:
        self.calls = 0

    def get_metric_data(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        return {"MetricDataResults": [], "NextToken": f"page-{self.calls + 1}"}


def test_an_unreachable_endpoint_is_an_aws_call_error() -> None:
    activity = CloudWatchActivity(RaisingClient(), logging.getLogger(LOGGER))

    with pytest.raises(AwsCallError, match="Could not connect to the endpoint URL"):
        read(activity)


def test_pages_that_never_end_are_an_aws_call_error_after_max_pages() -> None:
    client = EndlessClient()

    with pytest.raises(AwsCallError, match=f"more than {MAX_PAGES} pages"):
        read(CloudWatchActivity(client, logging.getLogger(LOGGER)))
    assert client.calls == MAX_PAGES


def sources(count: int, function: str | None) -> list[WatchedQueue]:
    return [
        WatchedQueue(f"https://sqs.eu-west-1.amazonaws.com/123456789012/q{i}", function) for i in range(count)
    ]


@pytest.mark.parametrize(("count", "function"), [(100, "consumer"), (250, None)])
def test_as_many_sources_as_500_metrics_hold_fit_one_request(count: int, function: str | None) -> None:
    CloudWatchActivity(RaisingClient(), logging.getLogger(LOGGER), watched=sources(count, function))


@pytest.mark.parametrize(("count", "function", "metrics"), [(101, "consumer", 505), (251, None, 502)])
def test_more_sources_than_one_request_holds_fail_at_construction_saying_what_to_do(
    count: int, function: str | None, metrics: int
) -> None:
    with pytest.raises(
        ValueError, match=f"{count} source queues takes {metrics} .* set QUEUE_METRICS to false"
    ):
        CloudWatchActivity(RaisingClient(), logging.getLogger(LOGGER), watched=sources(count, function))
