"""The synthesized template: every resource, grant and secure default the re-driver promises."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template

from app import STACK_NAME, build_app
from sqs_redriver.cdk.functions import powertools_layer_parameter
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.cdk.stack import RedriverStack
from sqs_redriver.runtime.settings import load_settings
from tests.support.templates import as_list, logical_id, properties, role_statements


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cdk.App]:
    yield build_app(outdir=str(tmp_path_factory.mktemp("cdk.out")))


@pytest.fixture(scope="module")
def stack(app: cdk.App) -> RedriverStack:
    found = app.node.find_child(STACK_NAME)
    assert isinstance(found, RedriverStack)
    return found


@pytest.fixture(scope="module")
def template(stack: cdk.Stack) -> Template:
    return Template.from_stack(stack)


def redrive_function(template: Template) -> dict[str, Any]:
    functions = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": "sqs_redriver.runtime.handler.lambda_handler"}}
    )
    [(_, function)] = functions.items()
    return function["Properties"]


def redrive_policy_statements(template: Template) -> list[dict[str, Any]]:
    return role_statements(template, redrive_function(template))


def tls_only_queues(template: Template) -> set[str]:
    """Queues whose policy denies every SQS action to everyone over plain HTTP."""
    return {
        ref["Ref"]
        for policy in template.find_resources("AWS::SQS::QueuePolicy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Effect"] == "Deny"
        and statement["Action"] == "sqs:*"
        and statement["Principal"] == {"AWS": "*"}
        and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for ref in policy["Properties"]["Queues"]
    }


def test_parking_lot_is_encrypted_and_keeps_messages_14_days(
    template: Template, stack: RedriverStack
) -> None:
    parking_lot = properties(template, stack.redriver.parking_lot)

    assert parking_lot["MessageRetentionPeriod"] == 14 * 86_400
    assert parking_lot["SqsManagedSseEnabled"] is True
    assert "RedrivePolicy" not in parking_lot  # the terminal queue
    assert redrive_function(template)["Environment"]["Variables"]["PARKING_LOT_URL"] == {
        "Ref": logical_id(stack.redriver.parking_lot)
    }


def test_every_queue_is_encrypted_and_refuses_plain_http(template: Template, stack: RedriverStack) -> None:
    queues = template.find_resources("AWS::SQS::Queue")
    promised = {stack.source_queue, stack.dead_letter_queue, stack.redriver.parking_lot}
    assert {logical_id(queue) for queue in promised} <= set(queues)

    unencrypted = {
        name for name, q in queues.items() if q["Properties"].get("SqsManagedSseEnabled") is not True
    }
    assert unencrypted == set()
    assert set(queues) - tls_only_queues(template) == set()


def test_source_queue_has_dlq_and_visibility_six_times_the_consumer_timeout(
    template: Template, stack: RedriverStack
) -> None:
    source = properties(template, stack.source_queue)
    consumer_timeout = properties(template, stack.consumer)["Timeout"]

    assert consumer_timeout == 30
    assert source["VisibilityTimeout"] == 6 * consumer_timeout
    assert source["MessageRetentionPeriod"] == 4 * 86_400
    assert source["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [logical_id(stack.dead_letter_queue), "Arn"]},
        "maxReceiveCount": 5,
    }


@pytest.mark.parametrize(
    ("table", "key", "ttl"),
    [("state table", "pk", "expires_at"), ("idempotency table", "id", "expiration")],
)
def test_tables_have_string_key_ttl_pitr_and_on_demand_billing(
    template: Template, stack: RedriverStack, table: str, key: str, ttl: str
) -> None:
    # the re-driver's state table, and the example consumer's idempotency table
    construct = stack.redriver.state_table if table == "state table" else stack.idempotency_table

    found = properties(template, construct)
    found.pop("GlobalSecondaryIndexes", None)
    assert found.pop("AttributeDefinitions")[0] == {"AttributeName": key, "AttributeType": "S"}
    assert found == {
        "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST",
        "TimeToLiveSpecification": {"AttributeName": ttl, "Enabled": True},
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "SSESpecification": {"SSEEnabled": True},
    }


def test_the_state_table_s_one_index_lists_each_message_record_s_key_under_its_identity(
    template: Template, stack: RedriverStack
) -> None:
    # how the operator's tool finds a function's dead letter on any trip (StateTable.load_trips)
    found = properties(template, stack.redriver.state_table)

    assert found["AttributeDefinitions"] == [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "identity", "AttributeType": "S"},
    ]
    assert found["GlobalSecondaryIndexes"] == [
        {
            "IndexName": "identity",
            "KeySchema": [{"AttributeName": "identity", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }
    ]
    assert "GlobalSecondaryIndexes" not in properties(template, stack.idempotency_table)


def test_consumer_has_unrestricted_item_access_to_its_idempotency_table_only(
    template: Template, stack: RedriverStack
) -> None:
    # its access to the state table, limited to the kit's records, is checked in test_consumer_grant
    consumer = properties(template, stack.consumer)
    idempotency = logical_id(stack.idempotency_table)
    dynamodb = [
        statement
        for statement in role_statements(template, consumer)
        if any(action.startswith("dynamodb:") for action in as_list(statement["Action"]))
        and "Condition" not in statement
    ]

    assert consumer["Environment"]["Variables"]["IDEMPOTENCY_TABLE_NAME"] == {"Ref": idempotency}
    assert dynamodb == [
        {
            "Action": ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [idempotency, "Arn"]},
        }
    ]


def test_redrive_function_runtime_and_limits(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "sqs_redriver.runtime.handler.lambda_handler",
            "Runtime": "python3.14",
            "Architectures": ["arm64"],
            "MemorySize": 512,
            "Timeout": 120,
            "ReservedConcurrentExecutions": 17,
            "TracingConfig": {"Mode": "Active"},
            "LoggingConfig": {"LogFormat": "JSON", "LogGroup": Match.any_value()},
            "Layers": [f"{{{{resolve:ssm:{powertools_layer_parameter()}}}}}"],
        },
    )


def test_functions_have_their_own_log_groups_with_retention(template: Template) -> None:
    functions = template.find_resources("AWS::Lambda::Function")
    log_groups = template.find_resources("AWS::Logs::LogGroup")
    log_group_of = {
        name: f["Properties"]["LoggingConfig"]["LogGroup"]["Ref"] for name, f in functions.items()
    }

    assert len(set(log_group_of.values())) == len(log_group_of), f"shared log groups: {log_group_of}"
    assert {
        name: log_groups[group]["Properties"]["RetentionInDays"] for name, group in log_group_of.items()
    } == dict.fromkeys(functions, 30)


def test_redrive_function_is_not_retried_asynchronously(template: Template, stack: RedriverStack) -> None:
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": {"Ref": logical_id(stack.redriver.function)},
            "MaximumRetryAttempts": 0,
            "MaximumEventAgeInSeconds": 600,
            "Qualifier": "$LATEST",
        },
    )


def test_schedule_runs_the_redriver_every_five_minutes(template: Template, stack: RedriverStack) -> None:
    rule = properties(template, stack.redriver.schedule_rule)
    [target] = rule["Targets"]

    assert (rule["ScheduleExpression"], rule["State"]) == ("rate(5 minutes)", "ENABLED")
    assert target["Arn"] == {"Fn::GetAtt": [logical_id(stack.redriver.function), "Arn"]}
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": target["Arn"],
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [logical_id(stack.redriver.schedule_rule), "Arn"]},
        },
    )


def test_redrive_function_environment_passes_the_lambdas_own_validation(
    template: Template, stack: RedriverStack
) -> None:
    environment = redrive_function(template)["Environment"]["Variables"]
    resolved = {
        name: value if isinstance(value, str) else f"https://sqs.example/{name}"
        for name, value in environment.items()
    }
    resolved["DYNAMODB_TABLE_NAME"] = "state"
    resolved["CONSUMER_FUNCTION_NAMES"] = "orders-consumer"  # the consumer's name, a Ref in the template

    settings = load_settings(resolved)

    assert settings.max_redrive_count == 5 and settings.dlq_visibility_timeout_seconds == 150
    assert environment["CONSUMER_FUNCTION_NAMES"] == {"Ref": logical_id(stack.consumer)}
    assert {"DLQ_URL", "SOURCE_QUEUE_URL", "PARKING_LOT_URL", "DYNAMODB_TABLE_NAME"} <= set(environment)


def test_redrive_role_has_least_privilege(template: Template) -> None:
    statements = redrive_policy_statements(template)
    actions = {action for statement in statements for action in as_list(statement["Action"])}
    assert {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:SendMessage",
    } <= actions
    assert {
        "dynamodb:BatchGetItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:PutItem",
        "dynamodb:GetItem",
    } <= actions
    assert not {"dynamodb:Scan", "dynamodb:Query", "sqs:PurgeQueue", "sqs:*", "dynamodb:*"} & actions
    wildcard = [s for s in statements if s["Resource"] == "*"]
    assert {a for s in wildcard for a in as_list(s["Action"])} == {
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "cloudwatch:GetMetricData",  # queue_metrics: no resource-level permissions
    }


def test_redrive_role_may_invoke_its_own_function_and_no_other(
    template: Template, stack: RedriverStack
) -> None:
    invokes = [
        s for s in redrive_policy_statements(template) if "lambda:InvokeFunction" in as_list(s["Action"])
    ]

    assert [s["Resource"] for s in invokes] == [{"Fn::GetAtt": [logical_id(stack.redriver.function), "Arn"]}]


def test_redrive_role_consumes_only_the_dlq_and_sends_only_to_source_and_parking_lot(
    template: Template, stack: RedriverStack
) -> None:
    queues = template.find_resources("AWS::SQS::Queue")
    source, dlq, parking = (
        logical_id(queue)
        for queue in (stack.source_queue, stack.dead_letter_queue, stack.redriver.parking_lot)
    )
    queues_of: dict[str, set[str]] = {}
    for statement in redrive_policy_statements(template):
        resources = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        for action in as_list(statement["Action"]):
            queues_of.setdefault(action, set()).update(
                r["Fn::GetAtt"][0]
                for r in resources
                if isinstance(r, dict) and "Fn::GetAtt" in r and r["Fn::GetAtt"][0] in queues
            )

    assert queues_of["sqs:ReceiveMessage"] == {dlq}
    assert queues_of["sqs:DeleteMessage"] == {dlq}
    assert queues_of["sqs:SendMessage"] == {source, parking}


def test_archive_bucket_is_private_encrypted_tls_only_expiring_and_retained(
    template: Template, stack: RedriverStack
) -> None:
    archive = stack.redriver.archive
    assert archive is not None
    resource = template.to_json()["Resources"][logical_id(archive)]
    assert (resource["DeletionPolicy"], resource["UpdateReplacePolicy"]) == ("Retain", "Retain")
    props = resource["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["LifecycleConfiguration"]["Rules"] == [{"ExpirationInDays": 365, "Status": "Enabled"}]
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": logical_id(archive)},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                        )
                    ]
                )
            },
        },
    )
    assert redrive_function(template)["Environment"]["Variables"]["ARCHIVE_BUCKET"] == {
        "Ref": logical_id(archive)
    }


def test_redrive_role_may_only_put_objects_under_the_archive_prefix(
    template: Template, stack: RedriverStack
) -> None:
    archive = stack.redriver.archive
    assert archive is not None
    s3_statements = [
        s
        for s in role_statements(template, redrive_function(template))
        if any(a.startswith("s3:") for a in as_list(s["Action"]))
    ]
    assert s3_statements == [
        {
            "Action": "s3:PutObject",
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": [logical_id(archive), "Arn"]}, "/parked/*"]]},
        }
    ]


def test_archive_lifecycle_is_a_prop_and_the_archive_can_be_turned_off() -> None:
    stack = cdk.Stack(cdk.App(), "Archives")
    kept = SqsRedriver.from_queue_arns(
        stack,
        "Kept",
        source_queue_arn="arn:aws:sqs:eu-west-1:123456789012:a",
        dead_letter_queue_arn="arn:aws:sqs:eu-west-1:123456789012:a-dlq",
        archive_expiration=cdk.Duration.days(30),
    )
    off = SqsRedriver.from_queue_arns(
        stack,
        "Off",
        source_queue_arn="arn:aws:sqs:eu-west-1:123456789012:b",
        dead_letter_queue_arn="arn:aws:sqs:eu-west-1:123456789012:b-dlq",
        archive=False,
    )
    template = Template.from_stack(stack)

    assert off.archive is None and kept.archive is not None
    template.resource_count_is("AWS::S3::Bucket", 1)
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {"LifecycleConfiguration": {"Rules": [{"ExpirationInDays": 30, "Status": "Enabled"}]}},
    )
    functions = template.find_resources("AWS::Lambda::Function")
    env = {name: f["Properties"]["Environment"]["Variables"] for name, f in functions.items()}
    assert [v["ARCHIVE_BUCKET"] for k, v in sorted(env.items()) if k.startswith("Off")] == [""]


def test_consumer_reports_partial_batch_failures(template: Template, stack: RedriverStack) -> None:
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": {"Fn::GetAtt": [logical_id(stack.source_queue), "Arn"]},
            "FunctionName": {"Ref": logical_id(stack.consumer)},
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BatchSize": 10,
        },
    )


def test_cdk_nag_packs_find_nothing_unacknowledged_and_every_acknowledgment_has_a_reason(
    app: cdk.App,
) -> None:
    # app.synth() raises ValidationFailed on any unacknowledged finding
    assembly = app.synth()
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())

    plugins = {plugin["pluginName"]: plugin for plugin in report["pluginReports"]}
    assert set(plugins) == {"AwsSolutions", "Serverless"}
    for plugin in plugins.values():
        assert plugin["conclusion"] == "success" and plugin["violations"] == []
        for suppressed in plugin["suppressedViolations"]:
            assert len(suppressed["reason"]) > 40, suppressed["ruleName"]


def test_context_settings_reach_the_template(tmp_path: Any) -> None:
    app = cdk.App(
        outdir=str(tmp_path),
        context={"redriver": {"schedule": "rate(1 minute)", "max_redrive_count": 7, "max_receive_count": 3}},
    )
    from sqs_redriver.cdk.stack import RedriverStack

    stack = RedriverStack(
        app, "Tuned", settings=RedriverSettings.from_context(app.node.try_get_context("redriver"))
    )
    template = Template.from_stack(stack)

    template.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(1 minute)"})
    template.has_resource_properties(
        "AWS::SQS::Queue", {"RedrivePolicy": Match.object_like({"maxReceiveCount": 3})}
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": Match.object_like({"MAX_REDRIVE_COUNT": "7"})}},
    )


def test_the_demo_profile_compresses_the_same_settings(tmp_path: Any) -> None:
    app = build_app(outdir=str(tmp_path), context={"redriver-profile": "demo"})
    template = Template.from_stack(app.node.find_child(STACK_NAME))

    template.has_resource_properties(
        "AWS::SQS::Queue",
        {"VisibilityTimeout": 1, "RedrivePolicy": Match.object_like({"maxReceiveCount": 1})},
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like({"BASE_DELAY_SECONDS": "1", "BREAKER_COOLDOWN_SECONDS": "2"})
            }
        },
    )


def test_an_unknown_profile_fails_at_synth(tmp_path: Any) -> None:
    with pytest.raises(SettingsError, match="redriver-profile 'fast' is not defined"):
        build_app(outdir=str(tmp_path), context={"redriver-profile": "fast"})


def test_fifo_queues_get_a_fifo_parking_lot() -> None:
    stack = cdk.Stack(cdk.App(), "Fifo")
    dlq = sqs.Queue(stack, "Dlq", fifo=True, retention_period=cdk.Duration.days(14))
    source = sqs.Queue(
        stack, "Source", fifo=True, dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
    )

    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)

    parking_lot = properties(Template.from_stack(stack), redriver.parking_lot)
    assert parking_lot["FifoQueue"] is True
    assert parking_lot["MessageRetentionPeriod"] == 14 * 86_400
    assert "RedrivePolicy" not in parking_lot


def test_a_shared_dlq_knows_every_source_and_may_send_to_each() -> None:
    stack = cdk.Stack(cdk.App(), "Shared")
    dlq = sqs.Queue(stack, "Dlq", retention_period=cdk.Duration.days(14))
    orders, payments = (
        sqs.Queue(stack, name, dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3))
        for name in ("Orders", "Payments")
    )

    SqsRedriver(stack, "Redriver", source_queue=orders, other_source_queues=[payments], dead_letter_queue=dlq)
    template = Template.from_stack(stack)

    queue_ids = set(template.find_resources("AWS::SQS::Queue"))
    orders_id, payments_id = (next(q for q in queue_ids if q.startswith(n)) for n in ("Orders", "Payments"))
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {"SOURCE_QUEUE_URL": {"Fn::Join": [",", [{"Ref": orders_id}, {"Ref": payments_id}]]}}
                )
            }
        },
    )
    sent_to = {
        r["Fn::GetAtt"][0]
        for policy in template.find_resources("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "sqs:SendMessage" in as_list(statement["Action"])
        for r in (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
    }
    assert {orders_id, payments_id} <= sent_to


def test_construct_attaches_to_existing_queues_by_arn() -> None:
    stack = cdk.Stack(cdk.App(), "Existing", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    redriver = SqsRedriver.from_queue_arns(
        stack,
        "Redriver",
        source_queue_arn="arn:aws:sqs:eu-west-1:123456789012:payments",
        dead_letter_queue_arn="arn:aws:sqs:eu-west-1:123456789012:payments-dlq",
    )
    template = Template.from_stack(stack)

    assert redriver.parking_lot is not None and redriver.state_table is not None
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": Match.array_with(["sqs:ReceiveMessage"]),
                                "Resource": "arn:aws:sqs:eu-west-1:123456789012:payments-dlq",
                            }
                        )
                    ]
                )
            }
        },
    )
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": Match.array_with(["sqs:SendMessage"]),
                                "Resource": "arn:aws:sqs:eu-west-1:123456789012:payments",
                            }
                        )
                    ]
                )
            }
        },
    )
