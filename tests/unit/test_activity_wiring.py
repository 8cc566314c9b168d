"""How a run gets its ActivitySource: from the settings and the clients, never at import."""

from __future__ import annotations

import logging

import boto3
import pytest

from sqs_redriver.core.clients import AwsClients, aws_clients
from sqs_redriver.runtime.settings import Settings
from sqs_redriver.runtime.wiring import compose_redriver

ACCOUNT_URL = "https://sqs.us-east-1.amazonaws.com/123456789012"


def settings(**overrides: object) -> Settings:
    values: dict[str, object] = {
        "dlq_url": f"{ACCOUNT_URL}/orders-dlq",
        "source_queue_url": f"{ACCOUNT_URL}/orders",
        "parking_lot_url": f"{ACCOUNT_URL}/orders-parking-lot",
        "table_name": "state",
    }
    return Settings(**{**values, **overrides})  # type: ignore[arg-type]


def clients(*, cloudwatch: bool) -> AwsClients:
    return AwsClients(
        sqs=boto3.client("sqs", region_name="us-east-1"),
        dynamodb=boto3.client("dynamodb", region_name="us-east-1"),
        cloudwatch=boto3.client("cloudwatch", region_name="us-east-1") if cloudwatch else None,
    )


def test_with_queue_metrics_on_and_a_client_the_run_reads_cloudwatch() -> None:
    redriver = compose_redriver(settings(), clients(cloudwatch=True), logger=logging.getLogger("t"))

    assert redriver.watch.enabled


@pytest.mark.parametrize(("queue_metrics", "client"), [(False, True), (True, False)])
def test_without_queue_metrics_or_without_a_client_the_run_reads_no_metrics(
    queue_metrics: bool, client: bool
) -> None:
    redriver = compose_redriver(settings(queue_metrics=queue_metrics), clients(cloudwatch=client))

    assert not redriver.watch.enabled


def test_sources_whose_metrics_do_not_fit_one_request_fail_when_the_redriver_is_composed() -> None:
    # 101 sources, each with its consumer function: 505 metrics, over GetMetricData's 500
    others = tuple(f"{ACCOUNT_URL}/orders-{index}" for index in range(100))
    too_many = settings(other_source_queue_urls=others, consumer_function_names=("consumer",) * 101)

    with pytest.raises(ValueError, match="101 source queues takes 505 CloudWatch metrics"):
        compose_redriver(too_many, clients(cloudwatch=True))


@pytest.mark.parametrize("wanted", [False, True])
def test_the_cloudwatch_client_is_created_only_when_queue_metrics_wants_it(wanted: bool) -> None:
    assert (aws_clients(cloudwatch=wanted).cloudwatch is not None) is wanted
