"""The AWS/SQS and AWS/Lambda metrics the simulated world publishes (local_aws.published_metrics),
on moto and a simulated clock: per-minute sums as SQS and Lambda count them, visible only after the
minute's end plus the publication lag, nothing for an idle minute, naive-UTC minute starts, and
moto's GetMetricData reading them back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from freezegun import freeze_time
from moto import mock_aws
from moto.cloudwatch.models import cloudwatch_backends

from local_aws import ACCOUNT, REGION
from local_aws.clients import ClientProxy
from local_aws.published_metrics import (
    DELETED,
    ERRORS,
    INVOCATIONS,
    LAMBDA_NAMESPACE,
    RECEIVED,
    SENT,
    SQS_NAMESPACE,
    THROTTLES,
    MetricsOptions,
    PublishedMetrics,
)
from local_aws.simulated_time import SIM_EPOCH, UNFROZEN, SimulatedClock

FUNCTION = "orders-consumer"
QUEUE = "orders"
LAG = 120
MINUTE = 60


class PutRecorder(ClientProxy):
    """A CloudWatch client that keeps every PutMetricData call's arguments."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.puts: list[dict[str, Any]] = []

    def put_metric_data(self, **kwargs: Any) -> Any:
        self.puts.append(kwargs)
        return self._client.put_metric_data(**kwargs)


@dataclass
class Rig:
    clock: SimulatedClock
    cloudwatch: PutRecorder
    metrics: PublishedMetrics
    sqs: Any  # the counting queue client
    url: str

    def at(self, seconds: float) -> None:
        """Move the clock to ``seconds`` after SIM_EPOCH."""
        self.clock.move_to(SIM_EPOCH * 1000 + round(seconds * 1000))

    def send(self, n: int) -> None:
        for start in range(0, n, 10):
            entries = [{"Id": str(i), "MessageBody": f"m{start + i}"} for i in range(min(10, n - start))]
            self.sqs.send_message_batch(QueueUrl=self.url, Entries=entries)

    def read(self, metric: str, namespace: str = SQS_NAMESPACE, name: str = QUEUE) -> dict[datetime, float]:
        """GetMetricData's per-minute sums over the first hour (Period 60, Sum), oldest first."""
        dimension = "QueueName" if namespace == SQS_NAMESPACE else "FunctionName"
        start = datetime(1970, 1, 1) + timedelta(seconds=SIM_EPOCH)
        [result] = self.cloudwatch.get_metric_data(
            MetricDataQueries=[
                {
                    "Id": "m",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": namespace,
                            "MetricName": metric,
                            "Dimensions": [{"Name": dimension, "Value": name}],
                        },
                        "Period": 60,
                        "Stat": "Sum",
                    },
                }
            ],
            StartTime=start,
            EndTime=start + timedelta(hours=1),
            ScanBy="TimestampAscending",
        )["MetricDataResults"]
        return dict(zip(result["Timestamps"], result["Values"], strict=True))


def _rig(options: MetricsOptions) -> Iterator[Rig]:
    with mock_aws(), freeze_time(datetime.fromtimestamp(SIM_EPOCH, UTC), ignore=UNFROZEN) as freezer:
        clock = SimulatedClock(freezer, SIM_EPOCH * 1000)
        cloudwatch = PutRecorder(boto3.client("cloudwatch", region_name=REGION))
        metrics = PublishedMetrics(cloudwatch, clock, FUNCTION, options)
        sqs = metrics.queue_client(boto3.client("sqs", region_name=REGION))
        url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
        yield Rig(clock, cloudwatch, metrics, sqs, url)


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield from _rig(MetricsOptions(lag_seconds=LAG))


@pytest.fixture
def silent() -> Iterator[Rig]:
    yield from _rig(MetricsOptions(publish=False))


def utc(seconds: int) -> datetime:
    """The aware UTC datetime ``seconds`` after SIM_EPOCH (boto3 parses response times aware)."""
    return datetime.fromtimestamp(SIM_EPOCH + seconds, UTC)


def test_a_receive_counts_the_messages_it_returned(rig: Rig) -> None:
    rig.send(12)

    rig.sqs.receive_message(QueueUrl=rig.url, MaxNumberOfMessages=10)
    rig.at(MINUTE + LAG)

    assert rig.metrics.sums(RECEIVED, QUEUE) == {SIM_EPOCH: 10}


def test_a_delete_batch_counts_its_successful_entries(rig: Rig) -> None:
    rig.send(3)
    messages = rig.sqs.receive_message(QueueUrl=rig.url, MaxNumberOfMessages=10)["Messages"]
    entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]

    response = rig.sqs.delete_message_batch(
        QueueUrl=rig.url, Entries=[*entries, {"Id": "bad", "ReceiptHandle": "not-a-receipt-handle"}]
    )
    rig.at(MINUTE + LAG)

    assert len(response["Failed"]) == 1
    assert rig.metrics.sums(DELETED, QUEUE) == {SIM_EPOCH: 3}


def test_sends_count_every_successful_entry(rig: Rig) -> None:
    rig.sqs.send_message(QueueUrl=rig.url, MessageBody="one")
    rig.send(10)
    rig.at(MINUTE + LAG)

    assert rig.metrics.sums(SENT, QUEUE) == {SIM_EPOCH: 11}


