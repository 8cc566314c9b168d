"""The metrics the re-driver's dashboard and alarms read (dashboard.py, alarms.py), and what they watch.

The re-driver's own metrics are Powertools EMF (``METRICS_NAMESPACE``, one metric set per run), with
the single dimension Powertools adds, ``service``; the queues' and the function's are AWS's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from sqs_redriver.cdk.settings import RedriverSettings

METRICS_NAMESPACE = "DlqRedriver"
SERVICE_PREFIX = "dlq-redriver"
# What lambdas/sqs_redriver/runtime/handler.py publishes once per run (a test keeps the two in step).
RUN_COUNTS = ("Redriven", "Parked", "Returned", "Canaries", "Expiring")
RUN_PROBLEMS = ("RunErrors", "Unparkable", "Unarchived")
BREAKER_STATE = "BreakerState"
CONTINUATIONS = "Continuations"
BREAKER_HALF_OPEN, BREAKER_OPEN = 1, 2  # handler.BREAKER_STATE_VALUE
PERIOD = Duration.minutes(5)


@dataclass(frozen=True)
class Watched:
    """What one re-driver's dashboard shows and its alarms watch."""

    service: str  # its POWERTOOLS_SERVICE_NAME: the dimension of its run metrics, its logs' service
    function: lambda_.IFunction
    dead_letter_queue: sqs.IQueue
    parking_lot: sqs.IQueue
    source_queues: Sequence[sqs.IQueue]
    settings: RedriverSettings
    age_threshold: int  # the DLQ age alarm's threshold (s)
    dlq_retention_seconds: int


def service_name(redriver_path: str) -> str:
    """The re-driver's POWERTOOLS_SERVICE_NAME: the one dimension of its custom metrics, and the
    ``service`` of its logs. It names the construct, so two re-drivers of one account and region
    keep their metrics (and alarms) apart."""
    return f"{SERVICE_PREFIX}:{redriver_path}"


def run_metric(service: str, name: str, statistic: str, period: Duration = PERIOD) -> cw.Metric:
    """One of the re-driver's own run metrics (``service``: its POWERTOOLS_SERVICE_NAME)."""
    return cw.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": service},
        statistic=statistic,
        period=period,
    )


def dlq_age(queue: sqs.IQueue) -> cw.Metric:
    """The age of the queue's oldest message (the DLQ's: SQS deletes it at the retention)."""
    return queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=PERIOD)


def depth(queue: sqs.IQueue) -> cw.Metric:
    """The queue's visible messages, the period's maximum."""
    return queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=PERIOD)


def events_dropped(function: lambda_.IFunction) -> cw.Metric:
    """Asynchronous invocations (ticks, continuations) Lambda dropped."""
    return function.metric("AsyncEventsDropped", statistic="Sum", period=PERIOD)
