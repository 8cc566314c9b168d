"""The re-driver's dashboard and alarms: on by default, sending to a topic when asked, off on request."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Validations
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template
from aws_lambda_powertools import Logger
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from app import STACK_NAME as STACK
from app import build_app
from sqs_redriver.cdk.functions import METRICS_NAMESPACE, RUNTIME, package_folder
from sqs_redriver.cdk.monitoring import (
    BREAKER_STATE,
    BREAKER_TRANSITION_MESSAGE,
    BREAKER_TRANSITIONS_TITLE,
    CONTINUATIONS,
    DRAIN_MESSAGES_LEFT,
    DRAIN_RATE,
    DRAIN_TITLE,
    DRAIN_WORKERS,
    RUN_COUNTS,
    RUN_PROBLEMS,
    alarm_retention_seconds,
    breaker_period,
    schedule_seconds,
)
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.cdk.stack import RedriverStack
from sqs_redriver.core.breaker import Breaker, BreakerWriter, Evidence
from tests.support.fakes import FakeStateStore
from tests.support.templates import logical_id

HANDLER = package_folder("sqs_redriver.runtime") / "handler.py"
SOURCE_ARN = "arn:aws:sqs:eu-west-1:123456789012:orders"
DLQ_ARN = "arn:aws:sqs:eu-west-1:123456789012:orders-dlq"
DAY = 86_400


@pytest.fixture(scope="module")
def default_stack(tmp_path_factory: pytest.TempPathFactory) -> RedriverStack:
    app = build_app(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    found = app.node.find_child(STACK)
    assert isinstance(found, RedriverStack)
    return found


@pytest.fixture(scope="module")
def default_template(default_stack: RedriverStack) -> Template:
    return Template.from_stack(default_stack)


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cdk.App]:
    """One app, checked by both nag packs: an imported queue pair with an email topic and tuned
    settings, one with the user's topic, one with monitoring off."""
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("variants")))
    email = cdk.Stack(app, "Email")
    SqsRedriver.from_queue_arns(
        email,
        "Redriver",
        **queue_arns("email"),
        settings=RedriverSettings(schedule="rate(1 minute)", breaker_cooldown_seconds=1_200),
        alarm_email="ops@example.com",
        dlq_retention=cdk.Duration.days(7),
    )
    users = cdk.Stack(app, "UsersTopic")
    # the user's topic, compliant itself: encrypted with a key CloudWatch may use, SSL only
    topic = sns.Topic(
        users, "OnCall", master_key=kms.Key(users, "OnCallKey", enable_key_rotation=True), enforce_ssl=True
    )
    SqsRedriver.from_queue_arns(users, "Redriver", **queue_arns("users"), alarm_topic=topic)
    off = cdk.Stack(app, "Off")
    SqsRedriver.from_queue_arns(off, "Redriver", **queue_arns("off"), monitoring=False)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app))
    yield app


def queue_arns(name: str) -> dict[str, str]:
    """An imported queue pair of its own (one re-driver per DLQ in an app)."""
    return {"source_queue_arn": f"{SOURCE_ARN}-{name}", "dead_letter_queue_arn": f"{DLQ_ARN}-{name}"}


def template_of(app: cdk.App, stack_id: str) -> Template:
    stack = app.node.find_child(stack_id)
    assert isinstance(stack, cdk.Stack)
    return Template.from_stack(stack)


def redriver_of(app: cdk.App, stack_id: str) -> SqsRedriver:
    found = app.node.find_child(stack_id).node.find_child("Redriver")
    assert isinstance(found, SqsRedriver)
    return found


def dashboard_body(template: Template) -> dict[str, Any]:
    """The dashboard's JSON, each token (a Ref, a region) replaced by its logical id or name."""
    [dashboard] = template.find_resources("AWS::CloudWatch::Dashboard").values()
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    text = "".join(part if isinstance(part, str) else _token_text(part) for part in parts)
    return json.loads(text)


