"""RedriverMonitoring: one CloudWatch dashboard and the alarms of one re-driver, with plain aws_cloudwatch.

What they read is in redriver_metrics.py; the alarms are in alarms.py, the dashboard's widgets in
dashboard.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sqs_redriver.cdk.alarms import age_alarm_threshold, build_alarms, email_topic
from sqs_redriver.cdk.dashboard import build_dashboard, consumer_widgets, dashboard_name
from sqs_redriver.cdk.redriver_metrics import Watched, service_name
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError

if TYPE_CHECKING:
    from sqs_redriver.cdk.redriver import SqsRedriver


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
            settings=settings,
            age_threshold=age_threshold,
            dlq_retention_seconds=dlq_retention_seconds,
        )
        self.alarms = build_alarms(self, watched, archive=archive, topic=self.alarm_topic)
        build_dashboard(self.dashboard, scope.node.path, watched)

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
        settings=redriver.settings,
        service=service_name(redriver.node.path),
        dlq_retention_seconds=dlq_retention_seconds,
        archive=redriver.archive is not None,
        alarm_email=alarm_email,
        alarm_topic=alarm_topic,
    )
