"""CloudWatchActivity reads what moto's CloudWatch holds: the request is one moto accepts, and its
per-minute sums come back as Minutes."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import boto3
from moto import mock_aws

from local_aws import ACCOUNT, REGION
from local_aws.compose import local_redriver
from sqs_redriver.runtime.consumer_health import Minute, QueueActivity, WatchedQueue
from sqs_redriver.runtime.consumer_metrics import CloudWatchActivity
from tests.support.aws import Aws, make_settings

T0 = 1_795_000_020  # a minute's start
ORDERS = WatchedQueue(f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/orders", "orders-consumer")
IDLE = WatchedQueue(f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/idle")


def naive_utc(epoch: int) -> datetime:
    """How to put a datapoint into moto: one timezone-aware timestamp breaks every later read."""
    return datetime.fromtimestamp(epoch, tz=UTC).replace(tzinfo=None)


def test_the_sums_moto_holds_come_back_as_minutes_of_their_queue() -> None:
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name=REGION)
        # GIVEN orders received 3 + 2 messages in minute 1 (two datapoints: one sum), deleted 4 in
        # minute 1, and its function failed once in minute 2; "idle" published nothing
        for namespace, name, dimension, value, seconds in (
            ("AWS/SQS", "NumberOfMessagesReceived", ("QueueName", "orders"), 3, 60),
            ("AWS/SQS", "NumberOfMessagesReceived", ("QueueName", "orders"), 2, 90),
            ("AWS/SQS", "NumberOfMessagesDeleted", ("QueueName", "orders"), 4, 60),
            ("AWS/Lambda", "Errors", ("FunctionName", "orders-consumer"), 1, 120),
            # outside the minutes read: before the start, and at the end
            ("AWS/SQS", "NumberOfMessagesDeleted", ("QueueName", "orders"), 9, -60),
            ("AWS/SQS", "NumberOfMessagesDeleted", ("QueueName", "orders"), 9, 300),
        ):
            cloudwatch.put_metric_data(
                Namespace=namespace,
                MetricData=[
                    {
                        "MetricName": name,
                        "Dimensions": [{"Name": dimension[0], "Value": dimension[1]}],
                        "Timestamp": naive_utc(T0 + seconds),
                        "Value": value,
                    }
                ],
            )

        # WHEN the minutes [T0, T0 + 5 min) are read
        readings = CloudWatchActivity(cloudwatch, logging.getLogger("moto-activity")).read(
            [ORDERS, IDLE], start=T0, end=T0 + 300
        )

    # THEN
    end = T0 + 300
    assert readings == {
        ORDERS.queue_url: QueueActivity(
            ORDERS.queue_url,
            T0,
            end,
            (Minute(at=T0 + 60, received=5, deleted=4), Minute(at=T0 + 120, errors=1)),
        ),
        IDLE.queue_url: QueueActivity(IDLE.queue_url, T0, end),
    }


class Recorded:
    """A client that passes calls through and keeps each GetMetricData request."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.requests: list[dict[str, Any]] = []

    def get_metric_data(self, **request: Any) -> Any:
        self.requests.append(request)
        return self.client.get_metric_data(**request)


def test_the_composed_redriver_reads_its_sources_and_their_functions_up_to_the_configured_lag(
    aws: Aws,
) -> None:
    # GIVEN a re-driver composed with a CloudWatch client, its consumer named, a lag of 5 minutes
    cloudwatch = Recorded(boto3.client("cloudwatch", region_name=REGION))
    settings = make_settings(aws, consumer_function_names=("orders-consumer",), metrics_lag_seconds=300)
    now = T0 + 17
    redriver = local_redriver(
        settings, sqs=aws.sqs, dynamodb=aws.dynamodb, s3=aws.s3, cloudwatch=cloudwatch, clock=lambda: now
    )

    # WHEN its watch reads twice in one run
    redriver.watch.begin_run()
    redriver.watch.signals()
    redriver.watch.signals()

    # THEN one request, for the source's queue and function metrics, ending 5 whole minutes ago
    [request] = cloudwatch.requests
    assert request["EndTime"] == datetime.fromtimestamp(T0 - 300, tz=UTC)
    assert {
        (query["Id"], query["MetricStat"]["Metric"]["Dimensions"][0]["Value"])
        for query in request["MetricDataQueries"]
    } == {
        ("q0_received", "orders"),
        ("q0_deleted", "orders"),
        ("q0_invocations", "orders-consumer"),
        ("q0_errors", "orders-consumer"),
        ("q0_throttles", "orders-consumer"),
    }
