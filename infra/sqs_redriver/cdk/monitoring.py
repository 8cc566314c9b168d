"""A re-driver's monitoring, with plain aws_cloudwatch: one CloudWatch dashboard and the alarms
(RedriverMonitoring); the metrics they read; the alarms' thresholds, and the topic they send to when
the user gives only an address; the dashboard's name and widgets.

The re-driver's own metrics are Powertools EMF (``METRICS_NAMESPACE``, one metric set per run), with
the single dimension Powertools adds, ``service`` (``functions.service_name``); the queues' and the
function's are AWS's.

The dashboard's rows, 24 units wide: the DLQ and the parking lot; the runs and the breaker; a
large drain's pace, workers and messages left (a re-driver that fans out to workers); the re-drive
function and the source queues (or each dead-letter source of another kind: a function's
errors and throttles, a rule's failed invocations, a topic's failed notifications); the breaker's
latest transitions from the function's logs; the operator's latest actions from the audit trail
(SqsRedriver adds them); then a row per consumer that grant_consumer names.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Arn, ArnFormat, Aws, Duration, Fn, RemovalPolicy, Stack, Token
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from sqs_redriver.cdk.dead_letters import AttachedSource
from sqs_redriver.cdk.functions import METRICS_NAMESPACE, acknowledge, service_name
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.protocol.limits import SQS_DEFAULT_RETENTION_SECONDS
from sqs_redriver.protocol.settings import fans_out
from sqs_redriver.protocol.sources import SourceKind

if TYPE_CHECKING:
    from sqs_redriver.cdk.redriver import SqsRedriver

# --- the monitoring of one re-driver --------------------------------------------------------------


class RedriverMonitoring(Construct):
    """A dashboard and alarms for one re-driver, sending to ``alarm_topic`` when there is one.

    Attributes: ``dashboard``, ``alarms`` (name -> alarm: ``DlqOldestMessageAge``,
    ``ParkingLotNotEmpty``, ``BreakerOpenTooLong``, ``RedriverErrors``, ``RedriverEventsDropped``,
    ``Unparkable``, and ``Unarchived`` with an archive), ``alarm_topic`` (the topic made for
    ``alarm_email``, the one passed, or None).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        dead_letter_queue: sqs.IQueue,
        parking_lot: sqs.IQueue,
        source_queues: Sequence[sqs.IQueue],
        settings: RedriverSettings,
        service: str,
        dlq_retention_seconds: int,
        archive: bool,
        alarm_email: str | None = None,
        alarm_topic: sns.ITopic | None = None,
        dead_letter_sources: Sequence[AttachedSource] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        if alarm_email is not None and alarm_topic is not None:
            raise SettingsError("alarm_email and alarm_topic: pass one (subscribe the address to your topic)")
        age_threshold = age_alarm_threshold(settings.expiry_margin_seconds, dlq_retention_seconds)
        self.alarm_topic = alarm_topic or (email_topic(self, alarm_email) if alarm_email else None)
        self.dashboard = cw.Dashboard(
            self, "Dashboard", dashboard_name=dashboard_name(scope), default_interval=Duration.days(1)
        )
        watched = Watched(
            service=service,
            function=function,
            dead_letter_queue=dead_letter_queue,
            parking_lot=parking_lot,
            source_queues=source_queues,
            dead_letter_sources=dead_letter_sources,
            settings=settings,
            age_threshold=age_threshold,
            dlq_retention_seconds=dlq_retention_seconds,
        )
        self.alarms = build_alarms(self, watched, archive=archive, topic=self.alarm_topic)
        self._watched = watched
        self._drain_shown = drains_in_workers(watched)
        build_dashboard(self.dashboard, scope.node.path, watched)

    def show_drains(self) -> None:
        """Add a large drain's row to the dashboard, once: its consumer now reports verdicts, so
        a large backlog fans out (grant_consumer)."""
        if not self._drain_shown:
            self.dashboard.add_widgets(*_drain_row(self._watched))
            self._drain_shown = True

    def add_consumer(self, function: lambda_.IFunction, queue: sqs.IQueue) -> None:
        """Put a consumer's errors, beside its queue's depth, on the dashboard (from grant_consumer).

        Only for a consumer in this stack: its stack already depends on this one (the kit's
        environment), so a reference back would be a cycle.
        """
        if Stack.of(function) is not Stack.of(self):
            return
        self.dashboard.add_widgets(*consumer_widgets(function, queue))


