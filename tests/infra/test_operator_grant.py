"""grant_operator: exactly what the operator's tool calls, on this re-driver's resources only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from app import STACK_NAME, build_app
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.cdk.stack import RedriverStack
from tests.support.templates import (
    OPERATOR_AUDIT_ACTIONS,
    OPERATOR_QUEUE_ACTIONS,
    OPERATOR_TABLE_ACTIONS,
    arn_of,
    as_list,
    key_uses,
    logical_id,
)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cdk.App]:
    """The default app (cdk-nag on), with an operator role granted on the default stack."""
    app = build_app(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    stack = app.node.find_child(STACK_NAME)
    assert isinstance(stack, RedriverStack)
    operator = iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal())
    stack.redriver.grant_operator(operator)
    yield app


@pytest.fixture(scope="module")
def stack(app: cdk.App) -> RedriverStack:
    found = app.node.find_child(STACK_NAME)
    assert isinstance(found, RedriverStack)
    return found


def statements_of(template: Template, role_id: str) -> list[dict[str, Any]]:
    """Every statement of every policy attached to the role, sorted for comparison."""
    found = [
        {**statement, "Action": sorted(as_list(statement["Action"]))}
        for policy in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"].get("Roles", [])
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    return sorted(found, key=lambda statement: json.dumps(statement, sort_keys=True))


def expected(stack: RedriverStack, *, archive: bool = True) -> list[dict[str, Any]]:
    redriver = stack.redriver
    statements = [
        {
            "Action": OPERATOR_QUEUE_ACTIONS,
            "Effect": "Allow",
            "Resource": [arn_of(redriver.dead_letter_queue), arn_of(redriver.parking_lot)],
        },
        {
            "Action": ["sqs:GetQueueAttributes", "sqs:SendMessage"],
            "Effect": "Allow",
            "Resource": arn_of(stack.source_queue),
        },
        {"Action": OPERATOR_TABLE_ACTIONS, "Effect": "Allow", "Resource": arn_of(redriver.state_table)},
        # the keys of an identity's message records (a function's dead letter on any trip)
        {
            "Action": ["dynamodb:Query"],
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", [arn_of(redriver.state_table), "/index/identity"]]},
        },
        {"Action": ["cloudformation:DescribeStacks"], "Effect": "Allow", "Resource": {"Ref": "AWS::StackId"}},
        {"Action": ["cloudwatch:GetMetricStatistics"], "Effect": "Allow", "Resource": "*"},
        {"Action": OPERATOR_AUDIT_ACTIONS, "Effect": "Allow", "Resource": arn_of(redriver.audit_log)},
    ]
    if archive:
        assert redriver.archive is not None
        bucket = arn_of(redriver.archive)
        edited = {"Fn::Join": ["", [bucket, "/edited/*"]]}
        statements += [
            {
                "Action": ["s3:GetObject"],
                "Effect": "Allow",
                "Resource": [edited, {"Fn::Join": ["", [bucket, "/parked/*"]]}],  # as CDK sorts them
            },
            # the original of an edited message, archived before the edit is sent
            {"Action": ["s3:PutObject"], "Effect": "Allow", "Resource": edited},
            {
                "Action": ["s3:ListBucket"],
                "Condition": {"StringLike": {"s3:prefix": ["parked/*", "edited/*"]}},
                "Effect": "Allow",
                "Resource": bucket,
            },
        ]
    return sorted(statements, key=lambda statement: json.dumps(statement, sort_keys=True))


def test_the_operator_gets_exactly_the_tools_statements_and_nothing_else(stack: RedriverStack) -> None:
    template = Template.from_stack(stack)
    role_id = [name for name in template.find_resources("AWS::IAM::Role") if name.startswith("Operator")][0]

    granted = statements_of(template, role_id)

    assert granted == expected(stack)
    actions = {action for statement in granted for action in statement["Action"]}
    assert not {"dynamodb:Scan", "sqs:*"} & actions
    # Query on the identity index alone (keys only), never on the table
    [query] = [statement for statement in granted if "dynamodb:Query" in statement["Action"]]
    assert query["Action"] == ["dynamodb:Query"]
    assert query["Resource"] == {"Fn::Join": ["", [arn_of(stack.redriver.state_table), "/index/identity"]]}
    assert not [action for action in actions if action.startswith("lambda:") or action.endswith("*")]
    assert "ManagedPolicyArns" not in template.to_json()["Resources"][role_id]["Properties"]


def test_cdk_nag_finds_nothing_unacknowledged_with_an_operator(app: cdk.App, stack: RedriverStack) -> None:
    # app.synth() raises ValidationFailed on any unacknowledged finding
    assembly = app.synth()
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())

    for plugin in report["pluginReports"]:
        assert plugin["conclusion"] == "success" and plugin["violations"] == []
    acknowledged = {
        suppressed["ruleName"]
        for plugin in report["pluginReports"]
        for suppressed in plugin["suppressedViolations"]
        if "OperatorPolicy" in json.dumps(suppressed)
    }
    assert stack.redriver.archive is not None
    assert acknowledged == {  # the three wildcards, acknowledged on the operator's policy only
        "AwsSolutions-IAM5[Resource::*]",
        f"AwsSolutions-IAM5[Resource::<{logical_id(stack.redriver.archive)}.Arn>/parked/*]",
        f"AwsSolutions-IAM5[Resource::<{logical_id(stack.redriver.archive)}.Arn>/edited/*]",
    }


def minimal_redriver(stack: cdk.Stack | None = None, **props: Any) -> tuple[cdk.Stack, SqsRedriver]:
    stack = stack or cdk.Stack(cdk.App(), "Operated")
    dlq = sqs.Queue(stack, "Dlq", retention_period=cdk.Duration.days(14), **props)
    source = sqs.Queue(
        stack, "Orders", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3), **props
    )
    return stack, SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq, archive=False)


def test_without_an_archive_the_operator_gets_no_s3_access() -> None:
    stack, redriver = minimal_redriver()
    user = iam.User(stack, "Operator")

    redriver.grant_operator(user)

    [policy] = [
        p
        for p in Template.from_stack(stack).find_resources("AWS::IAM::Policy").values()
        if p["Properties"].get("Users") == [{"Ref": logical_id(user)}]
    ]
    actions = {a for s in policy["Properties"]["PolicyDocument"]["Statement"] for a in as_list(s["Action"])}
    assert not [action for action in actions if action.startswith("s3:")]
    assert "cloudwatch:GetMetricStatistics" in actions


def test_kms_encrypted_queues_give_the_operator_decrypt_and_generate_data_key_on_their_key() -> None:
    stack = cdk.Stack(cdk.App(), "Encrypted")
    key = kms.Key(stack, "Key")
    _, redriver = minimal_redriver(stack, encryption=sqs.QueueEncryption.KMS, encryption_master_key=key)
    group = iam.Group(stack, "Operators")

    redriver.grant_operator(group)

    [policy] = [
        p
        for p in Template.from_stack(stack).find_resources("AWS::IAM::Policy").values()
        if p["Properties"].get("Groups") == [{"Ref": logical_id(group)}]
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    # Through SQS to receive and send; the DLQ's key also encrypts the table the construct made
    # (no archive here): the operator uses it there, through DynamoDB only.
    assert key_uses(statements, arn_of(key)) == {
        "sqs": {"kms:Decrypt", "kms:GenerateDataKey"},
        "dynamodb": {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"},
    }


def test_a_principal_that_cannot_hold_a_policy_fails_at_synth() -> None:
    _, redriver = minimal_redriver()

    with pytest.raises(SettingsError, match="grant_operator: principal must be an IAM role, user or group"):
        redriver.grant_operator(iam.ServicePrincipal("ec2.amazonaws.com"))
