"""SqsRedriver.for_function, for_rule_target and for_subscription on the synthesized template: the
DEAD_LETTER_SOURCES the re-drive Lambda parses, the one delivery each may make, the breaker and
state-table records, the deployment output, the dashboard, cdk-nag; and each synth error's sentence."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Match, Template
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.cdk.dead_letters import (
    EVENTBRIDGE_DEFAULT_EVENT_AGE_SECONDS,
    EVENTBRIDGE_DEFAULT_RETRY_ATTEMPTS,
    ConsumerBreakerProps,
    describe_arn,
    rule_retries,
)
from sqs_redriver.cdk.functions import acknowledge, powertools_layer, python_function
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.cdk.storage import secure_queue, secure_table
from sqs_redriver.protocol.settings import RESOURCE_ENV
from sqs_redriver.protocol.sources import (
    MAX_ATTEMPT_SECONDS,
    ConsumerBreaker,
    DeadLetterSource,
    Retries,
    SourceKind,
    TargetKind,
    read_sources,
)
from tests.support.stacks import ACCOUNT, REGION, app_with_nag, assert_nag_clean, nag_report, wiring_findings
from tests.support.templates import as_list, logical_id

Statement = dict[str, Any]
ENV = cdk.Environment(account=ACCOUNT, region=REGION)
SOURCES_ENV = RESOURCE_ENV["dead_letter_sources"]


# --- the stacks -----------------------------------------------------------------------------------


def dlq(scope: cdk.Stack, construct_id: str, **props: Any) -> sqs.Queue:
    queue = secure_queue(scope, construct_id, retention_period=cdk.Duration.days(14), **props)
    for rule in ("Serverless::Serverless-SQSRedrivePolicy", "AwsSolutions::AwsSolutions-SQS3"):
        acknowledge(
            queue,
            rule,
            "A dead-letter queue of a function, rule target or subscription (cdk-nag sees only SQS "
            "redrive policies): the re-driver drains it, its parking lot is its DLQ.",
        )
    return queue


def plain_queue(scope: cdk.Stack, construct_id: str, **props: Any) -> sqs.Queue:
    """A target queue of the test, without a DLQ of its own."""
    queue = secure_queue(scope, construct_id, **props)
    for rule in ("Serverless::Serverless-SQSRedrivePolicy", "AwsSolutions::AwsSolutions-SQS3"):
        acknowledge(queue, rule, "A target queue of the test: nothing consumes it, so nothing dead-letters.")
    return queue


def function(scope: cdk.Stack, construct_id: str, **options: Any) -> lambda_.Function:
    """A function cdk-nag accepts, with ``options`` (its DLQ, its destination, its timeout)."""
    return python_function(
        scope,
        construct_id,
        handler="consumer.handler.lambda_handler",
        environment={},
        timeout=options.pop("timeout", cdk.Duration.seconds(30)),
        memory_size=256,
        layer=_powertools(scope),
        options=options,
    )


def _powertools(scope: cdk.Stack) -> lambda_.ILayerVersion:
    """The stack's one Powertools layer (powertools_layer makes it once per scope)."""
    existing = scope.node.try_find_child("PowertoolsLayer")
    return cast(lambda_.ILayerVersion, existing) if existing is not None else powertools_layer(scope)


def topic(scope: cdk.Stack, construct_id: str) -> sns.Topic:
    key = kms.Key(scope, f"{construct_id}Key", enable_key_rotation=True)
    return sns.Topic(scope, construct_id, master_key=key, enforce_ssl=True)


def breaker_table(scope: cdk.Stack) -> dynamodb.Table:
    return secure_table(
        scope,
        "BreakerTable",
        partition_key="id",
        ttl_attribute="expiration",
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )


@dataclass(frozen=True)
class Built:
    stack: cdk.Stack
    redriver: SqsRedriver
    parts: dict[str, Any]  # the constructs the test made, by name

    @property
    def template(self) -> Template:
        return Template.from_stack(self.stack)


def function_stack(app: cdk.App) -> Built:
    """A function whose on-failure destination is a queue, with its own Powertools breaker."""
    stack = cdk.Stack(app, "FunctionSource", env=ENV)
    queue = dlq(stack, "Dlq")
    target = function(stack, "Target", timeout=cdk.Duration.seconds(40))
    target.configure_async_invoke(on_failure=destinations.SqsDestination(queue), retry_attempts=1)
    acknowledge(target, "Serverless::Serverless-LambdaDLQ", "Its failures go to its on-failure destination.")
    table = breaker_table(stack)
    redriver = SqsRedriver.for_function(
        stack,
        "Redriver",
        function=target,
        consumer_breaker=ConsumerBreakerProps(table=table, name="payments"),
    )
    return Built(stack, redriver, {"dlq": queue, "target": target, "table": table})


def old_dlq_stack(app: cdk.App) -> Built:
    """A function with the older dead-letter queue."""
    stack = cdk.Stack(app, "FunctionDlq", env=ENV)
    queue = dlq(stack, "Dlq")
    target = function(stack, "Target", dead_letter_queue=queue)
    acknowledge(
        target,
        "Serverless::Serverless-LambdaAsyncFailureDestination",
        "Its failed events go to its dead-letter queue, which the re-driver drains.",
    )
    redriver = SqsRedriver.for_function(stack, "Redriver", function=target)
    return Built(stack, redriver, {"dlq": queue, "target": target})


