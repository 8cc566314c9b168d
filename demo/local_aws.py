"""AWS on the laptop: an embedded moto server, and the synthesized stack deployed into it.

The app is synthesized exactly as `cdk synth` would (with a profile from cdk.json), and its
CloudFormation template is created in moto's CloudFormation, so the demo runs the same
infrastructure definition as `cdk deploy`. moto needs a fake CDK bootstrap for the assets.
"""

from __future__ import annotations

import io
import json
import logging
import os
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
import moto.sqs.models as moto_sqs_models
from moto.core.utils import unix_time as moto_unix_time
from moto.server import ThreadedMotoServer
from moto.sqs.models import Message, SQSBackend

REGION = "us-east-1"
ACCOUNT = "123456789012"
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


def _retention_check(backend: SQSBackend, queue_name: str, message: Message) -> bool:
    retention_seconds = backend.get_queue(queue_name).message_retention_period
    return retention_seconds + message.sent_timestamp / 1000 > _unix_time()  # type: ignore[operator]


def _unix_time(dt: datetime | None = None) -> float:
    return time.time() if dt is None else moto_unix_time(dt)


def _unix_time_millis(dt: datetime | None = None) -> float:
    return _unix_time(dt) * 1000.0


def speed_up_moto_sqs() -> None:
    """Cut down the cost of moto's SQS calls that grows with a queue's depth, so deep-queue figures
    measure the code under test more than moto (SQS's own latency does not grow with depth).
    Which messages moto returns does not change.

    moto 5.2 checks every message a receive returns against the retention period by computing all
    the queue's attributes, three of which scan every message (a receive of 10 at a depth of 500
    took ~0.3 s): the retention period is now read directly. Every scan asks the time once per
    message through two datetime constructions: it now reads the same clock directly. What is left
    still grows with depth, only less: each receive scans the queue, and each message sent
    computes the queue's attributes (three scans).
    """
    SQSBackend.is_message_valid_based_on_retention_period = _retention_check  # type: ignore[method-assign]
    moto_sqs_models.unix_time = _unix_time
    moto_sqs_models.unix_time_millis = _unix_time_millis


@contextmanager
def moto_server() -> Iterator[str]:
    """Start moto on 127.0.0.1 (a free port) and point every boto3 client of this process at it."""
    speed_up_moto_sqs()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = dict(os.environ)
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "demo",
            "AWS_SECRET_ACCESS_KEY": "demo",
            "AWS_DEFAULT_REGION": REGION,
        }
    )
    os.environ.pop("AWS_PROFILE", None)
    try:
        yield endpoint
    finally:
        server.stop()
        os.environ.clear()
        os.environ.update(saved)


def synthesize(context: dict[str, Any], outdir: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Synthesize the app; return the stack name, its template and its asset manifest."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from app import STACK_NAME, build_app  # jsii starts node: import only when synthesizing

    build_app(outdir=str(outdir), context=context).synth()
    template = json.loads((outdir / f"{STACK_NAME}.template.json").read_text())
    assets = json.loads((outdir / f"{STACK_NAME}.assets.json").read_text())
    return STACK_NAME, template, assets


def fake_bootstrap(assets: dict[str, Any], outdir: Path) -> None:
    """What `cdk bootstrap` + asset publishing would leave: the version parameter and zipped assets."""
    boto3.client("ssm").put_parameter(
        Name=f"/cdk-bootstrap/{BOOTSTRAP_QUALIFIER}/version", Value=BOOTSTRAP_VERSION, Type="String"
    )
    s3 = boto3.client("s3")
    bucket = f"cdk-{BOOTSTRAP_QUALIFIER}-assets-{ACCOUNT}-{REGION}"
    s3.create_bucket(Bucket=bucket)
    for asset in assets["files"].values():
        source = outdir / asset["source"]["path"]
        body = _zip_folder(source) if source.is_dir() else source.read_bytes()
        for destination in asset["destinations"].values():
            s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=body)


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
    with tempfile.TemporaryDirectory(prefix="cdk.out-") as directory:
        outdir = Path(directory)
        stack_name, template, assets = synthesize(context, outdir)
        fake_bootstrap(assets, outdir)
    cloudformation = boto3.client("cloudformation")
    cloudformation.create_stack(
        StackName=stack_name, TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_IAM"]
    )
    status = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"]
    if status != "CREATE_COMPLETE":
        raise RuntimeError(f"stack {stack_name} did not deploy into moto: {status}")
    return read_deployment(stack_name)


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
        redriver=functions["redriver.handler.lambda_handler"],
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


class AtomicReceive:
    """A client whose receives are serialized. SQS hides a message in the same step that returns
    it; moto does not (two threads can both take a message before either marks it received), in
    process or behind its server. Parallel batches against moto need this; against SQS they do not."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def receive_message(self, **kwargs: Any) -> Any:
        with self._lock:
            return self._client.receive_message(**kwargs)
