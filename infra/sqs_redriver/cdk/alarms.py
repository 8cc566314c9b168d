"""The alarms of one re-driver (RedriverMonitoring makes them, monitoring.py), their thresholds, and
the topic they send to when the user gives only an address.

What each alarm reads is in redriver_metrics.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from sqs_redriver.cdk.functions import acknowledge
from sqs_redriver.cdk.redriver_metrics import (
    BREAKER_OPEN,
    BREAKER_STATE,
    PERIOD,
    Watched,
    depth,
    dlq_age,
    events_dropped,
    run_metric,
)
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.protocol.limits import SQS_DEFAULT_RETENTION_SECONDS

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
            description="Lambda dropped a tick or a continuation (throttled past its 10-minute age, or "
            "a failed run): runs are being lost. Throttles alone are normal, a continuation waits "
            "for the run before it (reserved concurrency 1).",
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


def age_alarm_threshold(expiry_margin_seconds: int, dlq_retention_seconds: int) -> int:
    """The DLQ's oldest-message age that raises ``DlqOldestMessageAge``: retention minus margin."""
    threshold = dlq_retention_seconds - expiry_margin_seconds
    if threshold <= 0:
        raise SettingsError(
            f"expiry_margin_seconds ({expiry_margin_seconds}) must be shorter than the "
            f"dead_letter_queue's retention ({dlq_retention_seconds} s; pass dlq_retention for an "
            "imported queue)"
        )
    return threshold


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