def rule_stack(app: cdk.App) -> tuple[Built, Built]:
    """A rule with a queue target and a function target, each with its DLQ and its re-driver."""
    stack = cdk.Stack(app, "RuleTargets", env=ENV)
    queue_dlq, function_dlq = dlq(stack, "QueueTargetDlq"), dlq(stack, "FunctionTargetDlq")
    queue = plain_queue(
        stack, "TargetQueue", encryption_key=kms.Key(stack, "QueueKey", enable_key_rotation=True)
    )
    handler = function(stack, "TargetFunction")
    acknowledge(handler, "Serverless::Serverless-LambdaDLQ", "The test's rule target; its DLQ is the rule's.")
    acknowledge(
        handler,
        "Serverless::Serverless-LambdaAsyncFailureDestination",
        "The test's rule target; undelivered events go to the rule target's DLQ.",
    )
    rule = events.Rule(stack, "Rule", event_pattern=events.EventPattern(source=["orders"]))
    rule.add_target(targets.SqsQueue(queue, dead_letter_queue=queue_dlq, retry_attempts=4))
    rule.add_target(
        targets.LambdaFunction(
            handler, dead_letter_queue=function_dlq, max_event_age=cdk.Duration.hours(2), retry_attempts=9
        )
    )
    to_queue = SqsRedriver.for_rule_target(stack, "QueueRedriver", rule=rule, target_index=0)
    to_function = SqsRedriver.for_rule_target(stack, "FunctionRedriver", rule=rule, target=handler)
    parts = {"rule": rule, "queue": queue, "function": handler}
    return (
        Built(stack, to_queue, {**parts, "dlq": queue_dlq}),
        Built(stack, to_function, {**parts, "dlq": function_dlq}),
    )


def subscription_stack(app: cdk.App) -> Built:
    """A queue subscribed to a topic, raw, with a redrive policy."""
    stack = cdk.Stack(app, "Subscription", env=ENV)
    queue_dlq = dlq(stack, "Dlq")
    endpoint = plain_queue(stack, "Endpoint")
    news = topic(stack, "Topic")
    subscription = news.add_subscription(
        subscriptions.SqsSubscription(endpoint, raw_message_delivery=True, dead_letter_queue=queue_dlq)
    )
    redriver = SqsRedriver.for_subscription(stack, "Redriver", subscription=subscription)
    return Built(
        stack, redriver, {"dlq": queue_dlq, "endpoint": endpoint, "topic": news, "subscription": subscription}
    )


@pytest.fixture(scope="module")
def synthesized(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, Built], dict[str, Any]]]:
    """Every kind in one app with both nag packs, synthesized once."""
    app = app_with_nag(Path(tmp_path_factory.mktemp("cdk.out")))
    to_queue, to_function = rule_stack(app)
    built = {
        "function": function_stack(app),
        "function_dlq": old_dlq_stack(app),
        "rule_queue": to_queue,
        "rule_function": to_function,
        "subscription": subscription_stack(app),
    }
    yield built, nag_report(app)


@pytest.fixture(scope="module")
def built(synthesized: tuple[dict[str, Built], dict[str, Any]]) -> dict[str, Built]:
    return synthesized[0]


# --- reading the template -------------------------------------------------------------------------

# A stand-in for what each resource's Ref and Fn::GetAtt Arn resolve to at deploy.
ARN_FORMS = {
    "AWS::Lambda::Function": "arn:aws:lambda:{region}:{account}:function:{id}",
    "AWS::SQS::Queue": "arn:aws:sqs:{region}:{account}:{id}",
    "AWS::SNS::Topic": "arn:aws:sns:{region}:{account}:{id}",
    "AWS::SNS::Subscription": "arn:aws:sns:{region}:{account}:topic:{id}",
    "AWS::Events::Rule": "arn:aws:events:{region}:{account}:rule/{id}",
    "AWS::DynamoDB::Table": "arn:aws:dynamodb:{region}:{account}:table/{id}",
    "AWS::KMS::Key": "arn:aws:kms:{region}:{account}:key/{id}",
}


PSEUDO = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
}


def deployed(template: dict[str, Any], value: Any) -> Any:
    """``value`` as CloudFormation would resolve it, each resource's ARN a stand-in (ARN_FORMS)."""
    if isinstance(value, list):
        return [deployed(template, item) for item in value]
    if not isinstance(value, dict):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(deployed(template, part)) for part in parts)
    if "Fn::Select" in value:
        index, items = value["Fn::Select"]
        return deployed(template, items)[index]
    if "Fn::Split" in value:
        separator, text = value["Fn::Split"]
        return str(deployed(template, text)).split(separator)
    if "Ref" in value or "Fn::GetAtt" in value:
        return _reference(template, value)
    return {name: deployed(template, item) for name, item in value.items()}


def _reference(template: dict[str, Any], value: dict[str, Any]) -> str:
    resource_id = str(value["Ref"] if "Ref" in value else value["Fn::GetAtt"][0])
    if resource_id in PSEUDO:
        return PSEUDO[resource_id]
    kind = template["Resources"][resource_id]["Type"]
    if "Ref" in value and kind == "AWS::SQS::Queue":
        return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{resource_id}"
    if "Ref" in value and kind in {"AWS::Lambda::Function", "AWS::Events::Rule", "AWS::DynamoDB::Table"}:
        return resource_id  # their names
    return ARN_FORMS.get(kind, "arn:aws:other:{region}:{account}:{id}").format(
        region=REGION, account=ACCOUNT, id=resource_id
    )


def arn(built: Built, construct: Any) -> str:
    return str(deployed(built.template.to_json(), {"Fn::GetAtt": [logical_id(construct), "Arn"]}))


def environment(built: Built) -> dict[str, Any]:
    template = built.template.to_json()
    variables = template["Resources"][logical_id(built.redriver.function)]["Properties"]["Environment"]
    return dict(variables["Variables"])


