"""A re-driver's function (its code, environment and invocation) and the schedule that runs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration, Fn
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_

from sqs_redriver.cdk.consumer_metrics import ENV_CONSUMER_FUNCTION_NAMES
from sqs_redriver.cdk.functions import acknowledge, python_function
from sqs_redriver.cdk.redriver_metrics import METRICS_NAMESPACE, service_name
from sqs_redriver.cdk.validation import function_options
from sqs_redriver.protocol.settings import RESOURCE_ENV, URL_SEPARATOR

if TYPE_CHECKING:
    from sqs_redriver.cdk.redriver import SqsRedriver

HANDLER = "sqs_redriver.runtime.handler.lambda_handler"
# The re-drive function's code: the redriver package alone (boto3 is the runtime's, Powertools the layer's).
FUNCTION_PACKAGES = ("sqs_redriver.runtime", "sqs_redriver.protocol")
# How long Lambda keeps trying to deliver a tick or a continuation.
MAX_EVENT_AGE = Duration.minutes(10)


def redrive_environment(redriver: SqsRedriver) -> dict[str, str]:
    """The function's variables: its resources, its metrics' names and the settings."""
    sources = redriver.source_queues
    return {
        RESOURCE_ENV["dlq_url"]: redriver.dead_letter_queue.queue_url,
        RESOURCE_ENV["source_queue_url"]: Fn.join(URL_SEPARATOR, [queue.queue_url for queue in sources])
        if len(sources) > 1
        else sources[0].queue_url,
        RESOURCE_ENV["parking_lot_url"]: redriver.parking_lot.queue_url,
        RESOURCE_ENV["table_name"]: redriver.state_table.table_name,
        RESOURCE_ENV["archive_bucket"]: redriver.archive.bucket_name if redriver.archive else "",
        ENV_CONSUMER_FUNCTION_NAMES: "",  # grant_consumer fills it in
        "POWERTOOLS_SERVICE_NAME": service_name(redriver.node.path),
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        **redriver.settings.lambda_environment(),
    }


def build_redrive_function(
    redriver: SqsRedriver, function_props: lambda_.FunctionOptions | None
) -> lambda_.Function:
    """The function (``RedriveFunction``): one run at a time, no retry but the next scheduled run.

    ``function_props``: the user's further props, refused if they touch what the construct sets.
    """
    settings = redriver.settings
    environment = redrive_environment(redriver)
    function = python_function(
        redriver,
        "RedriveFunction",
        handler=HANDLER,
        packages=FUNCTION_PACKAGES,
        environment=environment,
        options=function_options(function_props, environment),
        timeout=Duration.seconds(settings.redriver_timeout_seconds),
        memory_size=settings.redriver_memory_mb,
        layer=redriver.powertools_layer,
        # One run at a time: the breaker and the per-message counts assume a single writer,
        # and a duplicate EventBridge delivery then waits instead of overlapping.
        reserved_concurrency=1,
    )
    # A failed run is retried by the next scheduled run, not immediately: an instant retry
    # would hit the same broken dependency and bypass the schedule's spacing.
    function.configure_async_invoke(retry_attempts=0, max_event_age=MAX_EVENT_AGE)
    for rule_id in (
        "Serverless::Serverless-LambdaDLQ",
        "Serverless::Serverless-LambdaAsyncFailureDestination",
    ):
        acknowledge(
            function,
            rule_id,
            "The only events are the schedule's tick and a run's continuation, which carry no "
            "data: a failed or dropped run loses nothing, and the next scheduled run is its retry.",
        )
    return function


def build_schedule(redriver: SqsRedriver) -> events.Rule:
    """The EventBridge rule (``Schedule``) that runs the function on ``settings.schedule``."""
    rule = events.Rule(
        redriver,
        "Schedule",
        description="Runs the smart DLQ re-driver",
        schedule=events.Schedule.expression(redriver.settings.schedule),
        targets=[targets.LambdaFunction(redriver.function, retry_attempts=2, max_event_age=MAX_EVENT_AGE)],
    )
    acknowledge(
        rule,
        "Serverless::Serverless-EventBusDLQ",
        "A scheduled tick that cannot be delivered carries no data; the next tick replaces it.",
    )
    return rule