def _token_text(token: dict[str, Any]) -> str:
    if "Ref" in token:
        return f"Ref:{token['Ref']}"
    if "Fn::GetAtt" in token:
        return f"GetAtt:{token['Fn::GetAtt'][0]}"
    return "token"


def widget_titles(template: Template) -> list[str]:
    return [widget["properties"].get("title", "") for widget in dashboard_body(template)["widgets"]]


def widget_metrics(template: Template, title: str) -> list[list[Any]]:
    [widget] = [w for w in dashboard_body(template)["widgets"] if w["properties"].get("title") == title]
    return widget["properties"]["metrics"]


def alarm(template: Template, name: str) -> dict[str, Any]:
    """The properties of the construct's alarm ``name`` (its logical id starts with the path)."""
    found = {
        key: value["Properties"]
        for key, value in template.find_resources("AWS::CloudWatch::Alarm").items()
        if re.fullmatch(f"RedriverMonitoring{name}[0-9A-F]{{8}}", key)
    }
    assert len(found) == 1, sorted(template.find_resources("AWS::CloudWatch::Alarm"))
    return next(iter(found.values()))


def test_the_dashboard_shows_queues_runs_breaker_and_function(default_template: Template) -> None:
    titles = widget_titles(default_template)

    assert {
        "DLQ depth",
        "DLQ oldest message age (s)",
        "Parking lot depth",
        "Messages per period",
        "Breaker state (0 CLOSED, 1 HALF_OPEN, 2 OPEN)",
        "Run problems",
        "Re-drive function: errors and throttles",
        "Re-drive function: duration (ms)",
        "Source queue depth",
    } <= set(titles)


def test_the_dashboard_is_named_for_stack_path_and_region(default_template: Template) -> None:
    # dashboards are global to the account: the region keeps two deployments of the stack apart
    default_template.has_resource_properties(
        "AWS::CloudWatch::Dashboard",
        {"DashboardName": {"Fn::Join": ["", [f"{STACK}-Redriver-", {"Ref": "AWS::Region"}]]}},
    )


def test_the_dashboard_plots_every_run_metric_with_the_powertools_dimension(
    default_template: Template,
) -> None:
    plotted = {
        tuple(metric[:4])
        for title in ("Messages per period", "Run problems", "Breaker state (0 CLOSED, 1 HALF_OPEN, 2 OPEN)")
        for metric in widget_metrics(default_template, title)
    }

    assert plotted == {
        (METRICS_NAMESPACE, name, "service", "dlq-redriver:SqsSmartRedriver/Redriver")
        for name in (*RUN_COUNTS, *RUN_PROBLEMS, CONTINUATIONS, BREAKER_STATE)
    }


def test_the_dlq_age_graph_marks_the_alarm_threshold_and_the_retention(default_template: Template) -> None:
    [age] = [
        w
        for w in dashboard_body(default_template)["widgets"]
        if w["properties"].get("title", "").startswith("DLQ oldest")
    ]

    assert [a["value"] for a in age["properties"]["annotations"]["horizontal"]] == [13 * DAY, 14 * DAY]


def test_a_large_drain_s_row_plots_its_pace_and_workers_highest_and_messages_left_lowest(
    default_template: Template,
) -> None:
    widgets = [
        w
        for w in dashboard_body(default_template)["widgets"]
        if w["properties"].get("title", "").startswith(DRAIN_TITLE)
    ]

    plotted = [tuple(metric) for widget in widgets for metric in widget["properties"]["metrics"]]
    service = ("service", "dlq-redriver:SqsSmartRedriver/Redriver")
    assert plotted == [
        (METRICS_NAMESPACE, name, *service, {"stat": statistic})
        for name, statistic in (
            (DRAIN_RATE, "Maximum"),
            (DRAIN_WORKERS, "Maximum"),
            (DRAIN_MESSAGES_LEFT, "Minimum"),
        )
    ]
    limits = [[a["label"] for a in w["properties"]["annotations"]["horizontal"]] for w in widgets]
    assert limits == [["MAX_DRAIN_RATE"], ["MAX_WORKERS"], ["FAN_OUT_BACKLOG: workers above"]]
    assert [w["width"] for w in widgets] == [8, 8, 8] and len({w["y"] for w in widgets}) == 1  # one row