def sources_of(built: Built) -> tuple[DeadLetterSource, ...]:
    """DEAD_LETTER_SOURCES as deployed, read as the re-drive Lambda reads it."""
    value = environment(built)[SOURCES_ENV]
    return read_sources(deployed(built.template.to_json(), value))


def statements(built: Built) -> list[Statement]:
    """Every statement of the re-drive function's role, resolved to stand-ins."""
    template = built.template.to_json()
    role = {"Ref": logical_id(built.redriver.function.role)}  # type: ignore[arg-type]
    return [
        deployed(template, statement)
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy" and role in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def resources_allowed(built: Built, action: str) -> list[str]:
    return sorted(
        resource
        for statement in statements(built)
        if action in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    )


def statements_with(built: Built, action: str) -> list[Statement]:
    return [statement for statement in statements(built) if action in as_list(statement["Action"])]


# --- DEAD_LETTER_SOURCES --------------------------------------------------------------------------


def test_a_function_source_is_its_own_target_with_its_retries_timeout_and_breaker(
    built: dict[str, Built],
) -> None:
    case = built["function"]
    target = arn(case, case.parts["target"])
    assert sources_of(case) == (
        DeadLetterSource(
            kind=SourceKind.FUNCTION,
            arn=target,
            target_kind=TargetKind.FUNCTION,
            target_arn=target,
            retries=Retries(attempts=2, attempt_seconds=40 + 120),
            breaker=ConsumerBreaker(table=logical_id(case.parts["table"]), name="payments"),
            probe_timeout_seconds=40,
        ),
    )


def test_a_function_with_the_older_dlq_gets_lambdas_default_retries(built: dict[str, Built]) -> None:
    case = built["function_dlq"]
    [source] = sources_of(case)
    assert (source.kind, source.target_arn) == (SourceKind.FUNCTION, arn(case, case.parts["target"]))
    assert source.retries == Retries(attempts=3, attempt_seconds=30 + 120)


def test_a_rule_target_names_the_rule_the_target_its_id_and_eventbridges_retries(
    built: dict[str, Built],
) -> None:
    queue_case, function_case = built["rule_queue"], built["rule_function"]
    rule = arn(queue_case, queue_case.parts["rule"])
    assert sources_of(queue_case) == (
        DeadLetterSource(
            kind=SourceKind.RULE_TARGET,
            arn=rule,
            target_kind=TargetKind.QUEUE,
            target_arn=arn(queue_case, queue_case.parts["queue"]),
            target_id="Target0",
            retries=Retries(attempts=5, attempt_seconds=math.ceil(EVENTBRIDGE_DEFAULT_EVENT_AGE_SECONDS / 5)),
        ),
    )
    [source] = sources_of(function_case)
    assert (source.arn, source.target_kind, source.target_id) == (rule, TargetKind.FUNCTION, "Target1")
    assert source.target_arn == arn(function_case, function_case.parts["function"])
    assert source.retries == Retries(attempts=10, attempt_seconds=720)  # 2 hours over 10 tries


def test_a_subscription_source_names_its_topic_and_raw_delivery(built: dict[str, Built]) -> None:
    case = built["subscription"]
    template = case.template.to_json()
    [source] = sources_of(case)
    assert source == DeadLetterSource(
        kind=SourceKind.SUBSCRIPTION,
        arn=deployed(template, {"Ref": logical_id(case.parts["subscription"])}),
        target_kind=TargetKind.QUEUE,
        target_arn=arn(case, case.parts["endpoint"]),
        topic_arn=deployed(template, {"Ref": logical_id(case.parts["topic"])}),
        raw_delivery=True,
    )


@pytest.mark.parametrize("name", ["function", "function_dlq", "rule_queue", "subscription"])
def test_no_source_queue_is_named(built: dict[str, Built], name: str) -> None:
    variables = environment(built[name])
    assert RESOURCE_ENV["source_queue_url"] not in variables
    assert RESOURCE_ENV["consumer_function_names"] not in variables
    assert variables[RESOURCE_ENV["dlq_url"]] == {"Ref": logical_id(built[name].parts["dlq"])}


def test_the_deployment_output_lists_the_sources_and_no_source_queue(built: dict[str, Built]) -> None:
    case = built["rule_function"]
    template = case.template.to_json()
    output_id = next(name for name in template["Outputs"] if name.startswith(case.redriver.node.id))
    document = json.loads(deployed(template, template["Outputs"][output_id]["Value"]))
    assert document["source_queue_urls"] == []
    assert read_sources(json.dumps(document["dead_letter_sources"])) == sources_of(case)


# --- what the re-drive function may do ------------------------------------------------------------


def test_a_function_source_may_invoke_that_function_and_itself_only(built: dict[str, Built]) -> None:
    case = built["function"]
    assert resources_allowed(case, "lambda:InvokeFunction") == sorted(
        [arn(case, case.parts["target"]), arn(case, case.redriver.function)]
    )
    target = arn(case, case.parts["target"])
    assert [s["Action"] for s in statements(case) if target in as_list(s["Resource"])] == [
        "lambda:InvokeFunction"
    ]


def test_the_breaker_is_read_by_getitem_of_its_own_record_only(built: dict[str, Built]) -> None:
    case = built["function"]
    table = arn(case, case.parts["table"])
    on_table = [s for s in statements(case) if table in as_list(s["Resource"])]
    assert on_table == [
        {
            "Action": "dynamodb:GetItem",
            "Effect": "Allow",
            "Resource": table,
            "Condition": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["payments"]}},
        }
    ]