def monitor(
    redriver: SqsRedriver,
    *,
    on: bool,
    alarm_email: str | None,
    alarm_topic: sns.ITopic | None,
    dlq_retention_seconds: int,
) -> RedriverMonitoring | None:
    """The re-driver's monitoring, or None with ``on=False`` (then no alarm props either)."""
    if not on:
        if alarm_email is not None or alarm_topic is not None:
            raise SettingsError(
                "alarm_email and alarm_topic need monitoring=True: without it there are no alarms"
            )
        return None
    return RedriverMonitoring(
        redriver,
        "Monitoring",
        function=redriver.function,
        dead_letter_queue=redriver.dead_letter_queue,
        parking_lot=redriver.parking_lot,
        source_queues=redriver.source_queues,
        dead_letter_sources=redriver.dead_letter_sources,
        settings=redriver.settings,
        service=service_name(redriver.node.path),
        dlq_retention_seconds=dlq_retention_seconds,
        archive=redriver.archive is not None,
        alarm_email=alarm_email,
        alarm_topic=alarm_topic,
    )


# --- what the dashboard shows and the alarms watch ------------------------------------------------

# What lambdas/sqs_redriver/runtime/handler.py publishes once per run (a test keeps the two in step).
RUN_COUNTS = ("Redriven", "Parked", "Returned", "Canaries", "Expiring")
RUN_PROBLEMS = ("RunErrors", "Unparkable", "Unarchived")
BREAKER_STATE = "BreakerState"
CONTINUATIONS = "Continuations"
BREAKER_HALF_OPEN, BREAKER_OPEN = 1, 2  # handler.BREAKER_STATE_VALUE
# What a large drain's worker publishes with its run's (RunReport.drain): the pace of all its
# workers together (messages a second), the workers it wants, the DLQ's messages at its last step.
DRAIN_RATE, DRAIN_WORKERS, DRAIN_MESSAGES_LEFT = "DrainRate", "DrainWorkers", "DrainMessagesLeft"
DRAIN_TITLE = "Large drain"
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
    dead_letter_sources: Sequence[AttachedSource] = ()  # a DLQ of another kind's (no source queues)


def drains_in_workers(watched: Watched) -> bool:
    """Whether the re-driver fans a large drain out to workers (protocol.settings.fans_out)."""
    return fans_out(
        watched.settings.max_workers,
        dead_letter_sources=bool(watched.dead_letter_sources),
        consumer_verdicts=watched.settings.consumer_verdicts,
    )


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


# --- the alarms -----------------------------------------------------------------------------------

# "OPEN too long": OPEN reported in each of this many consecutive periods of at least a cooldown.
BREAKER_OPEN_PERIODS = 3
# CloudWatch refuses an alarm whose periods span more than a day.
MAX_EVALUATION_SECONDS = 86_400
_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3_600, "day": 86_400}
# The run problems that raise an alarm, and what it tells the operator.
RUN_PROBLEM_ALARMS = {
    "Unparkable": "The parking lot refused messages (size, attributes): they stay in the DLQ "
    "until its retention deletes them. Read the function's logs.",
    "Unarchived": "Parked messages were not archived (S3 write failed): they are in the parking "
    "lot only. Check the bucket and the function's logs.",
}


@dataclass(frozen=True)
class AlarmRule:
    """When an alarm fires: ``metric`` at or above ``threshold`` in ``datapoints_to_alarm`` (by
    default all) of ``evaluation_periods`` periods."""

    metric: cw.IMetric
    threshold: float
    treat_missing_data: cw.TreatMissingData
    description: str
    evaluation_periods: int = 1
    datapoints_to_alarm: int | None = None


def build_alarms(
    scope: Construct, watched: Watched, *, archive: bool, topic: sns.ITopic | None
) -> dict[str, cw.Alarm]:
    """The re-driver's alarms by name (``DlqOldestMessageAge``, ``ParkingLotNotEmpty``,
    ``BreakerOpenTooLong``, ``RedriverErrors``, ``RedriverEventsDropped``, ``Unparkable``, and
    ``Unarchived`` with an archive), each sending its ALARM and OK to ``topic`` when there is one."""
    rules = {
        **_queue_alarms(watched),
        **_breaker_alarms(watched),
        **_function_alarms(watched.function),
        **_run_problem_alarms(watched.service, archive),
    }
    return {name: _alarm(scope, name, rule, topic) for name, rule in rules.items()}


