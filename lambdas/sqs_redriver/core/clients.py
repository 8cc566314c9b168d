"""The boto3 clients the re-driver uses, with its retry and timeout configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from sqs_redriver.protocol.sources import MAX_PROBE_SECONDS

if TYPE_CHECKING:
    from collections.abc import Callable

    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient


# Standard retry mode backs off on throttling. Short timeouts keep the worst call (3 attempts of
# 2 s connect + 5 s read, ~21 s) inside the run's time margin (TIME_MARGIN_SECONDS, default 30).
AWS_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=2, read_timeout=5)


@dataclass(frozen=True)
class AwsClients:
    """One SQS and one DynamoDB client, shared by every adapter (and by parallel batches), an S3
    client when parked messages are archived, and a CloudWatch client when consumers are judged by
    their queues' metrics (``queue_metrics``)."""

    sqs: SQSClient | Any
    dynamodb: DynamoDBClient | Any
    s3: Any = None
    cloudwatch: Any = None
    # A DLQ of another kind: the client of a target's service (lambda, sqs, sns, stepfunctions,
    # events) in the target's region, made on first use.
    delivery: Callable[[str, str], Any] | None = None


def lambda_client() -> LambdaClient | Any:
    """The client that starts continuations; created when the first one starts."""
    return boto3.client("lambda", config=AWS_CONFIG)


def aws_clients(*, s3: bool = False, cloudwatch: bool = False, delivery: bool = False) -> AwsClients:
    """Real clients from the standard credential chain; created on first use, never at import. The
    S3 client only with ``s3`` (an archive bucket is configured), the CloudWatch client only with
    ``cloudwatch`` (``queue_metrics`` is on), the targets' clients only with ``delivery`` (a DLQ of
    another kind): each costs cold start otherwise."""
    return AwsClients(
        sqs=boto3.client("sqs", config=AWS_CONFIG),
        dynamodb=boto3.client("dynamodb", config=AWS_CONFIG),
        s3=boto3.client("s3", config=AWS_CONFIG) if s3 else None,
        cloudwatch=boto3.client("cloudwatch", config=AWS_CONFIG) if cloudwatch else None,
        delivery=_delivery_clients() if delivery else None,
    )


# Lambda's client waits out a function's synchronous answer to a canary (MAX_PROBE_SECONDS and its
# initialisation), and never tries an invocation twice on its own: a retried RequestResponse would
# run the canary again.
LAMBDA_CONFIG = AWS_CONFIG.merge(
    Config(read_timeout=MAX_PROBE_SECONDS + 15, retries={"mode": "standard", "max_attempts": 1})
)


def _delivery_clients() -> Callable[[str, str], Any]:
    """One client per target service and region, made when a target first needs it."""
    made: dict[tuple[str, str], Any] = {}

    def client(service: str, region: str) -> Any:
        if (service, region) not in made:
            config = LAMBDA_CONFIG if service == "lambda" else AWS_CONFIG
            made[service, region] = boto3.client(service, region_name=region, config=config)  # type: ignore[call-overload]
        return made[service, region]

    return client
