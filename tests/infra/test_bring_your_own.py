"""Bring your own: a parking lot, a state table and function props, used as given and checked at synth."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from sqs_redriver.cdk.functions import VPC_ACCESS_ACTIONS, acknowledge
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.cdk.storage import secure_queue, secure_table
from tests.support.stacks import (
    ACCOUNT,
    REGION,
    app_with_nag,
    assert_nag_clean,
    dead_letter_queue,
    nag_clean_consumer,
    nag_report,
    queue_pair,
    source_queue,
    wiring_findings,
)
from tests.support.templates import as_list, key_actions, logical_id, properties, role_statements

EXTENSION_LAYER = f"arn:aws:lambda:{REGION}:{ACCOUNT}:layer:extension:3"
LOT_KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/4234abcd-12ab-34cd-56ef-1234567890ab"


@dataclass
class Built:
    stack: cdk.Stack
    template: Template
    redriver: SqsRedriver
    parking_lot: sqs.Queue
    table: dynamodb.Table
    log_group: logs.LogGroup
    consumer: lambda_.Function
    report: dict[str, Any]

    @property
    def function(self) -> dict[str, Any]:
        return properties(self.template, self.redriver.function)

    def statements(self, function: lambda_.Function) -> list[dict[str, Any]]:
        return role_statements(self.template, properties(self.template, function))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A stack whose re-driver uses the user's parking lot, table, VPC, log group and extra
    environment and layer; synthesized once, with the nag packs."""
    app = app_with_nag(tmp_path_factory.mktemp("cdk.out"))
    stack = cdk.Stack(app, "Own", env=cdk.Environment(account=ACCOUNT, region=REGION))
    dlq = dead_letter_queue(stack)
    parking_lot = secure_queue(stack, "OwnParkingLot", retention_period=cdk.Duration.days(14))
    for rule_id in ("AwsSolutions::AwsSolutions-SQS3", "Serverless::Serverless-SQSRedrivePolicy"):
        acknowledge(
            parking_lot, rule_id, "The test's own parking lot: the terminal queue of poison messages."
        )
    table = secure_table(
        stack,
        "OwnTable",
        partition_key="pk",
        ttl_attribute="expires_at",
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )
    log_group = logs.LogGroup(stack, "OwnLogs", retention=logs.RetentionDays.ONE_YEAR)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=[f"{REGION}a", f"{REGION}b"],
        private_subnet_ids=["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
    )
    redriver = SqsRedriver(
        stack,
        "Redriver",
        source_queue=source_queue(stack, dlq),
        dead_letter_queue=dlq,
        parking_lot=parking_lot,
        state_table=table,
        function_props=lambda_.FunctionOptions(
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            description="Re-drives the payments DLQ",
            environment={"POWERTOOLS_LOG_LEVEL": "DEBUG"},
            layers=[lambda_.LayerVersion.from_layer_version_arn(stack, "Extension", EXTENSION_LAYER)],
            log_group=log_group,
        ),
    )
    function = nag_clean_consumer(stack)
    redriver.grant_consumer(function)
    report = nag_report(app)
    return Built(stack, Template.from_stack(stack), redriver, parking_lot, table, log_group, function, report)


# --- an own parking lot ----------------------------------------------------------------------------


def test_an_own_parking_lot_is_used_and_none_is_created(built: Built) -> None:
    queues = built.template.find_resources("AWS::SQS::Queue")

    assert built.redriver.parking_lot is built.parking_lot
    assert set(queues) == {logical_id(q) for q in (built.parking_lot, *built.redriver.source_queues)} | {
        logical_id(built.redriver.dead_letter_queue)
    }
    assert built.function["Environment"]["Variables"]["PARKING_LOT_URL"] == {
        "Ref": logical_id(built.parking_lot)
    }


def test_the_function_may_send_to_the_own_parking_lot(built: Built) -> None:
    sends = [
        s for s in built.statements(built.redriver.function) if "sqs:SendMessage" in as_list(s["Action"])
    ]

    assert {"Fn::GetAtt": [logical_id(built.parking_lot), "Arn"]} in [s["Resource"] for s in sends]