def test_a_re_driver_that_never_fans_out_has_no_drain_row() -> None:
    stack = cdk.Stack(cdk.App(), "OneChain")
    SqsRedriver.from_queue_arns(
        stack,
        "Redriver",
        source_queue_arn=SOURCE_ARN,
        dead_letter_queue_arn=DLQ_ARN,
        settings=RedriverSettings(max_workers=1),
    )

    assert not [t for t in widget_titles(Template.from_stack(stack)) if t.startswith(DRAIN_TITLE)]


@pytest.mark.parametrize(("granted", "expected"), [(False, (0, 1)), (True, (3, 17))])
def test_a_re_driver_whose_consumer_has_no_kit_never_fans_out(
    granted: bool, expected: tuple[int, int]
) -> None:
    # a drain is never faster than its failure signal: without the kit's verdicts, one chain
    stack = cdk.Stack(cdk.App(), "Drains")
    redriver = SqsRedriver.from_queue_arns(
        stack, "Redriver", source_queue_arn=SOURCE_ARN, dead_letter_queue_arn=DLQ_ARN
    )
    if granted:
        consumer = lambda_.Function(
            stack,
            "Consumer",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context): pass"),
        )
        redriver.grant_consumer(consumer, max_receive_count=5)

    template = Template.from_stack(stack)
    [function] = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": "sqs_redriver.runtime.handler.lambda_handler"}}
    ).values()
    drain_widgets = [t for t in widget_titles(template) if t.startswith(DRAIN_TITLE)]
    assert (len(drain_widgets), function["Properties"]["ReservedConcurrentExecutions"]) == expected


def test_grant_consumer_puts_the_consumers_errors_on_the_dashboard(
    default_template: Template, default_stack: RedriverStack
) -> None:
    metrics = widget_metrics(default_template, "Consumer OrdersConsumer/Function: errors")

    assert ["AWS/Lambda", "Errors", "FunctionName", f"Ref:{logical_id(default_stack.consumer)}"] in [
        m[:4] for m in metrics
    ]


def test_the_dashboard_lists_the_latest_breaker_transitions_from_the_functions_logs(
    default_template: Template, default_stack: RedriverStack
) -> None:
    [widget] = [
        w
        for w in dashboard_body(default_template)["widgets"]
        if w["type"] == "log" and w["properties"]["title"] == BREAKER_TRANSITIONS_TITLE
    ]
    log_group = logical_id(default_stack.redriver.function.log_group)

    assert widget["properties"]["title"] == BREAKER_TRANSITIONS_TITLE
    assert widget["properties"]["view"] == "table" and widget["width"] == 24
    assert widget["properties"]["query"] == (
        f"SOURCE 'Ref:{log_group}' | fields @timestamp as time, breaker, `from`, `to`, evidence, version\n"
        '| filter message = "breaker transition" and service = "dlq-redriver:SqsSmartRedriver/Redriver"\n'
        "| sort @timestamp desc\n"
        "| limit 20"
    )


def test_the_breaker_transitions_query_reads_the_fields_the_breaker_writer_logs() -> None:
    # GIVEN the re-driver's breaker writer on a Powertools logger, as in Lambda
    stream = io.StringIO()
    logger = Logger(service="dlq-redriver:SqsSmartRedriver/Redriver", stream=stream)
    writer = BreakerWriter(FakeStateStore(), "BREAKER#queue", logger)
    closed = Breaker()

    # WHEN the breaker opens on the queue's metrics
    writer.save(closed.opened(1_000, Evidence.METRICS), closed)

    # THEN one JSON line carries the query's filter and fields at its top level
    [line] = [json.loads(text) for text in stream.getvalue().splitlines()]
    assert (line["message"], line["service"]) == (BREAKER_TRANSITION_MESSAGE, logger.service)
    assert {k: line[k] for k in ("breaker", "from", "to", "evidence", "version")} == {
        "breaker": "BREAKER#queue",
        "from": "CLOSED",
        "to": "OPEN",
        "evidence": "metrics",
        "version": 1,
    }


