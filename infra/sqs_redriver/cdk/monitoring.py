"""RedriverMonitoring: one CloudWatch dashboard and the alarms of one re-driver, with plain aws_cloudwatch.

What they read is in redriver_metrics.py; the dashboard's widgets are in dashboard.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from aws_cdk import Aws, Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sqs_redriver.cdk.dashboard import Watched, build_dashboard, consumer_widgets, relative_path
from sqs_redriver.cdk.functions import acknowledge
from sqs_redriver.cdk.redriver_metrics import (
    BREAKER_OPEN,
    BREAKER_STATE,
    PERIOD,
    depth,
    dlq_age,
    events_dropped,
    run_metric,
    service_name,
)
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.protocol.sqs_limits import SQS_DEFAULT_RETENTION_SECONDS

if TYPE_CHECKING:
    from sqs_redriver.cdk.redriver import SqsRedriver

# "OPEN too long": OPEN reported in each of this many consecutive periods of at least a cooldown.
BREAKER_OPEN_PERIODS = 3
# CloudWatch refuses an alarm whose periods span more than a day.
MAX_EVALUATION_SECONDS = 86_400
_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3_600, "day": 86_400}


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
    ) -> None:
        super().__init__(scope, construct_id)
        self._service = service
        if alarm_email is not None and alarm_topic is not None:
            raise SettingsError("alarm_email and alarm_topic: pass one (subscribe the address to your topic)")
        age_threshold = dlq_retention_seconds - settings.expiry_margin_seconds
        if age_threshold <= 0:
            raise SettingsError(
                f"expiry_margin_seconds ({settings.expiry_margin_seconds}) must be shorter than the "
                f"dead_letter_queue's retention ({dlq_retention_seconds} s; pass dlq_retention for an "
                "imported queue)"
            )
        self.alarm_topic = alarm_topic or (self._email_topic(alarm_email) if alarm_email else None)
        self.dashboard = cw.Dashboard(
            self, "Dashboard", dashboard_name=_dashboard_name(scope), default_interval=Duration.days(1)
        )
        self.alarms: dict[str, cw.Alarm] = {}
        self._build_alarms(
            function, dead_letter_queue, parking_lot, settings, age_threshold, dlq_retention_seconds, archive
        )
        watched = Watched(
            service=service,
            function=function,
            dead_letter_queue=dead_letter_queue,
            parking_lot=parking_lot,
            source_queues=source_queues,
            settings=settings,
            age_threshold=age_threshold,
            dlq_retention_seconds=dlq_retention_seconds,
        )
        build_dashboard(self.dashboard, scope.node.path, watched)

    def _build_alarms(
        self,
        function: lambda_.IFunction,
        dead_letter_queue: sqs.IQueue,
        parking_lot: sqs.IQueue,
        settings: RedriverSettings,
        age_threshold: int,
        dlq_retention_seconds: int,
        archive: bool,
    ) -> None:
        self._alarm(
            "DlqOldestMessageAge",
            dlq_age(dead_letter_queue),
            threshold=age_threshold,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,  # SQS stops reporting idle empty queues
            description=(
                f"The DLQ's oldest message is {age_threshold} s old: retention ({dlq_retention_seconds} s) "
                "minus EXPIRY_MARGIN_SECONDS: SQS deletes it within the margin. The re-driver parks it "
                "(reason expiring) at its next scan or sweep (every half margin); why is the DLQ not "
                "drained (breaker OPEN, paused, run errors)?"
            ),
        )
        self._alarm(
            "ParkingLotNotEmpty",
            depth(parking_lot),
            threshold=1,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            description="Messages were parked: read them (the dlq-redriver attribute says why), fix or "
            "drop them. The lot keeps them 14 days.",
        )
        self._alarm(
            "BreakerOpenTooLong",
            self._run_metric(BREAKER_STATE, "Maximum", breaker_period(settings)),
            threshold=BREAKER_OPEN,
            evaluation_periods=BREAKER_OPEN_PERIODS,
            # A period without a run report (no run finished) neither raises nor clears it.
            treat_missing_data=cw.TreatMissingData.IGNORE,
            description=f"The breaker was OPEN in each of {BREAKER_OPEN_PERIODS} periods of at least a "
            "cooldown and a schedule tick: the consumer keeps failing re-driven messages. Fix the "
            "consumer or its dependency; the breaker closes itself on healthy canaries.",
        )
        self._alarm(
            "RedriverErrors",
            function.metric_errors(statistic="Sum", period=PERIOD),
            threshold=1,
            evaluation_periods=3,
            datapoints_to_alarm=2,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,  # no invocation, no datapoint
            description="Re-drive runs failed in 2 of the last 3 periods (each failed run is retried by "
            "the next tick only): read the function's logs.",
        )
        self._alarm(
            "RedriverEventsDropped",
            events_dropped(function),
            threshold=1,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            description="Lambda dropped a tick or a continuation (throttled past its 10-minute age, or "
            "a failed run): runs are being lost. Throttles alone are normal, a continuation waits "
            "for the run before it (reserved concurrency 1).",
        )
        for name in ("Unparkable", "Unarchived") if archive else ("Unparkable",):
            self._alarm(
                name,
                self._run_metric(name, "Sum"),
                threshold=1,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,  # no run, no datapoint
                description="The parking lot refused messages (size, attributes): they stay in the DLQ "
                "until its retention deletes them. Read the function's logs."
                if name == "Unparkable"
                else "Parked messages were not archived (S3 write failed): they are in the parking "
                "lot only. Check the bucket and the function's logs.",
            )

    def add_consumer(self, function: lambda_.IFunction, queue: sqs.IQueue) -> None:
        """Put a consumer's errors, beside its queue's depth, on the dashboard (from grant_consumer).

        Only for a consumer in this stack: its stack already depends on this one (the kit's
        environment), so a reference back would be a cycle.
        """
        if Stack.of(function) is not Stack.of(self):
            return
        self.dashboard.add_widgets(*consumer_widgets(function, queue))

    def _run_metric(self, name: str, statistic: str, period: Duration = PERIOD) -> cw.Metric:
        return run_metric(self._service, name, statistic, period)

    def _alarm(
        self,
        name: str,
        metric: cw.IMetric,
        *,
        threshold: float,
        treat_missing_data: cw.TreatMissingData,
        description: str,
        evaluation_periods: int = 1,
        datapoints_to_alarm: int | None = None,
    ) -> None:
        alarm = cw.Alarm(
            self,
            name,
            metric=metric,
            threshold=threshold,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            treat_missing_data=treat_missing_data,
            alarm_description=description,
        )
        if self.alarm_topic is not None:
            action = cw_actions.SnsAction(self.alarm_topic)
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)
        self.alarms[name] = alarm

    def _email_topic(self, email: str) -> sns.Topic:
        """An SSL-only topic encrypted with its own key: CloudWatch cannot use the AWS-managed
        alias/aws/sns key, so alarms would never reach a topic encrypted with it."""
        key = kms.Key(
            self,
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
        topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True)
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[cloudwatch],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:"
                        f"{Aws.ACCOUNT_ID}:alarm:*"
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
        settings=redriver.settings,
        service=service_name(redriver.node.path),
        dlq_retention_seconds=dlq_retention_seconds,
        archive=redriver.archive is not None,
        alarm_email=alarm_email,
        alarm_topic=alarm_topic,
    )


def alarm_retention_seconds(known: int | None, explicit: Duration | None) -> int:
    """The DLQ retention the age alarm counts from: the queue's (defined in this app), else
    ``explicit`` (``dlq_retention``), else SQS's default (4 days)."""
    if explicit is not None:
        seconds = int(explicit.to_seconds())
        if known is not None and seconds != known:
            raise SettingsError(
                f"dlq_retention ({seconds} s) contradicts the dead_letter_queue's retention ({known} s); "
                "omit it for a queue defined in this app"
            )
        return seconds
    return SQS_DEFAULT_RETENTION_SECONDS if known is None else known


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


def _dashboard_name(scope: Construct) -> str | None:
    """``<stack name>-<re-driver path in its stack>-<region>`` (dashboards are global to the
    account), when the stack's name is known at synth."""
    stack = Stack.of(scope)
    if Token.is_unresolved(stack.stack_name):
        return None
    return f"{_name_part(stack.stack_name, relative_path(scope))[:200]}-{stack.region}"


def _name_part(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", "-".join(parts))