@pytest.mark.parametrize(
    ("role", "message"),
    [
        ("dlq", "dead_letter_queue and parking_lot must be different queues"),
        ("source", "source_queue and parking_lot must be different queues"),
        (
            "fifo",
            r"parking_lot and dead_letter_queue must be the same kind of queue \(here FIFO and standard",
        ),
    ],
)
def test_a_parking_lot_in_another_role_or_of_another_kind_fails_at_synth(role: str, message: str) -> None:
    stack = cdk.Stack(cdk.App(), "Bad")
    source, dlq = queue_pair(stack)
    parking_lot = {"dlq": dlq, "source": source, "fifo": sqs.Queue(stack, "Lot", fifo=True)}[role]

    redriver = SqsRedriver(
        stack, "Redriver", source_queue=source, dead_letter_queue=dlq, parking_lot=parking_lot
    )

    [finding] = wiring_findings(redriver)
    assert re.search(message, finding)


@pytest.mark.parametrize("imported", [False, True], ids=["in-app SSE-SQS", "imported without its key"])
def test_a_parking_lot_weaker_than_a_kms_dlq_fails_at_synth_naming_it(imported: bool) -> None:
    stack = cdk.Stack(cdk.App(), "Weaker", env=cdk.Environment(account=ACCOUNT, region=REGION))
    dlq = sqs.Queue(
        stack,
        "Dlq",
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=kms.Key(stack, "Key", enable_key_rotation=True),
        retention_period=cdk.Duration.days(14),
    )
    parking_lot = (
        sqs.Queue.from_queue_arn(stack, "Lot", f"arn:aws:sqs:{REGION}:{ACCOUNT}:lot")
        if imported
        else secure_queue(stack, "Lot")
    )

    redriver = SqsRedriver(
        stack, "Redriver", source_queue=_source(stack, dlq), dead_letter_queue=dlq, parking_lot=parking_lot
    )

    [finding] = wiring_findings(redriver)
    assert finding.startswith("parking_lot must be encrypted with a customer-managed KMS key")


def test_a_parking_lot_imported_with_its_key_is_accepted_and_its_key_granted() -> None:
    stack = cdk.Stack(cdk.App(), "Keyed", env=cdk.Environment(account=ACCOUNT, region=REGION))
    dlq = sqs.Queue(
        stack,
        "Dlq",
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=kms.Key(stack, "Key", enable_key_rotation=True),
        retention_period=cdk.Duration.days(14),
    )
    parking_lot = sqs.Queue.from_queue_attributes(
        stack, "Lot", queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:lot", key_arn=LOT_KEY_ARN
    )

    redriver = SqsRedriver(
        stack, "Redriver", source_queue=_source(stack, dlq), dead_letter_queue=dlq, parking_lot=parking_lot
    )

    template = Template.from_stack(stack)
    statements = role_statements(template, properties(template, redriver.function))
    assert {"kms:Decrypt", "kms:GenerateDataKey"} == key_actions(statements, LOT_KEY_ARN)


# --- an own state table ----------------------------------------------------------------------------


def test_an_own_state_table_is_used_and_none_is_created(built: Built) -> None:
    tables = built.template.find_resources("AWS::DynamoDB::Table")

    assert built.redriver.state_table is built.table
    assert set(tables) == {logical_id(built.table)}
    assert built.function["Environment"]["Variables"]["DYNAMODB_TABLE_NAME"] == {
        "Ref": logical_id(built.table)
    }


def test_the_function_and_the_consumer_use_the_own_table(built: Built) -> None:
    table_arn = {"Fn::GetAtt": [logical_id(built.table), "Arn"]}

    function_actions = key_actions(built.statements(built.redriver.function), table_arn)
    consumer_actions = key_actions(built.statements(built.consumer), table_arn)

    assert {"dynamodb:GetItem", "dynamodb:BatchWriteItem"} <= function_actions
    assert consumer_actions == {"dynamodb:UpdateItem"}