def test_each_sources_breaker_record_in_the_state_table_is_named_by_its_address(
    built: dict[str, Built],
) -> None:
    case = built["rule_queue"]
    [source] = sources_of(case)
    state_table = arn(case, case.redriver.state_table)
    gets = [s for s in statements_with(case, "dynamodb:GetItem") if s["Resource"] == state_table]
    [keys] = [s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] for s in gets]
    assert f"BREAKER#{source.address}" in keys
    assert source.address == f"{source.arn}|{source.target_arn}"


def test_a_re_driver_of_dead_letters_is_granted_no_kit_record(built: dict[str, Built]) -> None:
    # No kit reports for these kinds: a consumer's FAILURE# or VERDICTS# record is none of its reading.
    for case in built.values():
        state_table = arn(case, case.redriver.state_table)
        on_table = [s for s in statements(case) if s["Resource"] == state_table]
        keys = [
            k for s in on_table for k in s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        ]
        assert keys and [k for k in keys if k.startswith(("FAILURE#", "VERDICTS#"))] == []


def test_a_rule_target_queue_gets_sendmessage_alone_and_its_key_through_sqs(built: dict[str, Built]) -> None:
    case = built["rule_queue"]
    target = arn(case, case.parts["queue"])
    assert [s for s in statements(case) if target in as_list(s["Resource"])] == [
        {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": target}
    ]
    key = arn(case, case.parts["queue"].encryption_master_key)
    [key_statement] = [s for s in statements(case) if key in as_list(s["Resource"])]
    assert sorted(key_statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert key_statement["Condition"] == {"StringEquals": {"kms:ViaService": f"sqs.{REGION}.amazonaws.com"}}


def test_no_publish_to_a_topic_nor_put_events_on_a_bus_of_a_source(built: dict[str, Built]) -> None:
    for case in built.values():
        assert statements_with(case, "sns:Publish") == []
        assert statements_with(case, "events:PutEvents") == []


def test_a_subscription_source_may_send_to_its_endpoint_and_not_touch_its_topic(
    built: dict[str, Built],
) -> None:
    case = built["subscription"]
    topic_arn = deployed(case.template.to_json(), {"Ref": logical_id(case.parts["topic"])})
    endpoint = arn(case, case.parts["endpoint"])
    assert [s["Action"] for s in statements(case) if endpoint in as_list(s["Resource"])] == [
        "sqs:SendMessage"
    ]
    assert [s for s in statements(case) if topic_arn in json.dumps(s)] == []


def test_the_dlq_is_consumed_as_for_a_source_queue(built: dict[str, Built]) -> None:
    case = built["subscription"]
    queue = arn(case, case.parts["dlq"])
    [consume] = [s for s in statements(case) if queue in as_list(s["Resource"])]
    assert "sqs:ReceiveMessage" in consume["Action"] and "sqs:DeleteMessage" in consume["Action"]
    assert "sqs:SendMessage" not in consume["Action"]


def test_the_cdk_nag_packs_find_nothing_unacknowledged(synthesized: tuple[Any, dict[str, Any]]) -> None:
    assert_nag_clean(synthesized[1])


# --- the dashboard --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "metrics"),
    [
        ("function", ["Errors", "Throttles"]),
        ("rule_queue", ["FailedInvocations", "InvocationsSentToDlq"]),
        ("subscription", ["NumberOfNotificationsFailed", "NumberOfNotificationsRedrivenToDlq"]),
    ],
)
def test_the_dashboard_shows_how_the_source_fails(
    built: dict[str, Built], name: str, metrics: list[str]
) -> None:
    case = built[name]
    template = case.template.to_json()
    [body] = [
        deployed(template, resource["Properties"]["DashboardBody"])
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Dashboard"
        and resource["Properties"].get("DashboardName", "").find(case.redriver.node.id) >= 0
    ]
    lines = [
        line for widget in json.loads(body)["widgets"] for line in widget["properties"].get("metrics", [])
    ]
    assert "Source queue depth" not in body
    for metric in metrics:
        assert any(metric in line for line in lines), metric


def test_a_rule_targets_graph_names_the_rule_by_the_last_part_of_its_arn(built: dict[str, Built]) -> None:
    case = built["rule_queue"]
    template = case.template.to_json()
    body = "".join(
        deployed(template, resource["Properties"]["DashboardBody"])
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Dashboard"
    )
    assert f'"FailedInvocations","RuleName","{logical_id(case.parts["rule"])}"' in body


# --- every kind of rule target --------------------------------------------------------------------


def bare_stack() -> cdk.Stack:
    """A stack of a fresh app, for what needs no nag report."""
    return cdk.Stack(cdk.App(), "Bare", env=ENV)


def bare_function(scope: cdk.Stack, construct_id: str = "Target", **props: Any) -> lambda_.Function:
    return lambda_.Function(
        scope,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
        **props,
    )


def rule_with(scope: cdk.Stack, target: events.IRuleTarget) -> events.Rule:
    rule = events.Rule(scope, "Rule", event_pattern=events.EventPattern(source=["orders"]))
    rule.add_target(target)
    return rule


def delivery_statements(stack: cdk.Stack, redriver: SqsRedriver, target_arn: Any) -> list[Statement]:
    template = Template.from_stack(stack).to_json()
    role = {"Ref": logical_id(redriver.function.role)}  # type: ignore[arg-type]
    return [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy" and role in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if target_arn in as_list(statement["Resource"])
    ]


def test_a_state_machine_target_may_be_started_and_nothing_more() -> None:
    stack = bare_stack()
    machine = sfn.StateMachine(
        stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "Pass"))
    )
    rule = rule_with(stack, targets.SfnStateMachine(machine, dead_letter_queue=sqs.Queue(stack, "Dlq")))
    redriver = SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)
    [source] = [attached.source for attached in redriver.dead_letter_sources]
    assert source.target_kind is TargetKind.STATE_MACHINE
    assert delivery_statements(stack, redriver, {"Ref": logical_id(machine)}) == [
        {"Action": "states:StartExecution", "Effect": "Allow", "Resource": {"Ref": logical_id(machine)}}
    ]


