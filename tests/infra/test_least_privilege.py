"""Every statement of the synthesized policies of the re-drive function, a kit consumer and an
operator: actions, resources and conditions, in the default stack and in a stack whose DLQ has a
customer-managed key and two sources."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from constructs import Construct

from app import STACK_NAME, build_app
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.stack import RedriverStack
from sqs_redriver.cdk.storage import secure_queue
from tests.support.stacks import (
    assert_nag_clean,
    dead_letter_queue,
    nag_clean_consumer,
    nag_report,
    source_queue,
)
from tests.support.templates import (
    OPERATOR_AUDIT_ACTIONS,
    OPERATOR_QUEUE_ACTIONS,
    OPERATOR_TABLE_ACTIONS,
    arn_of,
    as_list,
    logical_id,
    via,
)

Statement = dict[str, Any]
CONSUMER_ATTRIBUTES = [
    "expires_at",
    "failed_at",
    "failure",
    "fingerprints",
    "ok",
    "pk",
    "terminal",
    "transient",
]
DLQ_CONSUME = [
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ReceiveMessage",
]
QUEUE_SEND = ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"]
TABLE_KEY = ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"]
SQS_KEY = ["kms:Decrypt", "kms:GenerateDataKey"]  # receive, send


@dataclass(frozen=True)
class Deployment:
    """One stack's re-driver, a consumer granted by grant_consumer, an operator role granted."""

    stack: cdk.Stack
    redriver: SqsRedriver
    consumer: lambda_.Function
    operator: iam.Role
    key: kms.Key | None = None


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Deployment], dict[str, Any]]]:
    """The default app (cdk-nag on) with an operator granted, plus a keyed stack; synthesized once."""
    app = build_app(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    default = app.node.find_child(STACK_NAME)
    assert isinstance(default, RedriverStack)
    operator = iam.Role(default, "Operator", assumed_by=iam.AccountRootPrincipal())
    default.redriver.grant_operator(operator)
    deployments = {"default": Deployment(default, default.redriver, default.consumer, operator)}

    keyed = cdk.Stack(app, "Keyed")
    key = kms.Key(keyed, "DlqKey", enable_key_rotation=True)
    dlq = dead_letter_queue(keyed, key)
    other = secure_queue(
        keyed, "Source2", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
    )
    redriver = SqsRedriver(
        keyed,
        "Redriver",
        source_queue=source_queue(keyed, dlq),
        other_source_queues=[other],
        dead_letter_queue=dlq,
    )
    function = nag_clean_consumer(keyed)
    redriver.grant_consumer(function)
    operator = iam.Role(keyed, "Operator", assumed_by=iam.AccountRootPrincipal())
    redriver.grant_operator(operator)
    deployments["keyed"] = Deployment(keyed, redriver, function, operator, key)
    yield deployments, nag_report(app)


@pytest.fixture(scope="module", params=["default", "keyed"])
def deployment(request: pytest.FixtureRequest, app: tuple[dict[str, Deployment], Any]) -> Deployment:
    return app[0][request.param]


# --- reading the template ----------------------------------------------------------------------


def statements_of(deployment: Deployment, role: iam.IRole) -> list[Statement]:
    """Every statement of the policies attached to ``role``, each action and resource list sorted."""
    template = Template.from_stack(deployment.stack)
    role_ref = {"Ref": logical_id(role)}  # type: ignore[arg-type]
    return sorted(
        (
            normalized(statement)
            for policy in template.find_resources("AWS::IAM::Policy").values()
            if role_ref in policy["Properties"].get("Roles", [])
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ),
        key=_order,
    )


def normalized(statement: Statement) -> Statement:
    listed = {name: sorted(as_list(statement[name]), key=_order) for name in ("Action", "Resource")}
    return {**statement, **listed}


def expected(*statements: Statement) -> list[Statement]:
    return sorted((normalized({"Effect": "Allow", **s}) for s in statements), key=_order)


def _order(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def key_grants(deployment: Deployment, **uses: list[str]) -> list[Statement]:
    """The statements on the deployment's key, if it has one: ``actions`` through each service."""
    if deployment.key is None:
        return []
    return [
        {"Action": actions, "Resource": arn_of(deployment.key), "Condition": via(service)}
        for service, actions in uses.items()
    ]


def keyed_on(prefix: str, queue: sqs.IQueue) -> dict[str, Any]:
    """A state table key made of ``prefix`` and ``queue``'s URL, as the template spells it."""
    return {"Fn::Join": ["", [prefix, {"Ref": logical_id(queue)}]]}  # type: ignore[arg-type]


def kit_records(prefix: str, dlq: sqs.IQueue) -> dict[str, Any]:
    """The keys of the consumer kit's records of one kind for the re-driver of ``dlq``."""
    return {"Fn::Join": ["", [prefix, {"Ref": logical_id(dlq)}, "#*"]]}  # type: ignore[arg-type]


def leading_keys(*keys: Any) -> dict[str, Any]:
    return {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(keys)}}


def table(deployment: Deployment, action: str, *keys: Any) -> Statement:
    """One table operation on the records whose keys match ``keys``."""
    return {
        "Action": action,
        "Resource": arn_of(deployment.redriver.state_table),
        "Condition": leading_keys(*keys),
    }


def archive_objects(redriver: SqsRedriver) -> dict[str, Any]:
    assert redriver.archive is not None
    return {"Fn::Join": ["", [arn_of(redriver.archive), "/parked/*"]]}


def edited_objects(redriver: SqsRedriver) -> dict[str, Any]:
    assert redriver.archive is not None
    return {"Fn::Join": ["", [arn_of(redriver.archive), "/edited/*"]]}


def identity_index(redriver: SqsRedriver) -> dict[str, Any]:
    return {"Fn::Join": ["", [arn_of(redriver.state_table), "/index/identity"]]}


def role_of(function: lambda_.Function) -> iam.IRole:
    assert function.role is not None
    return function.role


# --- the re-drive function ------------------------------------------------------------------------


def test_the_redrive_function_has_exactly_these_statements(deployment: Deployment) -> None:
    redriver = deployment.redriver
    dlq, sources = redriver.dead_letter_queue, redriver.source_queues
    breakers = [keyed_on("BREAKER#", source) for source in sources]
    own = [*breakers, keyed_on("SWEEP#", dlq), keyed_on("RUNS#", dlq), keyed_on("HELD#", dlq)]
    continuation = keyed_on("CONTINUATION#", dlq)
    pause, drain = keyed_on("PAUSE#", dlq), keyed_on("DRAIN#", dlq)
    # the growth baseline of a re-driver of one source (a chain over a large backlog without the kit)
    baselines = [keyed_on("BACKLOG#", source) for source in sources] if len(sources) == 1 else []
    # a large drain's worker leases: WORKER#<DLQ URL>#<slot>
    workers = {"Fn::Join": ["", ["WORKER#", {"Ref": logical_id(dlq)}, "#*"]]}
    # Powertools' idempotency records of its invocations: IDEMPOTENCY#<DLQ URL>#<hash of the event id>
    idempotency = {"Fn::Join": ["", ["IDEMPOTENCY#", {"Ref": logical_id(dlq)}, "#*"]]}
    # the kit's records of this re-driver alone: VERDICTS#<DLQ URL>#..., FAILURE#<DLQ URL>#...
    verdicts, failures = kit_records("VERDICTS#", dlq), kit_records("FAILURE#", dlq)
    # the DLQ's key, which encrypts what the construct made: each use through its service only
    key = key_grants(deployment, sqs=SQS_KEY, dynamodb=TABLE_KEY, s3=["kms:GenerateDataKey"])

    assert statements_of(deployment, role_of(redriver.function)) == expected(
        {
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": log_group_arn(redriver.function),
        },
        {"Action": ["xray:PutTelemetryRecords", "xray:PutTraceSegments"], "Resource": "*"},
        {"Action": DLQ_CONSUME, "Resource": arn_of(dlq)},
        {"Action": QUEUE_SEND, "Resource": [arn_of(queue) for queue in (*sources, redriver.parking_lot)]},
        # its own records by key, its kit's by prefix; message and group records by kind; no
        # operator record written
        table(deployment, "dynamodb:GetItem", *own, pause, drain, *baselines, verdicts, idempotency),
        table(deployment, "dynamodb:PutItem", *own, continuation, drain, *baselines, workers, idempotency),
        table(deployment, "dynamodb:UpdateItem", idempotency),
        table(deployment, "dynamodb:DeleteItem", continuation, workers, idempotency),
        table(
            deployment,
            "dynamodb:BatchGetItem",
            "MSG#*",
            failures,
            "RETRY#*",
            "PARK#*",
            keyed_on("HELD#", dlq),
            # what a large drain's worker checks before each batch, its verdicts included
            *breakers,
            pause,
            drain,
            verdicts,
        ),
        table(deployment, "dynamodb:BatchWriteItem", "MSG#*"),
        {"Action": "s3:PutObject", "Resource": archive_objects(redriver)},
        {"Action": "lambda:InvokeFunction", "Resource": arn_of(redriver.function)},
        # its consumers' metrics (queue_metrics): GetMetricData has no resource-level permissions
        {"Action": "cloudwatch:GetMetricData", "Resource": "*"},
        *key,
    )


def log_group_arn(function: lambda_.Function) -> dict[str, Any]:
    logs = function.node.scope.node.find_child("Logs")  # type: ignore[union-attr]
    assert isinstance(logs, Construct)
    return arn_of(logs)


# --- a consumer granted by grant_consumer ----------------------------------------------------------


def consumer_grant(deployment: Deployment) -> list[Statement]:
    """What grant_consumer gives: send to the DLQ, update the kit's records, the DLQ key if any."""
    redriver = deployment.redriver
    return [
        {"Action": "sqs:SendMessage", "Resource": arn_of(redriver.dead_letter_queue)},
        {
            "Action": "dynamodb:UpdateItem",
            "Resource": arn_of(redriver.state_table),
            "Condition": {
                # its re-driver's records alone, on a table other re-drivers may share
                **leading_keys(
                    kit_records("VERDICTS#", redriver.dead_letter_queue),
                    kit_records("FAILURE#", redriver.dead_letter_queue),
                ),
                "ForAllValues:StringEquals": {"dynamodb:Attributes": CONSUMER_ATTRIBUTES},
                "StringEqualsIfExists": {"dynamodb:ReturnValues": ["NONE"]},
            },
        },
        # the DLQ's key: to send to the DLQ, and to update records of the table it encrypts
        *key_grants(deployment, sqs=SQS_KEY, dynamodb=TABLE_KEY),
    ]


def test_a_granted_consumer_has_exactly_the_grant_and_its_own_statements(deployment: Deployment) -> None:
    function = deployment.consumer
    own: list[Statement] = [
        {"Action": ["logs:CreateLogStream", "logs:PutLogEvents"], "Resource": log_group_arn(function)},
        {"Action": ["xray:PutTelemetryRecords", "xray:PutTraceSegments"], "Resource": "*"},
    ]
    if isinstance(deployment.stack, RedriverStack):  # the example consumer's idempotency and queue
        stack = deployment.stack
        own += [
            {
                "Action": [
                    "dynamodb:DeleteItem",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                ],
                "Resource": arn_of(stack.idempotency_table),
            },
            {"Action": DLQ_CONSUME, "Resource": arn_of(stack.source_queue)},
        ]

    assert statements_of(deployment, role_of(function)) == expected(*own, *consumer_grant(deployment))


# --- an operator granted by grant_operator ---------------------------------------------------------


def test_an_operator_has_exactly_these_statements(deployment: Deployment) -> None:
    redriver = deployment.redriver
    # receive and send; the table's records; read archived messages, archive an edit's original
    key = key_grants(deployment, sqs=SQS_KEY, dynamodb=TABLE_KEY, s3=SQS_KEY)

    assert statements_of(deployment, deployment.operator) == expected(
        {
            "Action": OPERATOR_QUEUE_ACTIONS,
            "Resource": [arn_of(redriver.dead_letter_queue), arn_of(redriver.parking_lot)],
        },
        {
            "Action": ["sqs:GetQueueAttributes", "sqs:SendMessage"],
            "Resource": [arn_of(q) for q in redriver.source_queues],
        },
        # the operator is the table's trusted writer: any record (status reads a large drain's
        # DRAIN#<DLQ URL>), item by item, no Scan, no Query of the table
        {"Action": OPERATOR_TABLE_ACTIONS, "Resource": arn_of(redriver.state_table)},
        # the keys of an identity's message records, each trip of a function's dead letter
        {"Action": "dynamodb:Query", "Resource": identity_index(redriver)},
        {"Action": "cloudformation:DescribeStacks", "Resource": {"Ref": "AWS::StackId"}},
        {"Action": "cloudwatch:GetMetricStatistics", "Resource": "*"},
        # the audit trail: append and read, never delete
        {"Action": OPERATOR_AUDIT_ACTIONS, "Resource": arn_of(redriver.audit_log)},
        {"Action": "s3:GetObject", "Resource": [archive_objects(redriver), edited_objects(redriver)]},
        # the original of a message the operator edits, archived before the edit is sent
        {"Action": "s3:PutObject", "Resource": edited_objects(redriver)},
        {
            "Action": "s3:ListBucket",
            "Resource": arn_of(redriver.archive),
            "Condition": {"StringLike": {"s3:prefix": ["parked/*", "edited/*"]}},
        },
        *key,
    )


# --- the whole app ---------------------------------------------------------------------------------


def test_no_policy_grants_a_wildcard_action_or_kms_reencrypt(deployment: Deployment) -> None:
    template = Template.from_stack(deployment.stack)
    actions = {
        action
        for policy in template.find_resources("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        for action in as_list(statement["Action"])
    }

    assert [action for action in actions if "*" in action or action.startswith("kms:ReEncrypt")] == []


def test_cdk_nag_finds_nothing_unacknowledged_and_every_acknowledgment_has_a_reason(
    app: tuple[dict[str, Deployment], dict[str, Any]],
) -> None:
    assert_nag_clean(app[1])
