"""CloudWatchActivity reads what moto's CloudWatch holds: the request is one moto accepts, and its
per-minute sums come back as Minutes."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import boto3
from moto import mock_aws

from local_aws import ACCOUNT, REGION
from redriver.adapters.cloudwatch_activity import CloudWatchActivity
from redriver.model.activity import Minute, QueueActivity, WatchedQueue

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