def _table(stack: cdk.Stack, shape: str) -> dynamodb.ITable:
    string, number = dynamodb.AttributeType.STRING, dynamodb.AttributeType.NUMBER
    if shape == "v2":
        return dynamodb.TableV2(
            stack,
            "Table",
            partition_key=dynamodb.Attribute(name="pk", type=string),
            time_to_live_attribute="expires_at",
        )
    if shape == "v2 without ttl":
        return dynamodb.TableV2(stack, "Table", partition_key=dynamodb.Attribute(name="pk", type=string))
    key = {
        "other key": dynamodb.Attribute(name="id", type=string),
        "number key": dynamodb.Attribute(name="pk", type=number),
    }.get(shape, dynamodb.Attribute(name="pk", type=string))
    return dynamodb.Table(
        stack,
        "Table",
        partition_key=key,
        sort_key=dynamodb.Attribute(name="sk", type=string) if shape == "sort key" else None,
        time_to_live_attribute={"no ttl": None, "other ttl": "ttl"}.get(shape, "expires_at"),
    )


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("other key", r"state_table must have the partition key 'pk' of type string .* has id \(HASH, S\)"),
        ("number key", r"state_table must have the partition key 'pk' .* has pk \(HASH, N\)"),
        ("sort key", r"state_table must have the partition key 'pk' of type string and no sort key"),
        ("no ttl", "state_table must have time to live enabled on 'expires_at'"),
        ("other ttl", "state_table must have time to live enabled on 'expires_at'"),
        ("v2 without ttl", "state_table must have time to live enabled on 'expires_at'"),
    ],
)
def test_a_state_table_the_redriver_cannot_use_fails_at_synth_naming_it(shape: str, message: str) -> None:
    stack, source, dlq = _queues()

    redriver = SqsRedriver(
        stack, "Redriver", source_queue=source, dead_letter_queue=dlq, state_table=_table(stack, shape)
    )

    [finding] = wiring_findings(redriver)
    assert re.search(message, finding)


@pytest.mark.parametrize("shape", ["v2", "imported"])
def test_a_table_v2_or_an_imported_table_is_accepted(shape: str) -> None:
    stack, source, dlq = _queues()
    table = (
        dynamodb.Table.from_table_name(stack, "Table", "redriver-state")
        if shape == "imported"
        else _table(stack, shape)
    )

    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq, state_table=table)

    assert redriver.state_table is table
    assert Template.from_stack(stack).find_resources("AWS::DynamoDB::Table") == {}


def test_an_imported_table_with_a_customer_key_gets_its_key_granted() -> None:
    stack, source, dlq = _queues()
    key_arn = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/5234abcd-12ab-34cd-56ef-1234567890ab"
    table = dynamodb.Table.from_table_attributes(
        stack,
        "Table",
        table_name="redriver-state",
        encryption_key=kms.Key.from_key_arn(stack, "Key", key_arn),
    )

    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq, state_table=table)

    template = Template.from_stack(stack)
    statements = role_statements(template, properties(template, redriver.function))
    assert {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"} <= key_actions(statements, key_arn)


def _queues() -> tuple[cdk.Stack, sqs.Queue, sqs.Queue]:
    stack = cdk.Stack(cdk.App(), "Tables", env=cdk.Environment(account=ACCOUNT, region=REGION))
    return (stack, *queue_pair(stack))


def _source(stack: cdk.Stack, dlq: sqs.IQueue) -> sqs.Queue:
    return sqs.Queue(stack, "Source", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3))


# --- function props ---------------------------------------------------------------------------------