def _queue_alarms(watched: Watched) -> dict[str, AlarmRule]:
    threshold, retention = watched.age_threshold, watched.dlq_retention_seconds
    return {
        "DlqOldestMessageAge": AlarmRule(
            dlq_age(watched.dead_letter_queue),
            threshold=threshold,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,  # SQS stops reporting idle empty queues
            description=(
                f"The DLQ's oldest message is {threshold} s old: retention ({retention} s) "
                "minus EXPIRY_MARGIN_SECONDS: SQS deletes it within the margin. The re-driver parks it "
                "(reason expiring) at its next scan or sweep (every half margin); why is the DLQ not "
                "drained (breaker OPEN, paused, run errors)?"
            ),
        ),
        "ParkingLotNotEmpty": AlarmRule(
            depth(watched.parking_lot),
            threshold=1,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            description="Messages were parked: read them (the dlq-redriver attribute says why), fix or "
            "drop them. The lot keeps them 14 days.",
        ),
    }


def _breaker_alarms(watched: Watched) -> dict[str, AlarmRule]:
    return {
        "BreakerOpenTooLong": AlarmRule(
            run_metric(watched.service, BREAKER_STATE, "Maximum", breaker_period(watched.settings)),
            threshold=BREAKER_OPEN,
            evaluation_periods=BREAKER_OPEN_PERIODS,
            # A period without a run report (no run finished) neither raises nor clears it.
            treat_missing_data=cw.TreatMissingData.IGNORE,
            description=f"The breaker was OPEN in each of {BREAKER_OPEN_PERIODS} periods of at least a "
            "cooldown and a schedule tick: the consumer keeps failing re-driven messages. Fix the "
            "consumer or its dependency; the breaker closes itself on healthy canaries.",
        ),
    }


def _function_alarms(function: lambda_.IFunction) -> dict[str, AlarmRule]:
    return {
        "RedriverErrors": AlarmRule(
            function.metric_errors(statistic="Sum", period=PERIOD),
            threshold=1,
            evaluation_periods=3,
            datapoints_to_alarm=2,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,  # no invocation, no datapoint
            description="Re-drive runs failed in 2 of the last 3 periods (each failed run is retried by "
            "the next tick only): read the function's logs.",
        ),
        "RedriverEventsDropped": AlarmRule(
            events_dropped(function),
            threshold=1,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            description="Lambda dropped a tick, a continuation or a drain's worker (throttled past its "
            "10-minute age, or a failed run): runs are being lost. Throttles alone are normal: a "
            "run waits while the function's reserved concurrency is in use (MAX_WORKERS + 1 with "
            "a large drain, whose workers fill MAX_WORKERS of it).",
        ),
    }


def _run_problem_alarms(service: str, archive: bool) -> dict[str, AlarmRule]:
    names = ("Unparkable", "Unarchived") if archive else ("Unparkable",)
    return {
        name: AlarmRule(
            run_metric(service, name, "Sum"),
            threshold=1,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,  # no run, no datapoint
            description=RUN_PROBLEM_ALARMS[name],
        )
        for name in names
    }


def _alarm(scope: Construct, name: str, rule: AlarmRule, topic: sns.ITopic | None) -> cw.Alarm:
    alarm = cw.Alarm(
        scope,
        name,
        metric=rule.metric,
        threshold=rule.threshold,
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=rule.evaluation_periods,
        datapoints_to_alarm=rule.datapoints_to_alarm,
        treat_missing_data=rule.treat_missing_data,
        alarm_description=rule.description,
    )
    if topic is not None:
        action = cw_actions.SnsAction(topic)
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)
    return alarm