def test_the_metric_names_are_the_ones_the_handler_publishes() -> None:
    source = HANDLER.read_text()

    names = (*RUN_COUNTS, *RUN_PROBLEMS, CONTINUATIONS, BREAKER_STATE, DRAIN_RATE, DRAIN_WORKERS)
    missing = [n for n in (*names, DRAIN_MESSAGES_LEFT) if f'"{n}"' not in source]
    assert missing == []
    assert "State.OPEN: 2" in source and "State.HALF_OPEN: 1" in source


def test_the_dlq_age_alarm_fires_at_retention_minus_the_expiry_margin(
    default_template: Template, default_stack: RedriverStack
) -> None:
    props = alarm(default_template, "DlqOldestMessageAge")

    assert props["MetricName"] == "ApproximateAgeOfOldestMessage" and props["Statistic"] == "Maximum"
    assert props["Dimensions"] == [
        {
            "Name": "QueueName",
            "Value": {"Fn::GetAtt": [logical_id(default_stack.dead_letter_queue), "QueueName"]},
        }
    ]
    assert props["Threshold"] == 14 * DAY - 86_400  # the stack's DLQ keeps 14 days; the margin is a day
    assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert props["TreatMissingData"] == "notBreaching"


def test_an_imported_dlqs_age_alarm_counts_from_the_retention_passed(variants: cdk.App) -> None:
    assert alarm(template_of(variants, "Email"), "DlqOldestMessageAge")["Threshold"] == 6 * DAY


def test_the_parking_lot_alarm_fires_on_one_visible_message(
    default_template: Template, default_stack: RedriverStack
) -> None:
    props = alarm(default_template, "ParkingLotNotEmpty")

    assert props["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert props["Dimensions"][0]["Value"] == {
        "Fn::GetAtt": [logical_id(default_stack.redriver.parking_lot), "QueueName"]
    }
    assert (props["Threshold"], props["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")


def test_the_breaker_alarm_needs_open_in_three_periods_of_a_schedule_tick(default_template: Template) -> None:
    props = alarm(default_template, "BreakerOpenTooLong")

    assert {k: props[k] for k in ("Namespace", "MetricName", "Statistic", "Threshold")} == {
        "Namespace": METRICS_NAMESPACE,
        "MetricName": BREAKER_STATE,
        "Statistic": "Maximum",
        "Threshold": 2,
    }
    assert props["Dimensions"] == [{"Name": "service", "Value": "dlq-redriver:SqsSmartRedriver/Redriver"}]
    # rate(5 minutes) and a 60 s cooldown: a period is the schedule's tick
    assert (props["Period"], props["EvaluationPeriods"], props["TreatMissingData"]) == (300, 3, "ignore")


def test_the_breaker_alarms_period_is_a_cooldown_when_that_is_longer(variants: cdk.App) -> None:
    props = alarm(template_of(variants, "Email"), "BreakerOpenTooLong")

    assert (props["Period"], props["EvaluationPeriods"]) == (1_200, 3)


def test_the_redriver_alarms_on_repeated_errors_and_dropped_events(default_template: Template) -> None:
    errors = alarm(default_template, "RedriverErrors")
    dropped = alarm(default_template, "RedriverEventsDropped")

    assert (errors["Namespace"], errors["MetricName"], errors["Statistic"]) == ("AWS/Lambda", "Errors", "Sum")
    assert (errors["EvaluationPeriods"], errors["DatapointsToAlarm"], errors["Threshold"]) == (3, 2, 1)
    assert (dropped["MetricName"], dropped["Threshold"]) == ("AsyncEventsDropped", 1)


@pytest.mark.parametrize("name", ["Unparkable", "Unarchived"])
def test_unparkable_and_unarchived_messages_alarm_on_the_first(default_template: Template, name: str) -> None:
    props = alarm(default_template, name)

    assert (props["Namespace"], props["MetricName"], props["Statistic"]) == (METRICS_NAMESPACE, name, "Sum")
    assert (props["Threshold"], props["TreatMissingData"]) == (1, "notBreaching")


def test_without_a_topic_alarms_have_no_actions(
    default_template: Template, default_stack: RedriverStack
) -> None:
    default_template.resource_count_is("AWS::SNS::Topic", 0)
    assert default_stack.redriver.alarm_topic is None
    assert not any(
        "AlarmActions" in a["Properties"]
        for a in default_template.find_resources("AWS::CloudWatch::Alarm").values()
    )
    assert set(default_stack.redriver.alarms) == {
        "DlqOldestMessageAge",
        "ParkingLotNotEmpty",
        "BreakerOpenTooLong",
        "RedriverErrors",
        "RedriverEventsDropped",
        "Unparkable",
        "Unarchived",
    }


def test_alarm_email_makes_an_encrypted_ssl_only_topic_with_the_subscription(variants: cdk.App) -> None:
    template = template_of(variants, "Email")
    topic = redriver_of(variants, "Email").alarm_topic
    assert isinstance(topic, sns.Topic)
    topic_id = logical_id(topic)
    [key_id] = template.find_resources("AWS::KMS::Key", {"Properties": {"EnableKeyRotation": True}})

    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]}})
    template.has_resource_properties(
        "AWS::SNS::Subscription",
        {"Protocol": "email", "Endpoint": "ops@example.com", "TopicArn": {"Ref": topic_id}},
    )
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic_id}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                        ),
                        Match.object_like(
                            {"Action": "sns:Publish", "Principal": {"Service": "cloudwatch.amazonaws.com"}}
                        ),
                    ]
                )
            },
        },
    )
    # CloudWatch must be able to use the key, or alarms never reach the topic
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                            }
                        )
                    ]
                )
            }
        },
    )


