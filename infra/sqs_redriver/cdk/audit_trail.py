"""The audit trail of operator actions: a CloudWatch Logs log group the operator's tool appends to
(two events per action: begun and ended; see the console's audit.py), kept for ``audit_retention``.

Logs rather than the state table: an operator who may write the table (pause, group records) could
rewrite a record there, but may only append to a log group (no DeleteLogEvents exists, and the
operator's policy grants no DeleteLogGroup or retention change)."""

from __future__ import annotations

import json

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_logs as logs
from constructs import Construct

from sqs_redriver.cdk.dashboard import log_table
from sqs_redriver.cdk.settings import SettingsError

AUDIT_RETENTION = Duration.days(365)
# The retention periods CloudWatch Logs offers, in days.
RETENTION_DAYS = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
    2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}
AUDIT_ACTIONS_SHOWN = 20
AUDIT_TITLE = "Operator actions (latest first): who, what, how many"


def audit_retention_days(retention: Duration) -> logs.RetentionDays:
    """The log group's retention for ``audit_retention``; SettingsError unless CloudWatch Logs
    offers that many days."""
    days = retention.to_days(integral=False)
    if days not in RETENTION_DAYS:
        allowed = ", ".join(str(d) for d in RETENTION_DAYS)
        raise SettingsError(
            f"audit_retention: {days:g} days is not a retention CloudWatch Logs offers; one of {allowed} days"
        )
    return RETENTION_DAYS[int(days)]


def build_audit_log(scope: Construct, retention: Duration, removal_policy: RemovalPolicy) -> logs.LogGroup:
    """The log group (``AuditLog``) of the operator's actions. CloudWatch Logs encrypts it at rest."""
    return logs.LogGroup(
        scope, "AuditLog", retention=audit_retention_days(retention), removal_policy=removal_policy
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