def test_another_event_bus_target_may_be_put_events_on() -> None:
    stack = bare_stack()
    bus = events.EventBus(stack, "Elsewhere")
    rule = rule_with(stack, targets.EventBus(bus, dead_letter_queue=sqs.Queue(stack, "Dlq")))
    redriver = SqsRedriver.for_rule_target(stack, "Redriver", rule=rule, target=bus)
    bus_arn = {"Fn::GetAtt": [logical_id(bus), "Arn"]}
    assert delivery_statements(stack, redriver, bus_arn) == [
        {"Action": "events:PutEvents", "Effect": "Allow", "Resource": bus_arn}
    ]


def test_a_topic_target_may_be_published_to_with_its_key_through_sns() -> None:
    stack = bare_stack()
    target = topic(stack, "Alerts")
    rule = rule_with(stack, targets.SnsTopic(target, dead_letter_queue=sqs.Queue(stack, "Dlq")))
    redriver = SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)
    assert delivery_statements(stack, redriver, {"Ref": logical_id(target)}) == [
        {"Action": "sns:Publish", "Effect": "Allow", "Resource": {"Ref": logical_id(target)}}
    ]
    key_arn = {"Fn::GetAtt": [logical_id(target.master_key), "Arn"]}  # type: ignore[arg-type]
    [key] = delivery_statements(stack, redriver, key_arn)
    assert (key["Action"], key["Condition"]["StringEquals"]["kms:ViaService"]["Fn::Join"][1][0]) == (
        ["kms:GenerateDataKey", "kms:Decrypt"],
        f"sns.{REGION}.",
    )


def test_an_imported_function_target_is_told_by_its_arn() -> None:
    stack = bare_stack()
    imported = lambda_.Function.from_function_arn(
        stack, "Imported", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:elsewhere"
    )
    rule = rule_with(stack, targets.LambdaFunction(imported, dead_letter_queue=sqs.Queue(stack, "Dlq")))
    redriver = SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)
    assert delivery_statements(stack, redriver, imported.function_arn) == [
        {"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": imported.function_arn}
    ]


# --- what cannot be re-driven, said at synth ------------------------------------------------------


def test_a_function_with_neither_destination_nor_dlq_is_refused() -> None:
    stack = bare_stack()
    target = bare_function(stack)
    with pytest.raises(
        SettingsError,
        match=r"the function Bare/Target has neither an on-failure destination nor a dead-letter queue",
    ):
        SqsRedriver.for_function(stack, "Redriver", function=target)


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda stack: destinations.SnsDestination(sns.Topic(stack, "Topic")), "an SNS topic"),
        (
            lambda stack: destinations.EventBridgeDestination(events.EventBus(stack, "Bus")),
            "an EventBridge event bus",
        ),
        (lambda stack: destinations.LambdaDestination(bare_function(stack, "Other")), "a Lambda function"),
    ],
)
def test_an_on_failure_destination_that_is_no_queue_is_named(make: Any, named: str) -> None:
    stack = bare_stack()
    target = bare_function(stack, on_failure=make(stack))
    with pytest.raises(
        SettingsError,
        match=f"the on-failure destination of the function Bare/Target is {named}; "
        "the re-driver reads an SQS queue",
    ):
        SqsRedriver.for_function(stack, "Redriver", function=target)


def test_a_dead_letter_queue_that_is_not_the_functions_is_refused() -> None:
    stack = bare_stack()
    target = bare_function(stack, on_failure=destinations.SqsDestination(sqs.Queue(stack, "Dlq")))
    with pytest.raises(
        SettingsError,
        match="dead_letter_queue is not the on-failure destination nor the dead-letter queue of "
        "the function Bare/Target",
    ):
        SqsRedriver.for_function(
            stack, "Redriver", function=target, dead_letter_queue=sqs.Queue(stack, "Other")
        )


def test_a_function_with_both_a_destination_and_a_dlq_needs_the_one_to_drain() -> None:
    stack = bare_stack()
    destination, older = sqs.Queue(stack, "Destination"), sqs.Queue(stack, "Older")
    target = bare_function(
        stack, on_failure=destinations.SqsDestination(destination), dead_letter_queue=older
    )
    with pytest.raises(
        SettingsError,
        match="has both an on-failure destination and a dead-letter queue: pass dead_letter_queue=",
    ):
        SqsRedriver.for_function(stack, "Redriver", function=target)
    redriver = SqsRedriver.for_function(stack, "Redriver", function=target, dead_letter_queue=older)
    assert redriver.dead_letter_queue is older


def test_a_dlq_too_small_for_an_asynchronous_payload_is_refused() -> None:
    stack = bare_stack()
    small = sqs.Queue(stack, "Dlq", max_message_size_bytes=262_144)
    target = bare_function(stack, on_failure=destinations.SqsDestination(small))
    with pytest.raises(
        SettingsError,
        match="takes messages of at most 262144 bytes.*records of larger payloads will drop their payload",
    ):
        SqsRedriver.for_function(stack, "Redriver", function=target)


def test_a_fifo_dlq_of_a_function_is_refused() -> None:
    stack = bare_stack()
    fifo = sqs.Queue(stack, "Dlq", fifo=True)
    target = bare_function(stack, on_failure=destinations.SqsDestination(fifo))
    with pytest.raises(
        SettingsError, match="is a FIFO queue: Lambda sends asynchronous failures to a standard queue only"
    ):
        SqsRedriver.for_function(stack, "Redriver", function=target)