def test_every_alarm_notifies_the_email_topic_of_alarm_and_recovery(variants: cdk.App) -> None:
    template = template_of(variants, "Email")
    topic = redriver_of(variants, "Email").alarm_topic
    assert topic is not None
    alarms = template.find_resources("AWS::CloudWatch::Alarm")

    assert len(alarms) == 7
    for props in (a["Properties"] for a in alarms.values()):
        assert props["AlarmActions"] == props["OKActions"] == [{"Ref": logical_id(topic)}]


def test_the_users_topic_is_used_and_nothing_is_subscribed(variants: cdk.App) -> None:
    template = template_of(variants, "UsersTopic")
    redriver = redriver_of(variants, "UsersTopic")
    users_topic = variants.node.find_child("UsersTopic").node.find_child("OnCall")

    assert redriver.alarm_topic is users_topic
    template.resource_count_is("AWS::SNS::Topic", 1)
    template.resource_count_is("AWS::SNS::Subscription", 0)
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"AlarmActions": [{"Ref": logical_id(users_topic)}], "MetricName": "Unparkable"},
    )


def test_monitoring_false_builds_no_dashboard_alarm_or_topic(variants: cdk.App) -> None:
    template = template_of(variants, "Off")
    redriver = redriver_of(variants, "Off")

    for resource in ("AWS::CloudWatch::Dashboard", "AWS::CloudWatch::Alarm", "AWS::SNS::Topic"):
        template.resource_count_is(resource, 0)
    assert (redriver.dashboard, dict(redriver.alarms), redriver.alarm_topic) == (None, {}, None)


