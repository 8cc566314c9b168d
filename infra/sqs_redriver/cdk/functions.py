"""The project's Lambda functions: one factory, so every function gets the same defaults; their code,
assets made of Python packages; and the re-drive function (its code, environment and invocation)
with the schedule that runs it.

The re-drive function publishes its run metrics (Powertools EMF) under ``METRICS_NAMESPACE``, with
its ``service_name`` as their one dimension; the dashboard and alarms (monitoring.py) read them there.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import (
    Acknowledgment,
    AssetHashType,
    Aws,
    BundlingOptions,
    Duration,
    Fn,
    ILocalBundling,
    RemovalPolicy,
    Validations,
)
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IConstruct

from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.cdk.validation import function_options
from sqs_redriver.protocol.settings import RESOURCE_ENV, URL_SEPARATOR, redriver_concurrency
from sqs_redriver.protocol.sources import sources_json

if TYPE_CHECKING:
    from sqs_redriver.cdk.redriver import SqsRedriver

RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
# The Powertools release the functions run: the one requirements-dev.txt pins and the tests run
# against (a test checks the installed package's version). The layer follows it.
POWERTOOLS_RELEASE = "3.37.0"
# The account that publishes the public Powertools layers (commercial partition).
POWERTOOLS_LAYER_ACCOUNT = "017000801446"
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


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on ``scope`` (and its children), with the reason."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def powertools_layer_parameter(
    release: str = POWERTOOLS_RELEASE,
    *,
    runtime: lambda_.Runtime = RUNTIME,
    architecture: lambda_.Architecture = ARCHITECTURE,
) -> str:
    """The public SSM parameter whose value is the ARN of ``release``'s layer for ``runtime`` and
    ``architecture`` (by default the functions' own), in the partition and region it is read in."""
    return f"/aws/service/powertools/python/{architecture.name}/{runtime.name}/{release}"


def powertools_layer(
    scope: Construct, *, version: int | None = None, arn: str | None = None
) -> lambda_.ILayerVersion:
    """The public Powertools layer for RUNTIME and ARCHITECTURE.

    By default the layer of POWERTOOLS_RELEASE, read from its public SSM parameter by a dynamic
    reference that CloudFormation resolves at deploy time in the stack's partition and region.
    Overrides: ``version``, the public layer's version number (in the commercial account that
    publishes it, in the stack's partition and region), or ``arn``, any layer's ARN.
    Raises SettingsError naming the props (``powertools_layer_version``, ``powertools_layer_arn``)
    when both are given or the version is not a positive integer.
    """
    if version is not None and arn is not None:
        raise SettingsError(
            "powertools_layer_version and powertools_layer_arn both given: pass one of them, or "
            f"neither for the layer of Powertools {POWERTOOLS_RELEASE} from its public SSM parameter"
        )
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise SettingsError(
                f"powertools_layer_version must be a positive integer (a layer version), got {version!r}"
            )
        runtime_tag = RUNTIME.name.replace(".", "")
        arn = (
            f"arn:{Aws.PARTITION}:lambda:{Aws.REGION}:{POWERTOOLS_LAYER_ACCOUNT}:layer:"
            f"AWSLambdaPowertoolsPythonV3-{runtime_tag}-{ARCHITECTURE.name}:{version}"
        )
    elif arn is None:
        # force_dynamic_reference: {{resolve:ssm:...}} in the property itself. Without it CDK adds a
        # template Parameter of type AWS::SSM::Parameter::Value<String> (and value_for_string_parameter
        # does the same): one more input for every deployment of the template to carry.
        arn = ssm.StringParameter.from_string_parameter_attributes(
            scope,
            "PowertoolsLayerParameter",
            parameter_name=powertools_layer_parameter(),
            force_dynamic_reference=True,
        ).string_value
    return lambda_.LayerVersion.from_layer_version_arn(scope, "PowertoolsLayer", arn)


def python_function(
    scope: Construct,
    construct_id: str,
    *,
    handler: str,
    packages: Sequence[str] | None = None,
    environment: dict[str, str],
    timeout: Duration,
    memory_size: int,
    layer: lambda_.ILayerVersion,
    reserved_concurrency: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> lambda_.Function:
    """A Python function with its own role, log group (retention), JSON logs, X-Ray, arm64; its code
    is ``packages`` (see ``package_code``; by default the handler's own package), what its layers
    provide left out.

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
    role = _execution_role(container, construct_id, log_group, in_vpc=extra.get("vpc") is not None)
    return lambda_.Function(
        container,
        "Function",
        runtime=RUNTIME,
        architecture=ARCHITECTURE,
        handler=handler,
        code=package_code(packages or (handler.rsplit(".", 2)[0],)),
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


def _execution_role(
    scope: Construct, construct_id: str, log_group: logs.ILogGroup, *, in_vpc: bool
) -> iam.Role:
    """The function's own role (``Role``): it writes to its log group and, in a VPC, attaches
    the function's network interfaces."""
    role = iam.Role(
        scope,
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
    return role


def grant_item_access(function: lambda_.Function, table: dynamodb.ITable) -> None:
    """Item reads and writes on one table, nothing more.

    Explicit actions: Table.grant_read_write_data would also allow Scan, Query and stream reads.
    """
    actions = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
    function.add_to_role_policy(iam.PolicyStatement(actions=actions, resources=[table.table_arn]))


# --- code assets made of packages -----------------------------------------------------------------

_NOT_PACKAGED = ("__pycache__", "*.pyc")


def package_path(package: str) -> Path:
    """Where ``package`` (dotted) lives below an import root: ``sqs_redriver.runtime`` ->
    ``sqs_redriver/runtime``, the same in lambdas/, in site-packages and in an asset."""
    return Path(*package.split("."))


def package_folder(package: str) -> Path:
    """The folder of ``package`` (dotted), wherever it is imported from (found, not imported):
    lambdas/ in the repository, site-packages when installed from the wheel."""
    spec = importlib.util.find_spec(package)
    origin = Path(spec.origin) if spec is not None and spec.origin else None
    if origin is None or origin.name != "__init__.py":
        raise FileNotFoundError(f"no {package} package on the import path")
    return origin.parent


@jsii.implements(ILocalBundling)
class _CopyPackages:
    """Copies each package's folder to ``<prefix>/<its path>`` of the bundle; bytecode caches stay out."""

    def __init__(self, folders: Mapping[str, Path], prefix: str) -> None:
        self.folders = dict(folders)
        self.prefix = prefix

    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:
        # jsii passes the BundlingOptions positionally; copying needs none of them.
        root = Path(output_dir) / self.prefix
        for package, folder in self.folders.items():
            shutil.copytree(
                folder, root / package_path(package), ignore=shutil.ignore_patterns(*_NOT_PACKAGED)
            )
        return True


def package_code(
    packages: Sequence[str], *, prefix: str = "", source_dir: Path | None = None
) -> lambda_.AssetCode:
    """An asset holding exactly ``packages`` (dotted names), each at ``<prefix>/<its path>``, copied
    from the folder it is imported from (or from ``source_dir/<its path>``) by a local bundler: synth
    needs no Docker.

    Hashed by its output, so the asset changes only when the copied files do.
    """
    if not packages:
        raise ValueError("package_code: name at least one package")
    folders = {
        package: package_folder(package) if source_dir is None else source_dir / package_path(package)
        for package in packages
    }
    for package, folder in folders.items():
        if not (folder / "__init__.py").is_file():
            raise FileNotFoundError(f"no {package} package in {folder.parent}")
    first = packages[0]
    import_root = folders[first].parents[len(package_path(first).parts) - 1]
    paths = " ".join(str(package_path(package)) for package in packages)
    target = f"/asset-output/{prefix}".rstrip("/")
    return lambda_.Code.from_asset(
        # The import root the (first) package is found in: only Docker would read it, the bundler
        # reads each folder.
        str(import_root),
        asset_hash_type=AssetHashType.OUTPUT,
        bundling=BundlingOptions(
            # Never run: the local bundler always succeeds. Docker would only be the fallback. Its
            # command also keeps assets apart: CDK caches a bundle by source path and options, and
            # cannot see into the local bundler.
            image=RUNTIME.bundling_image,
            command=[
                "bash",
                "-c",
                f"mkdir -p {target} && cp -r --parents {paths} {target}/"
                f" && find {target} -name __pycache__ -prune -exec rm -rf {{}} +",
            ],
            local=_CopyPackages(folders, prefix),
        ),
    )


# --- the re-drive function and its schedule -------------------------------------------------------

HANDLER = "sqs_redriver.runtime.handler.lambda_handler"
# The re-drive function's code: the runtime, the core it shares with the operator's tool and the
# protocol (boto3 is the Lambda runtime's, Powertools the layer's).
FUNCTION_PACKAGES = ("sqs_redriver.runtime", "sqs_redriver.core", "sqs_redriver.protocol")
# How long Lambda keeps trying to deliver a tick or a continuation.
MAX_EVENT_AGE = Duration.minutes(10)
# Where the function publishes its run metrics, and the prefix of their one dimension (service_name).
METRICS_NAMESPACE = "DlqRedriver"
SERVICE_PREFIX = "dlq-redriver"


def service_name(redriver_path: str) -> str:
    """The re-driver's POWERTOOLS_SERVICE_NAME: the one dimension of its custom metrics, and the
    ``service`` of its logs. It names the construct, so two re-drivers of one account and region
    keep their metrics (and alarms) apart."""
    return f"{SERVICE_PREFIX}:{redriver_path}"


def redrive_environment(redriver: SqsRedriver) -> dict[str, str]:
    """The function's variables: its resources, its metrics' names and the settings."""
    environment = {
        RESOURCE_ENV["dlq_url"]: redriver.dead_letter_queue.queue_url,
        **_sources_variable(redriver),
        RESOURCE_ENV["parking_lot_url"]: redriver.parking_lot.queue_url,
        RESOURCE_ENV["table_name"]: redriver.state_table.table_name,
        RESOURCE_ENV["archive_bucket"]: redriver.archive.bucket_name if redriver.archive else "",
    }
    if redriver.source_queues:
        environment[RESOURCE_ENV["consumer_function_names"]] = ""  # grant_consumer fills it in
    return {
        **environment,
        "POWERTOOLS_SERVICE_NAME": service_name(redriver.node.path),
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        **redriver.settings.lambda_environment(),
    }


def _sources_variable(redriver: SqsRedriver) -> dict[str, str]:
    """Where the dead letters go back to: the source queues, or the dead-letter sources of another
    kind as JSON, their ARNs resolved at deploy (and then no SOURCE_QUEUE_URL)."""
    if redriver.dead_letter_sources:
        sources = [attached.source for attached in redriver.dead_letter_sources]
        return {RESOURCE_ENV["dead_letter_sources"]: sources_json(sources)}
    queues = redriver.source_queues
    urls = [queue.queue_url for queue in queues]
    return {RESOURCE_ENV["source_queue_url"]: Fn.join(URL_SEPARATOR, urls) if len(urls) > 1 else urls[0]}


def build_redrive_function(
    redriver: SqsRedriver, function_props: lambda_.FunctionOptions | None
) -> lambda_.Function:
    """The function (``RedriveFunction``): a large drain's workers and a tick at a time (one run
    for a re-driver that does not fan out), no retry but the next scheduled run.

    ``function_props``: the user's further props, refused if they touch what the construct sets.
    """
    settings = redriver.settings
    environment = redrive_environment(redriver)
    function = python_function(
        redriver,
        "RedriveFunction",
        handler=HANDLER,
        packages=FUNCTION_PACKAGES,
        environment=environment,
        options=function_options(function_props, environment),
        timeout=Duration.seconds(settings.redriver_timeout_seconds),
        memory_size=settings.redriver_memory_mb,
        layer=redriver.powertools_layer,
        # A large drain's workers (runtime/workers.py) are runs of this function, one a lease: at most
        # MAX_WORKERS of them, and one more for the schedule's tick. A re-driver that does not fan
        # out (no kit's verdicts: grant_consumer raises it, reserve_for_drains) runs one at a time
        # (a tick waits for the run before it).
        reserved_concurrency=redriver_concurrency(
            settings.max_workers,
            dead_letter_sources=bool(redriver.dead_letter_sources),
            consumer_verdicts=settings.consumer_verdicts,
        ),
    )
    # A failed run is retried by the next scheduled run, not immediately: an instant retry
    # would hit the same broken dependency and bypass the schedule's spacing.
    function.configure_async_invoke(retry_attempts=0, max_event_age=MAX_EVENT_AGE)
    for rule_id in (
        "Serverless::Serverless-LambdaDLQ",
        "Serverless::Serverless-LambdaAsyncFailureDestination",
    ):
        acknowledge(
            function,
            rule_id,
            "The only events are the schedule's tick and a run's continuation, which carry no "
            "data: a failed or dropped run loses nothing, and the next scheduled run is its retry.",
        )
    return function


def build_schedule(redriver: SqsRedriver) -> events.Rule:
    """The EventBridge rule (``Schedule``) that runs the function on ``settings.schedule``."""
    rule = events.Rule(
        redriver,
        "Schedule",
        description="Runs the smart DLQ re-driver",
        schedule=events.Schedule.expression(redriver.settings.schedule),
        targets=[targets.LambdaFunction(redriver.function, retry_attempts=2, max_event_age=MAX_EVENT_AGE)],
    )
    acknowledge(
        rule,
        "Serverless::Serverless-EventBusDLQ",
        "A scheduled tick that cannot be delivered carries no data; the next tick replaces it.",
    )
    return rule


def reserve_for_drains(redriver: SqsRedriver) -> None:
    """The function's reserved concurrency once its consumer reports verdicts (``grant_consumer``):
    a large drain may fan out from then on."""
    cfn = cast(lambda_.CfnFunction, redriver.function.node.default_child)
    cfn.reserved_concurrent_executions = redriver_concurrency(
        redriver.settings.max_workers,
        dead_letter_sources=bool(redriver.dead_letter_sources),
        consumer_verdicts=True,
    )