def test_an_imported_rule_target_dlq_is_given_by_the_caller() -> None:
    stack = bare_stack()
    imported = sqs.Queue.from_queue_arn(stack, "Dlq", f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-dlq")
    rule = rule_with(stack, targets.LambdaFunction(bare_function(stack), dead_letter_queue=imported))
    with pytest.raises(SettingsError, match="is not a queue of this app: pass it as dead_letter_queue="):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)
    redriver = SqsRedriver.for_rule_target(stack, "Redriver", rule=rule, dead_letter_queue=imported)
    assert redriver.dead_letter_queue is imported


def test_a_function_dead_letter_topic_is_refused() -> None:
    stack = bare_stack()
    target = bare_function(stack, dead_letter_topic=sns.Topic(stack, "Topic"))
    with pytest.raises(
        SettingsError, match="the dead-letter queue of the function Bare/Target is an SNS topic"
    ):
        SqsRedriver.for_function(stack, "Redriver", function=target)


def test_a_rule_target_without_a_dlq_is_refused() -> None:
    stack = bare_stack()
    rule = rule_with(stack, targets.LambdaFunction(bare_function(stack)))
    with pytest.raises(
        SettingsError, match="the target Target0 of the rule Bare/Rule has no dead-letter queue"
    ):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)


def test_a_rule_target_of_another_kind_is_named() -> None:
    stack = bare_stack()
    stream = kinesis.Stream(stack, "Stream")
    rule = rule_with(stack, targets.KinesisStream(stream, dead_letter_queue=sqs.Queue(stack, "Dlq")))
    with pytest.raises(
        SettingsError,
        match="the target Target0 of the rule Bare/Rule is a Kinesis stream; the re-driver delivers to",
    ):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (
            events.RuleTargetInput.from_object({"order": events.EventField.from_path("$.detail.id")}),
            "inputTransformer",
        ),
        (events.RuleTargetInput.from_text("constant"), "input"),
        (events.RuleTargetInput.from_event_path("$.detail"), "inputPath"),
    ],
)
def test_a_transformed_input_is_refused_and_why(given: events.RuleTargetInput, named: str) -> None:
    stack = bare_stack()
    target = targets.LambdaFunction(
        bare_function(stack), event=given, dead_letter_queue=sqs.Queue(stack, "Dlq")
    )
    rule = rule_with(stack, target)
    with pytest.raises(
        SettingsError, match=f"has {named}: its DLQ holds the event as it matched, untransformed"
    ):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)


def test_the_rules_own_bus_is_refused_as_a_target() -> None:
    stack = bare_stack()
    bus = events.EventBus(stack, "Bus")
    rule = events.Rule(stack, "Rule", event_bus=bus, event_pattern=events.EventPattern(source=["orders"]))
    rule.add_target(targets.EventBus(bus, dead_letter_queue=sqs.Queue(stack, "Dlq")))
    with pytest.raises(
        SettingsError,
        match="is the rule's own event bus: re-delivering there would publish each event to every rule",
    ):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)


def test_the_default_bus_is_refused_as_a_target_of_a_rule_on_it() -> None:
    stack = bare_stack()
    default = events.EventBus.from_event_bus_name(stack, "Default", "default")
    rule = rule_with(stack, targets.EventBus(default, dead_letter_queue=sqs.Queue(stack, "Dlq")))
    with pytest.raises(SettingsError, match="is the rule's own event bus"):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)


def test_a_rule_with_several_targets_needs_the_one_to_redrive() -> None:
    stack = bare_stack()
    rule = rule_with(
        stack, targets.LambdaFunction(bare_function(stack, "One"), dead_letter_queue=sqs.Queue(stack, "Dlq1"))
    )
    rule.add_target(
        targets.LambdaFunction(bare_function(stack, "Two"), dead_letter_queue=sqs.Queue(stack, "Dlq2"))
    )
    with pytest.raises(
        SettingsError, match=r"the rule Bare/Rule has 2 targets \(Target0, Target1\): pass target="
    ):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule)
    with pytest.raises(SettingsError, match="target_index 2 names no target of the rule Bare/Rule"):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule, target_index=2)


def test_a_target_wrapper_is_not_taken_for_its_construct() -> None:
    stack = bare_stack()
    wrapper = targets.LambdaFunction(bare_function(stack), dead_letter_queue=sqs.Queue(stack, "Dlq"))
    rule = rule_with(stack, wrapper)
    with pytest.raises(SettingsError, match="target must be the construct the rule targets"):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule, target=wrapper)  # type: ignore[arg-type]


def test_a_subscription_of_another_protocol_is_named() -> None:
    stack = bare_stack()
    subscription = sns.Topic(stack, "Topic").add_subscription(
        subscriptions.UrlSubscription("https://example.com/hook", dead_letter_queue=sqs.Queue(stack, "Dlq"))
    )
    with pytest.raises(
        SettingsError,
        match="the endpoint protocol of the subscription .* is https; the re-driver delivers to an SQS queue",
    ):
        SqsRedriver.for_subscription(stack, "Redriver", subscription=subscription)


def test_a_subscription_without_a_redrive_policy_is_refused() -> None:
    stack = bare_stack()
    subscription = sns.Topic(stack, "Topic").add_subscription(
        subscriptions.LambdaSubscription(bare_function(stack))
    )
    with pytest.raises(SettingsError, match="has no dead-letter queue \\(redrive policy\\)"):
        SqsRedriver.for_subscription(stack, "Redriver", subscription=subscription)


