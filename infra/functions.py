"""One factory for the project's Lambda functions, so every function gets the same defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Acknowledgment, Aws, Duration, RemovalPolicy, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from . import LAMBDAS_DIR

RUNTIME = lambda_.Runtime.PYTHON_3_14
# The public Powertools layer (account 017000801446) for RUNTIME on arm64. Its version number
# must ship the Powertools release pinned in requirements-dev.txt; override per construct.
POWERTOOLS_LAYER_VERSION = 42
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# What a function in a VPC needs to attach itself (AWSLambdaVPCAccessExecutionRole, without its logs
# actions); Lambda adds it only to a role it creates, and every function here has its own role.
VPC_ACCESS_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)


def acknowledge(scope: Construct, rule_id: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on ``scope`` (and its children), with the reason."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def powertools_layer(scope: Construct, version: int = POWERTOOLS_LAYER_VERSION) -> lambda_.ILayerVersion:
    runtime_tag = RUNTIME.name.replace(".", "")
    return lambda_.LayerVersion.from_layer_version_arn(
        scope,
        "PowertoolsLayer",
        f"arn:aws:lambda:{Aws.REGION}:017000801446:layer:"
        f"AWSLambdaPowertoolsPythonV3-{runtime_tag}-arm64:{version}",
    )


def python_function(
    scope: Construct,
    construct_id: str,
    *,
    handler: str,
    environment: dict[str, str],
    timeout: Duration,
    memory_size: int,
    layer: lambda_.ILayerVersion,
    reserved_concurrency: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> lambda_.Function:
    """A Python function with its own role, log group (retention), JSON logs, X-Ray, arm64.

    ``options``: further ``lambda_.Function`` props, already checked not to touch what this factory
    sets; ``environment`` and ``layers`` are added to the factory's, ``log_group`` replaces its own,
    and ``vpc`` gets the role the network interface actions Lambda needs to attach the function.
    """
    container = Construct(scope, construct_id)
    extra = dict(options or {})
    environment = {**environment, **extra.pop("environment", {})}
    layers = [layer, *extra.pop("layers", ())]
    log_group = extra.pop("log_group", None) or logs.LogGroup(
        container, "Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
    )
    in_vpc = extra.get("vpc") is not None
    role = iam.Role(
        container,
        "Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"Execution role of {construct_id}",
    )
    log_group.grant_write(role)
    if in_vpc:
        role.add_to_policy(iam.PolicyStatement(actions=list(VPC_ACCESS_ACTIONS), resources=["*"]))
    reason = (
        "X-Ray tracing (Tracing.ACTIVE) needs xray:PutTraceSegments and PutTelemetryRecords, "
        "which support no resource-level permissions; every other statement names its resource."
    )
    if in_vpc:
        reason += (
            " In a VPC, the network interface actions of AWSLambdaVPCAccessExecutionRole too: Lambda "
            "creates and deletes the interfaces under ids unknown at synth, and Describe* take no resource."
        )
    acknowledge(role, "AwsSolutions::AwsSolutions-IAM5[Resource::*]", reason)
    return lambda_.Function(
        container,
        "Function",
        runtime=RUNTIME,
        architecture=lambda_.Architecture.ARM_64,
        handler=handler,
        code=lambda_.Code.from_asset(str(LAMBDAS_DIR), exclude=["**/__pycache__", "**/*.pyc"]),
        environment=environment,
        timeout=timeout,
        memory_size=memory_size,
        role=role,
        log_group=log_group,
        logging_format=lambda_.LoggingFormat.JSON,
        tracing=lambda_.Tracing.ACTIVE,
        layers=layers,
        reserved_concurrent_executions=reserved_concurrency,
        **extra,
    )


def grant_item_access(function: lambda_.Function, table: dynamodb.ITable, *, batch: bool = False) -> None:
    """Item reads and writes on one table, nothing more.

    Explicit actions: Table.grant_read_write_data would also allow Scan, Query and stream reads.
    """
    actions = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
    if batch:
        actions += ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"]
    function.add_to_role_policy(iam.PolicyStatement(actions=actions, resources=[table.table_arn]))
