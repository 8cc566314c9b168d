"""The synthesized app deployed into moto's CloudFormation, and read back.

The app is synthesized exactly as `cdk synth` would (with a profile from cdk.json), and its
CloudFormation template is created in moto's CloudFormation, so what runs locally is the same
infrastructure definition as `cdk deploy`'s. moto needs a fake CDK bootstrap for the assets.

The template goes in unchanged, including the Powertools layer's dynamic reference
(`{{resolve:ssm:/aws/service/powertools/...}}`): moto's CloudFormation resolves no dynamic
references and drops a function's Layers, so the reference is never read. moto could not host that
parameter anyway (it refuses names under `/aws/`), and a template Parameter in its place made
moto's server fail create_stack. The functions run in-process here, with the installed Powertools.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from local_aws import ACCOUNT, REGION

BOOTSTRAP_QUALIFIER = "hnb659fds"
BOOTSTRAP_VERSION = "30"


@dataclass(frozen=True)
class FunctionConfig:
    name: str
    handler: str
    environment: dict[str, str]
    timeout_seconds: int


@dataclass(frozen=True)
class Deployment:
    """What the deployed stack holds, read back from moto (never from the template)."""

    stack_name: str
    redriver: FunctionConfig
    consumer: FunctionConfig
    consumer_batch_size: int
    consumer_mapping_id: str
    source_queue_arn: str
    schedule_expression: str

    @property
    def source_url(self) -> str:
        return self.redriver.environment["SOURCE_QUEUE_URL"]

    @property
    def dlq_url(self) -> str:
        return self.redriver.environment["DLQ_URL"]

    @property
    def parking_lot_url(self) -> str:
        return self.redriver.environment["PARKING_LOT_URL"]

    @property
    def state_table(self) -> str:
        return self.redriver.environment["DYNAMODB_TABLE_NAME"]


def synthesize(context: dict[str, Any], outdir: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Synthesize the app; return the stack name, its template and its asset manifest."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from app import STACK_NAME, build_app  # jsii starts node: import only when synthesizing

    build_app(outdir=str(outdir), context=context).synth()
    template = json.loads((outdir / f"{STACK_NAME}.template.json").read_text())
    assets = json.loads((outdir / f"{STACK_NAME}.assets.json").read_text())
    return STACK_NAME, template, assets


@dataclass(frozen=True)
class Synthesized:
    """A synthesized app, held in memory: deployable into any number of fresh moto accounts
    without synthesizing again (synthesis costs seconds, a deployment into moto much less)."""

    stack_name: str
    template: dict[str, Any]
    asset_objects: dict[str, bytes]  # object key in the bootstrap bucket -> zipped asset


def synthesize_app(context: dict[str, Any]) -> Synthesized:
    """Synthesize with ``context`` into a temporary directory and keep what a deployment needs."""
    with tempfile.TemporaryDirectory(prefix="cdk.out-") as directory:
        outdir = Path(directory)
        stack_name, template, assets = synthesize(context, outdir)
        objects: dict[str, bytes] = {}
        for asset in assets["files"].values():
            source = outdir / asset["source"]["path"]
            body = _zip_folder(source) if source.is_dir() else source.read_bytes()
            for destination in asset["destinations"].values():
                objects[destination["objectKey"]] = body
    return Synthesized(stack_name, template, objects)


def fake_bootstrap(asset_objects: dict[str, bytes]) -> None:
    """What `cdk bootstrap` + asset publishing would leave: the version parameter and zipped assets."""
    boto3.client("ssm").put_parameter(
        Name=f"/cdk-bootstrap/{BOOTSTRAP_QUALIFIER}/version", Value=BOOTSTRAP_VERSION, Type="String"
    )
    s3 = boto3.client("s3")
    bucket = f"cdk-{BOOTSTRAP_QUALIFIER}-assets-{ACCOUNT}-{REGION}"
    s3.create_bucket(Bucket=bucket)
    for key, body in asset_objects.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body)


def _zip_folder(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def deploy(context: dict[str, Any]) -> Deployment:
    """Synthesize with ``context``, deploy into moto's CloudFormation, and read the result back.

    moto skips what it does not emulate (queue policies, async invoke configuration) with a warning.
    """
    return deploy_synthesized(synthesize_app(context))


def deploy_synthesized(app: Synthesized) -> Deployment:
    """Deploy an app synthesized before into moto's CloudFormation, and read the result back."""
    fake_bootstrap(app.asset_objects)
    cloudformation = boto3.client("cloudformation")
    cloudformation.create_stack(
        StackName=app.stack_name, TemplateBody=json.dumps(app.template), Capabilities=["CAPABILITY_IAM"]
    )
    status = cloudformation.describe_stacks(StackName=app.stack_name)["Stacks"][0]["StackStatus"]
    if status != "CREATE_COMPLETE":
        raise RuntimeError(f"stack {app.stack_name} did not deploy into moto: {status}")
    return read_deployment(app.stack_name)


def read_deployment(stack_name: str) -> Deployment:
    resources = boto3.client("cloudformation").list_stack_resources(StackName=stack_name)[
        "StackResourceSummaries"
    ]
    lambda_client = boto3.client("lambda")
    functions = {
        config.handler: config
        for config in (
            _function_config(lambda_client, r["PhysicalResourceId"])
            for r in resources
            if r["ResourceType"] == "AWS::Lambda::Function"
        )
    }
    consumer = functions["consumer.handler.lambda_handler"]
    [mapping] = lambda_client.list_event_source_mappings(FunctionName=consumer.name)["EventSourceMappings"]
    [rule] = [r for r in resources if r["ResourceType"] == "AWS::Events::Rule"]
    schedule = boto3.client("events").describe_rule(Name=rule["PhysicalResourceId"])["ScheduleExpression"]
    return Deployment(
        stack_name=stack_name,
        redriver=functions["sqs_redriver.runtime.handler.lambda_handler"],
        consumer=consumer,
        consumer_batch_size=int(mapping["BatchSize"]),
        consumer_mapping_id=mapping["UUID"],
        source_queue_arn=mapping["EventSourceArn"],
        schedule_expression=schedule,
    )


def _function_config(lambda_client: Any, name: str) -> FunctionConfig:
    config = lambda_client.get_function_configuration(FunctionName=name)
    return FunctionConfig(
        name=config["FunctionName"],
        handler=config["Handler"],
        environment=dict(config.get("Environment", {}).get("Variables", {})),
        timeout_seconds=int(config["Timeout"]),
    )
