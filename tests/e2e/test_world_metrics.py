"""The simulated world publishes its source queue's AWS/SQS and its consumer's AWS/Lambda metrics
into moto's CloudWatch as AWS would (a publication lag after each minute, whenever the clock moves,
a re-driver's wait included), or nothing at all when told to; the re-driver's CloudWatch calls
count among its requests."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from local_aws.consumers import Consumer
from local_aws.published_metrics import DELETED, ERRORS, INVOCATIONS, RECEIVED, SENT
from local_aws.simulated_time import SIM_EPOCH
from local_aws.simulation import World, open_world
from tests.support.factories import order_body

LAG = 120  # the world's default publication lag


def succeeds(event: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"batchItemFailures": []}


def raises(event: Mapping[str, Any]) -> Mapping[str, Any]:
    raise RuntimeError("downstream is down")


@contextmanager
def _world(consumer: Consumer, **options: Any) -> Iterator[World]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # moto: no CloudFormation support for QueuePolicy
        with open_world(lambda _host: consumer, **options) as world:
            yield world


def _sums(world: World, namespace: str, metric: str, dimension: str, value: str) -> list[float]:
    """GetMetricData's per-minute sums since the world started, oldest first, read as the
    re-driver would (its counted client)."""
    start = datetime(1970, 1, 1) + timedelta(seconds=SIM_EPOCH)
    dimensions = [{"Name": dimension, "Value": value}]
    stat = {
        "Metric": {"Namespace": namespace, "MetricName": metric, "Dimensions": dimensions},
        "Period": 60,
        "Stat": "Sum",
    }
    [result] = world.redriver_cloudwatch.get_metric_data(
        MetricDataQueries=[{"Id": "m", "MetricStat": stat}],
        StartTime=start,
        EndTime=start + timedelta(hours=2),
        ScanBy="TimestampAscending",
    )["MetricDataResults"]
    return list(result["Values"])


def _queue(world: World, metric: str) -> list[float]:
    return _sums(world, "AWS/SQS", metric, "QueueName", world.deployment.source_url.rsplit("/", 1)[-1])


def _function(world: World, metric: str) -> list[float]:
    return _sums(world, "AWS/Lambda", metric, "FunctionName", world.deployment.consumer.name)


def test_the_world_publishes_what_its_consumer_did() -> None:
    with _world(succeeds) as world:
        # GIVEN 25 orders sent at t=0, consumed in batches of the mapping's size within seconds
        world.send([order_body(f"o-{i}") for i in range(25)])

        # WHEN the world runs past the first minute's end plus the lag (before the first run)
        world.run(for_seconds=60 + LAG)

        # THEN CloudWatch holds minute 0's sums, as SQS and Lambda count them
        batches = -(-25 // world.deployment.consumer_batch_size)
        assert _queue(world, SENT) == [25.0]
        assert _queue(world, RECEIVED) == [25.0]
        assert _queue(world, DELETED) == [25.0]
        assert _function(world, INVOCATIONS) == [float(batches)]
        assert _function(world, ERRORS) == [0.0]
        assert world.requests == {"get_metric_data": 5}  # the reads above, counted as the re-driver's


def test_a_failing_consumers_invocations_are_errors() -> None:
    with _world(raises) as world:
        world.send([order_body("o-1")])

        world.run(for_seconds=60 + LAG)

        assert _function(world, INVOCATIONS) == [1.0]
        assert _function(world, ERRORS) == [1.0]
        assert _queue(world, DELETED) == [0.0]


def test_the_world_publishes_while_the_redriver_waits() -> None:
    with _world(succeeds) as world:
        world.send([order_body("o-1")])

        world.sleep(60 + LAG)

        assert world.metrics.sums(SENT, world.deployment.source_url.rsplit("/", 1)[-1]) == {SIM_EPOCH: 1}
        assert not world.journal.runs


def test_a_silent_world_leaves_cloudwatch_empty() -> None:
    with _world(succeeds, publish_metrics=False) as world:
        world.send([order_body("o-1")])

        world.run(for_seconds=10 * 60)

        assert world.journal.deliveries
        assert world.metrics.published == []
        assert _queue(world, SENT) == []
        assert _function(world, INVOCATIONS) == []