def email_topic(scope: Construct, email: str) -> sns.Topic:
    """A topic (``AlarmTopic``) with ``email`` subscribed, SSL-only and encrypted with its own key
    (``AlarmKey``): CloudWatch cannot use the AWS-managed alias/aws/sns key, so alarms would never
    reach a topic encrypted with it."""
    key = kms.Key(
        scope,
        "AlarmKey",
        description="Encrypts the re-driver's alarm topic",
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.DESTROY,
        pending_window=Duration.days(7),
    )
    cloudwatch = iam.ServicePrincipal("cloudwatch.amazonaws.com")
    key.add_to_resource_policy(
        iam.PolicyStatement(
            principals=[cloudwatch],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"],  # a key policy's resource is the key itself
            conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
        )
    )
    topic = sns.Topic(scope, "AlarmTopic", master_key=key, enforce_ssl=True)
    topic.add_to_resource_policy(
        iam.PolicyStatement(
            principals=[cloudwatch],
            actions=["sns:Publish"],
            resources=[topic.topic_arn],
            conditions={
                "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                "ArnLike": {
                    "aws:SourceArn": f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"
                },
            },
        )
    )
    subscription = topic.add_subscription(subscriptions.EmailSubscription(email))
    acknowledge(
        subscription,
        "Serverless::Serverless-SNSRedrivePolicy",
        "An email subscription: SNS retries delivery itself, and a DLQ of undelivered alarm mails "
        "would be one more queue nobody reads. A lost mail loses no state: the alarm stays in "
        "ALARM on the dashboard and in CloudWatch.",
    )
    return topic


def alarm_retention_seconds(known: int | None, explicit: Duration | None) -> int:
    """The DLQ retention the age alarm counts from: the queue's (defined in this app), else
    ``explicit`` (``dlq_retention``), else SQS's default (4 days). A contradiction between the two,
    or a margin not shorter than it, is refused at synth with the wiring (validation.py)."""
    if known is not None:
        return known
    return SQS_DEFAULT_RETENTION_SECONDS if explicit is None else int(explicit.to_seconds())


def age_alarm_threshold(expiry_margin_seconds: int, dlq_retention_seconds: int) -> int:
    """The DLQ's oldest-message age that raises ``DlqOldestMessageAge``: retention minus margin
    (at least a minute while synth refuses a margin that is not shorter than the retention)."""
    return max(dlq_retention_seconds - expiry_margin_seconds, 60)


def schedule_seconds(expression: str) -> int | None:
    """The interval of a ``rate(...)`` schedule; None for ``cron(...)``."""
    match = _RATE.match(expression)
    if match is None:
        return None
    return int(match[1]) * _UNIT_SECONDS[match[2].rstrip("s")]


def breaker_period(settings: RedriverSettings) -> Duration:
    """A period holding at least one cooldown and one run (cron: 5 minutes), in whole minutes;
    at most a third of a day, so the alarm's periods fit CloudWatch's one-day limit."""
    tick = schedule_seconds(settings.schedule) or int(PERIOD.to_seconds())
    seconds = max(settings.breaker_cooldown_seconds, tick, 60)
    minutes = min(math.ceil(seconds / 60), MAX_EVALUATION_SECONDS // 60 // BREAKER_OPEN_PERIODS)
    return Duration.minutes(minutes)


# --- the dashboard --------------------------------------------------------------------------------

# The log line lambdas/sqs_redriver/core/breaker.py writes on every change of state; Powertools
# puts the message and the extra keys (from, to, evidence, version) at the top of its JSON.
BREAKER_TRANSITION_MESSAGE = "breaker transition"
BREAKER_TRANSITIONS_SHOWN = 20
BREAKER_TRANSITIONS_TITLE = "Breaker transitions (latest first) and the evidence that moved them"
AUDIT_ACTIONS_SHOWN = 20
AUDIT_TITLE = "Operator actions (latest first): who, what, how many"


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
    if drains_in_workers(watched):
        dashboard.add_widgets(*_drain_row(watched))
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


def _drain_row(watched: Watched) -> list[cw.IWidget]:
    """A large drain's progress, per period: the highest pace and workers, the fewest messages left
    (the latest, while the DLQ drains)."""
    settings = watched.settings

    def metric(name: str, statistic: str) -> cw.Metric:
        return run_metric(watched.service, name, statistic)

    return [
        _graph(
            f"{DRAIN_TITLE}: rate (messages/s, all workers together)",
            [metric(DRAIN_RATE, "Maximum")],
            annotations=[cw.HorizontalAnnotation(value=settings.max_drain_rate, label="MAX_DRAIN_RATE")],
        ),
        _graph(
            f"{DRAIN_TITLE}: workers wanted",
            [metric(DRAIN_WORKERS, "Maximum")],
            annotations=[cw.HorizontalAnnotation(value=settings.max_workers, label="MAX_WORKERS")],
        ),
        _graph(
            f"{DRAIN_TITLE}: messages left in the DLQ",
            [metric(DRAIN_MESSAGES_LEFT, "Minimum")],
            annotations=[
                cw.HorizontalAnnotation(
                    value=settings.fan_out_backlog, label="FAN_OUT_BACKLOG: workers above"
                )
            ],
        ),
    ]


def _function_row(watched: Watched) -> list[cw.IWidget]:
    function = watched.function
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
        *_source_widgets(watched),
    ]