def test_a_function_subscription_may_invoke_its_endpoint() -> None:
    stack = bare_stack()
    endpoint = bare_function(stack)
    subscription = sns.Topic(stack, "Topic").add_subscription(
        subscriptions.LambdaSubscription(endpoint, dead_letter_queue=sqs.Queue(stack, "Dlq"))
    )
    redriver = SqsRedriver.for_subscription(stack, "Redriver", subscription=subscription)
    endpoint_arn = {"Fn::GetAtt": [logical_id(endpoint), "Arn"]}
    assert delivery_statements(stack, redriver, endpoint_arn) == [
        {"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": endpoint_arn}
    ]


def test_a_composite_breaker_key_of_a_function_defaults_to_powertools_partition_value() -> None:
    stack = bare_stack()
    table = dynamodb.Table(
        stack,
        "Breakers",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
    )
    target = bare_function(stack, on_failure=destinations.SqsDestination(sqs.Queue(stack, "Dlq")))
    breaker = ConsumerBreakerProps(table=table, name="payments", key_attr="pk", sort_key_attr="sk")
    redriver = SqsRedriver.for_function(stack, "Redriver", function=target, consumer_breaker=breaker)
    [attached] = redriver.dead_letter_sources
    assert stack.resolve(attached.breaker_key) == {
        "Fn::Join": ["", ["circuit_breaker#", {"Ref": logical_id(target)}]]
    }


def test_a_composite_breaker_key_of_another_target_needs_its_partition_value() -> None:
    stack = bare_stack()
    table = dynamodb.Table(
        stack, "Breakers", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    )
    rule = rule_with(
        stack, targets.SqsQueue(sqs.Queue(stack, "Target"), dead_letter_queue=sqs.Queue(stack, "Dlq"))
    )
    breaker = ConsumerBreakerProps(table=table, name="payments", key_attr="pk", sort_key_attr="sk")
    with pytest.raises(
        SettingsError, match="consumer_breaker.static_pk_value is required with sort_key_attr"
    ):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule, consumer_breaker=breaker)


def test_what_the_lambda_would_refuse_is_refused_at_synth_naming_the_field() -> None:
    stack = bare_stack()
    target = bare_function(stack, on_failure=destinations.SqsDestination(sqs.Queue(stack, "Dlq")))
    breaker = ConsumerBreakerProps(table=breaker_table(stack), name="payments", state_attr="no spaces")
    with pytest.raises(SettingsError, match="cannot be re-driven as configured: .*breaker.state_attr"):
        SqsRedriver.for_function(stack, "Redriver", function=target, consumer_breaker=breaker)


def test_a_dead_letter_redriver_has_no_consumer_to_grant() -> None:
    stack = bare_stack()
    target = bare_function(stack, on_failure=destinations.SqsDestination(sqs.Queue(stack, "Dlq")))
    redriver = SqsRedriver.for_function(stack, "Redriver", function=target)
    with pytest.raises(SettingsError, match="grant_consumer is for a consumer of a source queue"):
        redriver.grant_consumer(bare_function(stack, "Consumer"))


def test_a_source_queue_cannot_be_given_with_another_kinds_source() -> None:
    stack = bare_stack()
    target = bare_function(stack, on_failure=destinations.SqsDestination(sqs.Queue(stack, "Dlq")))
    with pytest.raises(SettingsError, match="source_queue is read from the source's constructs"):
        SqsRedriver.for_function(stack, "Redriver", function=target, source_queue=sqs.Queue(stack, "Source"))


def test_an_operator_of_a_dead_letter_redriver_gets_no_source_queue_statement() -> None:
    stack = bare_stack()
    target = bare_function(stack, on_failure=destinations.SqsDestination(sqs.Queue(stack, "Dlq")))
    redriver = SqsRedriver.for_function(stack, "Redriver", function=target)
    redriver.grant_operator(iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal()))
    # Synthesizing fails on a statement without a resource (a source statement of no queue).
    [policy] = (
        Template.from_stack(stack)
        .find_resources(
            "AWS::IAM::Policy", {"Properties": {"PolicyName": Match.string_like_regexp("Operator")}}
        )
        .values()
    )
    allowed = [statement["Action"] for statement in policy["Properties"]["PolicyDocument"]["Statement"]]
    assert ["sqs:SendMessage", "sqs:GetQueueAttributes"] not in allowed


# --- the pure rules ---------------------------------------------------------------------------------


@given(
    retries=st.integers(min_value=0, max_value=EVENTBRIDGE_DEFAULT_RETRY_ATTEMPTS),
    age=st.integers(min_value=60, max_value=EVENTBRIDGE_DEFAULT_EVENT_AGE_SECONDS),
)
def test_a_rule_targets_tries_cover_its_event_age_within_the_protocols_bounds(retries: int, age: int) -> None:
    found = rule_retries({"maximumRetryAttempts": retries, "maximumEventAgeInSeconds": age}, "a target")
    assert found.attempts == retries + 1
    assert found.attempts * found.attempt_seconds >= age
    assert 1 <= found.attempt_seconds <= MAX_ATTEMPT_SECONDS
    assert (found.attempt_seconds - 1) * found.attempts < age


KNOWN_ARNS = {
    "lambda": ("function:orders", TargetKind.FUNCTION),
    "sqs": ("orders", TargetKind.QUEUE),
    "sns": ("orders", TargetKind.TOPIC),
    "states": ("stateMachine:orders", TargetKind.STATE_MACHINE),
    "events": ("event-bus/orders", TargetKind.EVENT_BUS),
}


