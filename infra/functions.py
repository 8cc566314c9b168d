"""One factory for the project's Lambda functions, so every function gets the same defaults."""

from __future__ import annotations

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
) -> lambda_.Function:
    """A Python function with its own role, log group (retention), JSON logs, X-Ray, arm64."""
    container = Construct(scope, construct_id)
    log_group = logs.LogGroup(
        container, "Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
    )
    role = iam.Role(
        container,
        "Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"Execution role of {construct_id}",
    )
    log_group.grant_write(role)
    acknowledge(
        role,
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        "X-Ray tracing (Tracing.ACTIVE) needs xray:PutTraceSegments and PutTelemetryRecords, "
        "which support no resource-level permissions; every other statement names its resource.",
    )
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
        layers=[layer],
        reserved_concurrent_executions=reserved_concurrency,
    )


def grant_item_access(function: lambda_.Function, table: dynamodb.ITable, *, batch: bool = False) -> None:
    """Item reads and writes on one table, nothing more.

    Explicit actions: Table.grant_read_write_data would also allow Scan, Query and stream reads.
    """
    actions = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
    if batch:
        actions += ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"]
    function.add_to_role_policy(iam.PolicyStatement(actions=actions, resources=[table.table_arn]))