# What a dead-letter source's graph shows of a rule and of a subscription's topic (AWS/Events, AWS/SNS).
RULE_FAILURES = ("FailedInvocations", "InvocationsSentToDlq")
TOPIC_FAILURES = ("NumberOfNotificationsFailed", "NumberOfNotificationsRedrivenToDlq")


def _source_widgets(watched: Watched) -> list[cw.IWidget]:
    """The source queues' depth, or a graph of each dead-letter source of another kind."""
    settings = watched.settings
    if not watched.source_queues:
        return [dead_letter_source_widget(attached) for attached in watched.dead_letter_sources]
    return [
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


def dead_letter_source_widget(attached: AttachedSource) -> cw.GraphWidget:
    """How often the source fails its target: a function's errors and throttles, a rule's failed
    invocations, a subscription's topic's failed notifications (with what went to the DLQ)."""
    origin, source = attached.origin, attached.source
    if source.kind is SourceKind.FUNCTION:
        assert isinstance(origin, lambda_.Function)
        return _graph(
            f"Function {relative_path(origin)}: errors and throttles",
            [
                origin.metric_errors(statistic="Sum", period=PERIOD),
                origin.metric_throttles(statistic="Sum", period=PERIOD),
            ],
        )
    if source.kind is SourceKind.RULE_TARGET:
        assert isinstance(origin, events.Rule)
        return _graph(
            f"Rule {relative_path(origin)}: failed invocations",
            [_service_metric("AWS/Events", name, rule_dimensions(origin)) for name in RULE_FAILURES],
        )
    topic = {"TopicName": Arn.split(source.topic_arn, ArnFormat.NO_RESOURCE_NAME).resource}
    return _graph(
        f"Topic of {relative_path(origin)}: failed notifications",
        [_service_metric("AWS/SNS", name, topic) for name in TOPIC_FAILURES],
    )


def rule_dimensions(rule: events.Rule) -> dict[str, str]:
    """A rule's metrics' dimensions: its name, and its bus's when that is not the default bus.

    The name is the last part of the rule's ARN (``rule/[bus/]name``): on a custom bus its Ref is
    ``bus|name``, which names no metric."""
    cfn = rule.node.default_child
    assert isinstance(cfn, events.CfnRule)
    bus = cfn.event_bus_name if cfn.event_bus_name != "default" else None
    name = cfn.name if cfn.name and not Token.is_unresolved(cfn.name) else None
    dimensions = {"RuleName": name or Fn.select(1 if bus is None else 2, Fn.split("/", rule.rule_arn))}
    if bus is not None:
        dimensions["EventBusName"] = bus if Token.is_unresolved(bus) else bus.rsplit("/", 1)[-1]
    return dimensions


def _service_metric(namespace: str, name: str, dimensions: dict[str, str]) -> cw.Metric:
    return cw.Metric(
        namespace=namespace, metric_name=name, dimensions_map=dimensions, statistic="Sum", period=PERIOD
    )


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


def audit_widget(log_group: logs.ILogGroup) -> cw.LogQueryWidget:
    """The latest operator actions on the dashboard: their ends (with the count), newest first; an
    action begun and never ended shows as its start."""
    return log_table(
        AUDIT_TITLE,
        log_group,
        [
            "fields @timestamp as time, who, action, outcome, count, details.reason as reason, phase",
            f"filter phase = {json.dumps('ended')} or phase = {json.dumps('begun')}",
            "sort @timestamp desc",
            "dedup id",
            f"limit {AUDIT_ACTIONS_SHOWN}",
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