def test_an_active_minute_publishes_its_zeros(rig: Rig) -> None:
    rig.send(1)
    rig.at(MINUTE + LAG)

    assert rig.read(RECEIVED) == {utc(0): 0.0}
    assert rig.read(DELETED) == {utc(0): 0.0}
    assert rig.read(SENT) == {utc(0): 1.0}


def test_nothing_is_visible_before_the_minutes_end_plus_the_lag(rig: Rig) -> None:
    rig.at(10)
    rig.send(1)

    rig.at(MINUTE + LAG - 0.001)

    assert rig.metrics.published == []
    assert rig.read(SENT) == {}


def test_everything_is_visible_from_the_minutes_end_plus_the_lag(rig: Rig) -> None:
    rig.at(10)
    rig.send(1)
    rig.at(MINUTE + LAG - 0.001)

    rig.at(MINUTE + LAG)

    assert rig.read(SENT) == {utc(0): 1.0}
    assert {(p.metric, p.value) for p in rig.metrics.published} == {(SENT, 1), (RECEIVED, 0), (DELETED, 0)}


def test_an_idle_minute_has_no_datapoint(rig: Rig) -> None:
    rig.send(2)  # minute 0
    rig.at(2 * MINUTE + 5)  # minute 1 idle; minute 2 active
    rig.send(3)

    rig.at(3 * MINUTE + LAG)

    assert rig.read(SENT) == {utc(0): 2.0, utc(2 * MINUTE): 3.0}
    assert rig.read(RECEIVED) == {utc(0): 0.0, utc(2 * MINUTE): 0.0}


def test_an_empty_receive_leaves_a_minute_idle(rig: Rig) -> None:
    rig.sqs.receive_message(QueueUrl=rig.url, MaxNumberOfMessages=10)

    rig.at(MINUTE + LAG)

    assert rig.metrics.published == []


def test_each_minute_is_published_once(rig: Rig) -> None:
    rig.send(4)
    rig.at(MINUTE + LAG)

    rig.at(10 * MINUTE)

    assert len(rig.cloudwatch.puts) == 1
    assert rig.read(SENT) == {utc(0): 4.0}


def test_the_consumer_functions_invocations_errors_and_throttles(rig: Rig) -> None:
    rig.metrics.invoked(error=False)
    rig.metrics.invoked(error=True)
    rig.at(MINUTE + 1)
    rig.metrics.invoked(error=False)

    rig.at(2 * MINUTE + LAG)

    def read(metric: str) -> dict[datetime, float]:
        return rig.read(metric, LAMBDA_NAMESPACE, FUNCTION)

    assert read(INVOCATIONS) == {utc(0): 2.0, utc(MINUTE): 1.0}
    assert read(ERRORS) == {utc(0): 1.0, utc(MINUTE): 0.0}
    assert read(THROTTLES) == {utc(0): 0.0, utc(MINUTE): 0.0}


def test_timestamps_are_naive_utc_minute_starts(rig: Rig) -> None:
    rig.at(MINUTE + 59.5)
    rig.send(1)
    rig.metrics.invoked(error=False)

    rig.at(2 * MINUTE + LAG)

    stamps = {d["Timestamp"] for put in rig.cloudwatch.puts for d in put["MetricData"]}
    assert stamps == {datetime(2026, 11, 22, 0, 1)}
    assert all(stamp.tzinfo is None for stamp in stamps)
    assert {p.minute for p in rig.metrics.published} == {SIM_EPOCH + MINUTE}
    stored = cloudwatch_backends[ACCOUNT][REGION].metric_data
    assert {(d.namespace, d.unit, d.timestamp.tzinfo) for d in stored} == {
        (SQS_NAMESPACE, "Count", None),
        (LAMBDA_NAMESPACE, "Count", None),
    }


def test_a_jittered_lag_stays_within_its_minute_and_repeats_for_a_seed() -> None:
    def visible(seed: int) -> list[int]:
        options = MetricsOptions(lag_seconds=LAG, lag_jitter_seconds=60, seed=seed)
        with freeze_time(datetime.fromtimestamp(SIM_EPOCH, UTC), ignore=UNFROZEN) as freezer:
            clock = SimulatedClock(freezer, SIM_EPOCH * 1000)
            metrics = PublishedMetrics(None, clock, FUNCTION, options)
            return [metrics.visible_at_ms(SIM_EPOCH + m * MINUTE) for m in range(30)]

    lags = [at - (SIM_EPOCH + (m + 1) * MINUTE) * 1000 for m, at in enumerate(visible(7))]

    assert all(LAG * 1000 <= lag < (LAG + 60) * 1000 for lag in lags)
    assert len(set(lags)) > 20  # drawn per minute
    assert visible(7) == visible(7)
    assert visible(7) != visible(8)


def test_a_silent_world_publishes_nothing(silent: Rig) -> None:
    silent.send(5)
    silent.sqs.receive_message(QueueUrl=silent.url, MaxNumberOfMessages=10)
    silent.metrics.invoked(error=True)

    silent.at(5 * MINUTE + LAG)

    assert silent.metrics.published == []
    assert silent.cloudwatch.puts == []
    assert silent.read(SENT) == {}


def test_a_negative_lag_is_refused() -> None:
    with pytest.raises(ValueError, match="lag"):
        MetricsOptions(lag_seconds=-1)
