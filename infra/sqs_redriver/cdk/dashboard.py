"""A re-driver's CloudWatch dashboard: its name and widgets (RedriverMonitoring builds it, monitoring.py).

Rows, 24 units wide: the DLQ and the parking lot; the runs and the breaker; the re-drive function
and the source queues; the breaker's latest transitions from the function's logs; then a row per
consumer that grant_consumer names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from aws_cdk import Stack, Token
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from sqs_redriver.cdk.redriver_metrics import (
    BREAKER_HALF_OPEN,
    BREAKER_OPEN,
    BREAKER_STATE,
    CONTINUATIONS,
    PERIOD,
    RUN_COUNTS,
    RUN_PROBLEMS,
    Watched,
    depth,
    dlq_age,
    events_dropped,
    run_metric,
)

# The log line lambdas/sqs_redriver/runtime/act/breaker_writer.py writes on every change of state; Powertools
# puts the message and the extra keys (from, to, evidence, version) at the top of its JSON.
BREAKER_TRANSITION_MESSAGE = "breaker transition"
BREAKER_TRANSITIONS_SHOWN = 20
BREAKER_TRANSITIONS_TITLE = "Breaker transitions (latest first) and the evidence that moved them"


def dashboard_name(scope: Construct) -> str | None:
    """``<stack name>-<re-driver path in its stack>-<region>`` (dashboards are global to the
    account), when the stack's name is known at synth."""
    stack = Stack.of(scope)
    if Token.is_unresolved(stack.stack_name):
        return None
    return f"{_name_part(stack.stack_name, relative_path(scope))[:200]}-{stack.region}"


def _name_part(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", "-".join(parts))


def build_dashboard(dashboard: cw.Dashboard, title: str, watched: Watched) -> None:
    """The re-driver's rows, under a title."""
    dashboard.add_widgets(
        cw.TextWidget(markdown=f"# SQS re-driver {title}", width=24, height=1), *_queue_row(watched)
    )
    dashboard.add_widgets(*_run_row(watched))
    dashboard.add_widgets(*_function_row(watched))
    function = watched.function
    if isinstance(function, lambda_.Function):
        dashboard.add_widgets(breaker_transitions(function.log_group, watched.service))


def _queue_row(watched: Watched) -> list[cw.IWidget]:
    dlq = watched.dead_letter_queue
    return [
        _graph(
            "DLQ depth",
            [
                dlq.metric_approximate_number_of_messages_visible(label="visible"),
                dlq.metric_approximate_number_of_messages_not_visible(label="in flight (held by a run)"),
            ],
        ),
        _graph(
            "DLQ oldest message age (s)",
            [dlq_age(dlq)],
            annotations=[
                cw.HorizontalAnnotation(value=watched.age_threshold, label="alarm: retention - margin"),
                cw.HorizontalAnnotation(value=watched.dlq_retention_seconds, label="retention"),
            ],
        ),
        _graph("Parking lot depth", [depth(watched.parking_lot)]),
    ]


def _run_row(watched: Watched) -> list[cw.IWidget]:
    def metric(name: str, statistic: str) -> cw.Metric:
        return run_metric(watched.service, name, statistic)

    return [
        _graph("Messages per period", [metric(name, "Sum") for name in RUN_COUNTS]),
        _graph(
            "Breaker state (0 CLOSED, 1 HALF_OPEN, 2 OPEN)",
            [metric(BREAKER_STATE, "Maximum")],
            annotations=[
                cw.HorizontalAnnotation(value=BREAKER_HALF_OPEN, label="HALF_OPEN"),
                cw.HorizontalAnnotation(value=BREAKER_OPEN, label="OPEN"),
            ],
            y_max=BREAKER_OPEN,
        ),
        _graph("Run problems", [metric(name, "Sum") for name in (*RUN_PROBLEMS, CONTINUATIONS)]),
    ]


def _function_row(watched: Watched) -> list[cw.IWidget]:
    function, settings = watched.function, watched.settings
    timeout = function.timeout if isinstance(function, lambda_.Function) else None
    return [
        _graph(
            "Re-drive function: errors and throttles",
            [
                function.metric_errors(statistic="Sum", period=PERIOD),
                function.metric_throttles(statistic="Sum", period=PERIOD),
                events_dropped(function),
                function.metric_invocations(statistic="Sum", period=PERIOD),
            ],
        ),
        _graph(
            "Re-drive function: duration (ms)",
            [
                function.metric_duration(statistic="Average", period=PERIOD),
                function.metric_duration(statistic="Maximum", period=PERIOD),
            ],
            annotations=[cw.HorizontalAnnotation(value=timeout.to_milliseconds(), label="timeout")]
            if timeout
            else [],
        ),
        _graph(
            "Source queue depth",
            [
                queue.metric_approximate_number_of_messages_visible(label=f"source {index}")
                for index, queue in enumerate(watched.source_queues, 1)
            ],
            annotations=[
                cw.HorizontalAnnotation(
                    value=settings.source_backlog_limit, label="back-pressure: no re-drives above"
                )
            ]
            if settings.source_backlog_limit
            else [],
        ),
    ]


def breaker_transitions(log_group: logs.ILogGroup, service: str) -> cw.LogQueryWidget:
    """The latest breaker transitions with their evidence, a Logs Insights query over the re-drive
    function's log group (``service`` keeps out other functions' lines, should it be shared)."""
    return log_table(
        BREAKER_TRANSITIONS_TITLE,
        log_group,
        [
            "fields @timestamp as time, breaker, `from`, `to`, evidence, version",
            f"filter message = {json.dumps(BREAKER_TRANSITION_MESSAGE)} and service = {json.dumps(service)}",
            "sort @timestamp desc",
            f"limit {BREAKER_TRANSITIONS_SHOWN}",
        ],
    )


def log_table(title: str, log_group: logs.ILogGroup, query_lines: list[str]) -> cw.LogQueryWidget:
    """A dashboard row: a Logs Insights query over ``log_group``, shown as a table."""
    return cw.LogQueryWidget(
        title=title,
        log_group_names=[log_group.log_group_name],
        query_lines=query_lines,
        view=cw.LogQueryVisualizationType.TABLE,
        width=24,
        height=6,
    )


def consumer_widgets(function: lambda_.IFunction, queue: sqs.IQueue) -> list[cw.IWidget]:
    """A consumer's errors beside its queue's depth (grant_consumer adds them)."""
    name = relative_path(function)
    return [
        _graph(
            f"Consumer {name}: errors",
            [
                function.metric_errors(statistic="Sum", period=PERIOD),
                function.metric_invocations(statistic="Sum", period=PERIOD),
            ],
            width=12,
        ),
        _graph(
            f"Consumer {name}: its queue",
            [
                queue.metric_approximate_number_of_messages_visible(label="visible"),
                queue.metric_approximate_age_of_oldest_message(label="oldest age (s)"),
            ],
            width=12,
        ),
    ]


def relative_path(construct: IConstruct) -> str:
    """The construct's path inside its stack."""
    return construct.node.path.removeprefix(Stack.of(construct).node.path).strip("/")


def _graph(
    title: str,
    metrics: Sequence[cw.IMetric],
    *,
    annotations: Sequence[cw.HorizontalAnnotation] = (),
    y_max: float | None = None,
    width: int = 8,
) -> cw.GraphWidget:
    return cw.GraphWidget(
        title=title,
        left=list(metrics),
        left_annotations=list(annotations) or None,
        left_y_axis=cw.YAxisProps(min=0, max=y_max, show_units=False),
        width=width,
        height=6,
    )