@given(service=st.sampled_from(sorted(KNOWN_ARNS)), region=st.sampled_from(["eu-west-1", "us-east-2"]))
def test_a_literal_arn_of_a_target_kind_is_told_by_its_service(service: str, region: str) -> None:
    resource, kind = KNOWN_ARNS[service]
    assert describe_arn(f"arn:aws:{service}:{region}:{ACCOUNT}:{resource}")[0] is kind


@given(service=st.from_regex(r"[a-z][a-z0-9-]{1,20}", fullmatch=True).filter(lambda s: s not in KNOWN_ARNS))
def test_a_literal_arn_of_another_service_is_no_target_and_is_named(service: str) -> None:
    kind, description = describe_arn(f"arn:aws:{service}:{REGION}:{ACCOUNT}:thing/name")
    assert kind is None
    assert description.startswith("a") and len(description) > 3


def test_an_api_destination_is_no_target_though_its_service_is_events() -> None:
    assert describe_arn(f"arn:aws:events:{REGION}:{ACCOUNT}:api-destination/hook/abc") == (
        None,
        "an API destination",
    )


def test_a_rule_target_of_another_stack_reaches_the_redriver_by_cross_stack_references() -> None:
    app = cdk.App()
    events_stack, redriver_stack = cdk.Stack(app, "Events", env=ENV), cdk.Stack(app, "Redrive", env=ENV)
    rule = rule_with(
        events_stack,
        targets.LambdaFunction(bare_function(events_stack), dead_letter_queue=sqs.Queue(events_stack, "Dlq")),
    )
    redriver = SqsRedriver.for_rule_target(redriver_stack, "Redriver", rule=rule)
    variables = Template.from_stack(redriver_stack).to_json()["Resources"][logical_id(redriver.function)]
    sources = variables["Properties"]["Environment"]["Variables"][SOURCES_ENV]
    assert "Fn::ImportValue" in json.dumps(sources)


@pytest.mark.parametrize(
    ("props", "probe_timeout"),
    [
        ({"timeout": cdk.Duration.seconds(20)}, 20),
        ({"timeout": cdk.Duration.seconds(61)}, 0),
        ({"timeout": cdk.Duration.seconds(20), "on_success": "queue"}, 0),
    ],
    ids=["short-timeout", "longer-than-a-run-waits", "on-success-destination"],
)
def test_a_function_is_probed_synchronously_only_when_a_run_can_wait_and_no_success_is_missed(
    props: dict[str, Any], probe_timeout: int
) -> None:
    stack = bare_stack()
    if props.get("on_success"):
        props = {**props, "on_success": destinations.SqsDestination(sqs.Queue(stack, "Successes"))}
    target = bare_function(
        stack, on_failure=destinations.SqsDestination(sqs.Queue(stack, "Failures")), **props
    )

    redriver = SqsRedriver.for_function(stack, "Redriver", function=target)

    [attached] = redriver.dead_letter_sources
    assert attached.source.probe_timeout_seconds == probe_timeout


def test_the_operator_may_replay_to_each_target_with_its_one_delivery_call_and_nothing_more() -> None:
    stack = bare_stack()
    target = bare_function(stack, on_failure=destinations.SqsDestination(sqs.Queue(stack, "Failures")))
    redriver = SqsRedriver.for_function(stack, "Redriver", function=target)
    operator = iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal())

    redriver.grant_operator(operator)

    template = Template.from_stack(stack).to_json()
    operator_statements = [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy"
        and {"Ref": logical_id(operator)} in resource["Properties"].get("Roles", [])
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]
    delivering = [
        s for s in operator_statements if s["Action"] in ("lambda:InvokeFunction", ["lambda:InvokeFunction"])
    ]
    assert [s["Resource"] for s in delivering] == [{"Fn::GetAtt": [logical_id(target), "Arn"]}]
    actions = {a for s in operator_statements for a in as_list(s["Action"])}
    assert not actions & {"sns:Publish", "events:PutEvents", "states:StartExecution"}


def test_consumer_verdicts_are_refused_for_a_dlq_of_another_kind_at_synth() -> None:
    stack = bare_stack()
    target = bare_function(stack, on_failure=destinations.SqsDestination(sqs.Queue(stack, "Failures")))

    redriver = SqsRedriver.for_function(
        stack, "Redriver", function=target, settings=RedriverSettings(consumer_verdicts=True)
    )

    [finding] = wiring_findings(redriver)
    assert finding.startswith("consumer_verdicts is on for a DLQ of another kind")


def test_a_fifo_endpoint_of_a_subscription_is_refused() -> None:
    stack = bare_stack()
    topic = sns.Topic(stack, "Orders", fifo=True, topic_name="orders")
    endpoint = sqs.Queue(stack, "Endpoint", fifo=True)
    subscription = topic.add_subscription(
        subscriptions.SqsSubscription(endpoint, dead_letter_queue=sqs.Queue(stack, "Dlq", fifo=True))
    )

    with pytest.raises(
        SettingsError, match="is a FIFO queue: its dead letters do not carry the message group"
    ):
        SqsRedriver.for_subscription(stack, "Redriver", subscription=subscription)


def test_a_target_added_after_the_re_driver_is_named_as_missing_and_how_to_fix_it() -> None:
    stack = bare_stack()
    queue = sqs.Queue(stack, "Fulfilment")
    rule = events.Rule(stack, "Rule", event_pattern=events.EventPattern(source=["orders"]))

    with pytest.raises(
        SettingsError, match=r"has no target on .*add it with rule.add_target\(\.\.\.\) before"
    ):
        SqsRedriver.for_rule_target(stack, "Redriver", rule=rule, target=queue)