def test_function_props_put_the_function_in_the_vpc_and_its_role_may_attach_it(built: Built) -> None:
    eni = [
        s
        for s in built.statements(built.redriver.function)
        if "ec2:CreateNetworkInterface" in as_list(s["Action"])
    ]

    assert built.function["VpcConfig"]["SubnetIds"] == [
        "subnet-0123456789abcdef0",
        "subnet-0123456789abcdef1",
    ]
    assert len(built.function["VpcConfig"]["SecurityGroupIds"]) == 1
    assert eni == [{"Action": list(VPC_ACCESS_ACTIONS), "Effect": "Allow", "Resource": "*"}]


def test_function_props_add_environment_and_layers_to_the_constructs(built: Built) -> None:
    environment = built.function["Environment"]["Variables"]
    layers = built.function["Layers"]

    assert environment["POWERTOOLS_LOG_LEVEL"] == "DEBUG"
    assert environment["POWERTOOLS_SERVICE_NAME"].startswith("dlq-redriver:")  # the construct's own stay
    assert len(layers) == 2 and "/aws/service/powertools/" in str(layers[0])
    assert layers[1] == EXTENSION_LAYER
    assert built.function["Description"] == "Re-drives the payments DLQ"


def test_function_props_log_group_replaces_the_constructs(built: Built) -> None:
    created = [c for c in built.redriver.node.find_all() if isinstance(c, logs.LogGroup)]

    assert built.function["LoggingConfig"]["LogGroup"] == {"Ref": logical_id(built.log_group)}
    assert created == [built.redriver.audit_log]  # the construct makes none for the function


def test_function_props_keep_the_constructs_limits(built: Built) -> None:
    assert (
        built.function["Timeout"],
        built.function["MemorySize"],
        built.function["ReservedConcurrentExecutions"],
    ) == (
        120,
        512,
        17,
    )
    assert built.function["TracingConfig"] == {"Mode": "Active"}


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"timeout": cdk.Duration.minutes(5)},
            r"function_props.timeout is set by the construct: .*redriver_timeout_seconds",
        ),
        ({"memory_size": 1024}, r"function_props.memory_size is set by the construct: .*redriver_memory_mb"),
        (
            {"reserved_concurrent_executions": 5},
            "function_props.reserved_concurrent_executions is set by the construct",
        ),
        (
            {"architecture": lambda_.Architecture.X86_64},
            "function_props.architecture is set by the construct",
        ),
        ({"tracing": lambda_.Tracing.DISABLED}, "function_props.tracing is set by the construct"),
        ({"retry_attempts": 2}, "function_props.retry_attempts is set by the construct"),
        ({"log_retention": logs.RetentionDays.ONE_DAY}, r"function_props.log_retention .*pass log_group"),
        (
            {"environment": {"MAX_REDRIVE_COUNT": "9", "EXTRA": "1"}},
            r"function_props.environment must not set the re-driver's own variables \['MAX_REDRIVE_COUNT'\]",
        ),
    ],
)
def test_function_props_the_construct_owns_fail_at_synth_naming_the_prop(
    props: dict[str, Any], message: str
) -> None:
    stack, source, dlq = _queues()

    with pytest.raises(SettingsError, match=message):
        SqsRedriver(
            stack,
            "Redriver",
            source_queue=source,
            dead_letter_queue=dlq,
            function_props=lambda_.FunctionOptions(**props),
        )


def test_function_props_role_is_refused_pointing_to_add_to_role_policy() -> None:
    stack, source, dlq = _queues()
    role = cdk.aws_iam.Role(stack, "Role", assumed_by=cdk.aws_iam.ServicePrincipal("lambda.amazonaws.com"))

    with pytest.raises(
        SettingsError, match=r"function_props.role is set by the construct: .*add_to_role_policy"
    ):
        SqsRedriver(
            stack,
            "Redriver",
            source_queue=source,
            dead_letter_queue=dlq,
            function_props=lambda_.FunctionOptions(role=role),
        )


# --- secure defaults -----------------------------------------------------------------------------


def test_cdk_nag_packs_find_nothing_unacknowledged_with_own_resources(built: Built) -> None:
    assert_nag_clean(built.report)
