"""queue_metrics at deploy: the re-drive function's GetMetricData grant (alone in its policy, and
only with the setting on), and CONSUMER_FUNCTION_NAMES as grant_consumer fills it in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings
from tests.support.stacks import (
    app_with_nag,
    assert_nag_clean,
    consumer_function,
    dead_letter_queue,
    nag_clean_consumer,
    nag_report,
    redriver_environment,
    small_stack,
    source_queue,
)
from tests.support.templates import logical_id

NAMES = "CONSUMER_FUNCTION_NAMES"


def metric_statements(stack: cdk.Stack) -> list[tuple[str, dict[str, Any]]]:
    """Every statement, of any policy in ``stack``, that names a CloudWatch action, with its policy."""
    return [
        (policy_id, statement)
        for policy_id, policy in Template.from_stack(stack).find_resources("AWS::IAM::Policy").items()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "cloudwatch:" in str(statement["Action"])
    ]


def redriver_in(stack: cdk.Stack, source: sqs.IQueue, dlq: sqs.IQueue, **settings: Any) -> SqsRedriver:
    return SqsRedriver(
        stack, "Redriver", source_queue=source, dead_letter_queue=dlq, settings=RedriverSettings(**settings)
    )


# --- the grant ---------------------------------------------------------------------------------


def test_the_redrive_function_may_read_metrics_in_a_policy_holding_that_statement_alone() -> None:
    stack, source, dlq = small_stack()
    redriver = redriver_in(stack, source, dlq)

    template = Template.from_stack(stack)
    [(policy_id, statement)] = metric_statements(stack)
    policy = template.find_resources("AWS::IAM::Policy")[policy_id]["Properties"]
    assert statement == {"Action": "cloudwatch:GetMetricData", "Effect": "Allow", "Resource": "*"}
    assert policy["PolicyDocument"]["Statement"] == [statement]
    assert policy["Roles"] == [{"Ref": logical_id(redriver.function.role)}]  # type: ignore[arg-type]
    # created before the function, so its first run is not refused
    assert policy_id in template.to_json()["Resources"][logical_id(redriver.function)]["DependsOn"]


def test_without_queue_metrics_the_redrive_function_may_read_no_metrics() -> None:
    stack, source, dlq = small_stack()
    redriver_in(stack, source, dlq, queue_metrics=False)

    assert metric_statements(stack) == []


def test_the_grant_is_acknowledged_in_cdk_nag_on_its_own_policy_only(tmp_path: Path) -> None:
    app = app_with_nag(tmp_path)
    stack = cdk.Stack(app, "Nag")
    dlq = dead_letter_queue(stack)
    redriver = redriver_in(stack, source_queue(stack, dlq), dlq)
    redriver.grant_consumer(nag_clean_consumer(stack))

    report = nag_report(app)

    assert_nag_clean(report)
    on_metrics = [
        suppressed
        for plugin in report["pluginReports"]
        for suppressed in plugin["suppressedViolations"]
        if "GetMetricData" in suppressed["reason"]
    ]
    assert [(s["ruleName"], [c["constructPath"] for c in s["violatingConstructs"]]) for s in on_metrics] == [
        ("AwsSolutions-IAM5[Resource::*]", ["Nag/Redriver/MetricsPolicy/Resource"])
    ]


# --- CONSUMER_FUNCTION_NAMES -------------------------------------------------------------------


def test_no_consumer_granted_leaves_the_consumer_function_names_empty() -> None:
    stack, source, dlq = small_stack()
    redriver = redriver_in(stack, source, dlq)

    assert redriver_environment(stack, redriver)[NAMES] == ""


def test_a_granted_consumer_is_named_for_its_queue() -> None:
    stack, source, dlq = small_stack()
    redriver = redriver_in(stack, source, dlq)
    consumer = consumer_function(stack)

    redriver.grant_consumer(consumer)

    assert redriver_environment(stack, redriver)[NAMES] == {"Ref": logical_id(consumer)}


def shared_dlq() -> tuple[cdk.Stack, SqsRedriver, sqs.Queue]:
    """A re-driver of two sources, orders and payments, sharing one DLQ; returns payments."""
    stack, orders, dlq = small_stack()
    payments = sqs.Queue(
        stack, "Payments", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
    )
    redriver = SqsRedriver(
        stack, "Redriver", source_queue=orders, other_source_queues=[payments], dead_letter_queue=dlq
    )
    return stack, redriver, payments


def test_consumer_function_names_follow_the_source_queues_with_an_empty_entry_where_none_is_known() -> None:
    stack, redriver, payments = shared_dlq()
    consumer = consumer_function(stack, "PaymentsConsumer")

    redriver.grant_consumer(consumer, queue=payments)

    assert redriver_environment(stack, redriver)[NAMES] == {
        "Fn::Join": [",", ["", {"Ref": logical_id(consumer)}]]
    }


def test_a_queue_with_two_consumers_is_judged_by_its_own_metrics_alone() -> None:
    stack, redriver, payments = shared_dlq()
    orders_consumer = consumer_function(stack, "OrdersConsumer")
    redriver.grant_consumer(orders_consumer)

    redriver.grant_consumer(consumer_function(stack, "PaymentsA"), queue=payments)
    redriver.grant_consumer(consumer_function(stack, "PaymentsB"), queue=payments)
    redriver.grant_consumer(orders_consumer)  # granted again: still the one consumer

    assert redriver_environment(stack, redriver)[NAMES] == {
        "Fn::Join": [",", [{"Ref": logical_id(orders_consumer)}, ""]]
    }


def test_a_consumer_in_another_stack_is_named_only_by_a_literal_name_which_makes_no_dependency(
    tmp_path: Path,
) -> None:
    # GIVEN a shared DLQ whose consumers live in another stack, one with a literal function name
    app = cdk.App(outdir=str(tmp_path))
    stack, orders, dlq = small_stack(app)
    payments = sqs.Queue(
        stack, "Payments", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
    )
    redriver = SqsRedriver(
        stack, "Redriver", source_queue=orders, other_source_queues=[payments], dead_letter_queue=dlq
    )
    consumers = cdk.Stack(app, "Consumers")
    named = lambda_.Function(
        consumers,
        "Named",
        function_name="payments-consumer",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
    )

    # WHEN both are granted
    redriver.grant_consumer(consumer_function(consumers, "Unnamed"))
    redriver.grant_consumer(named, queue=payments)

    # THEN only the literal name is recorded, and the app synthesizes (no cycle between the stacks)
    assert redriver_environment(stack, redriver)[NAMES] == ",payments-consumer"
    app.synth()
    assert stack.dependencies == []