def test_cdk_nag_finds_nothing_unacknowledged_in_the_monitoring(variants: cdk.App) -> None:
    # app.synth() raises ValidationFailed on any unacknowledged finding
    assembly = variants.synth()
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())

    plugins = {plugin["pluginName"]: plugin for plugin in report["pluginReports"]}
    assert set(plugins) == {"AwsSolutions", "Serverless"}
    assert all(plugin["conclusion"] == "success" for plugin in plugins.values())
    acknowledged = {
        suppressed["ruleName"]
        for plugin in plugins.values()
        for suppressed in plugin["suppressedViolations"]
        if "/Monitoring/" in json.dumps(suppressed)
    }
    assert acknowledged == {"Serverless-SNSRedrivePolicy"}


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"alarm_email": "ops@example.com", "alarm_topic": True}, "alarm_email and alarm_topic: pass one"),
        ({"monitoring": False, "alarm_email": "ops@example.com"}, "need monitoring=True"),
    ],
)
def test_contradicting_monitoring_props_fail_at_synth(props: dict[str, Any], message: str) -> None:
    stack = cdk.Stack(cdk.App(), "Bad")
    if props.get("alarm_topic"):
        props = {**props, "alarm_topic": sns.Topic(stack, "Topic")}

    with pytest.raises(SettingsError, match=message):
        SqsRedriver.from_queue_arns(
            stack, "Redriver", source_queue_arn=SOURCE_ARN, dead_letter_queue_arn=DLQ_ARN, **props
        )


@pytest.mark.parametrize(
    ("known", "explicit", "expected"),
    [(None, None, 4 * DAY), (None, cdk.Duration.days(7), 7 * DAY), (14 * DAY, None, 14 * DAY)],
)
def test_the_age_alarm_counts_from_the_queue_then_the_prop_then_sqs_default(
    known: int | None, explicit: cdk.Duration | None, expected: int
) -> None:
    assert alarm_retention_seconds(known, explicit) == expected


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [
        ("rate(5 minutes)", 300),
        ("rate(1 hour)", 3_600),
        ("rate(2 days)", 2 * DAY),
        ("cron(0 * * * ? *)", None),
    ],
)
def test_schedule_intervals_are_read_from_rate_expressions(expression: str, seconds: int | None) -> None:
    assert schedule_seconds(expression) == seconds


@pytest.mark.parametrize(
    ("schedule", "cooldown", "minutes"),
    [
        ("rate(5 minutes)", 0, 5),
        ("rate(1 minute)", 90, 2),
        ("cron(0 * * * ? *)", 60, 5),
        ("rate(1 day)", 60, 480),
    ],
)
def test_the_breaker_alarms_period_holds_a_run_and_a_cooldown_within_cloudwatchs_day(
    schedule: str, cooldown: int, minutes: int
) -> None:
    settings = RedriverSettings(schedule=schedule, breaker_cooldown_seconds=cooldown)

    assert breaker_period(settings).to_minutes() == minutes  # 3 periods of 480 minutes: one day


def test_a_consumer_in_another_stack_stays_off_the_dashboard() -> None:
    # its stack depends on the re-driver's (the kit's environment): a widget would be a cycle
    app = cdk.App()
    stack, other = cdk.Stack(app, "Redriving"), cdk.Stack(app, "Consuming")
    redriver = SqsRedriver.from_queue_arns(
        stack, "Redriver", source_queue_arn=SOURCE_ARN, dead_letter_queue_arn=DLQ_ARN
    )
    consumer = lambda_.Function(
        other,
        "Consumer",
        runtime=RUNTIME,
        architecture=lambda_.Architecture.ARM_64,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
    )

    redriver.grant_consumer(consumer, max_receive_count=5)

    assert not any(t.startswith("Consumer") for t in widget_titles(Template.from_stack(stack)))


def test_two_re_drivers_of_one_account_publish_their_run_metrics_apart() -> None:
    stack = cdk.Stack(cdk.App(), "Two")
    for name in ("Orders", "Payments"):
        dlq = sqs.Queue(stack, f"{name}Dlq", retention_period=cdk.Duration.days(14))
        source = sqs.Queue(
            stack, f"{name}Queue", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
        )
        SqsRedriver(stack, f"{name}Redriver", source_queue=source, dead_letter_queue=dlq)

    functions = Template.from_stack(stack).find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": "sqs_redriver.runtime.handler.lambda_handler"}}
    )

    services = sorted(
        f["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"] for f in functions.values()
    )
    assert services == ["dlq-redriver:Two/OrdersRedriver", "dlq-redriver:Two/PaymentsRedriver"]
