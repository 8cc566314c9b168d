"""The local AWS of the demo and the bench: moto, with its depth-dependent SQS costs cut down."""

from __future__ import annotations

import io
import json
import zipfile

import boto3
import moto.sqs.models as moto_sqs_models
import pytest
from moto import mock_aws
from moto.core.utils import unix_time, unix_time_millis
from moto.sqs.models import SQSBackend, sqs_backends

from local_aws import ACCOUNT, REGION
from local_aws.cloudformation import deploy_synthesized
from local_aws.server import speed_up_moto_sqs
from local_aws.simulation import default_stack
from sqs_redriver.cdk.functions import powertools_layer_parameter
from sqs_redriver.protocol.settings import ENV_DLQ_URL, ENV_MAX_RECEIVE_COUNT, ENV_TABLE_NAME
from tests.support.aws import Aws

KIT_ENV = (ENV_DLQ_URL, ENV_TABLE_NAME, ENV_MAX_RECEIVE_COUNT)


@pytest.fixture(autouse=True)
def restore_stock_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rest of the suite runs on stock moto: undo the speed-up after each test."""
    for target, name in (
        (SQSBackend, "is_message_valid_based_on_retention_period"),
        (moto_sqs_models, "unix_time"),
        (moto_sqs_models, "unix_time_millis"),
    ):
        monkeypatch.setattr(target, name, getattr(target, name))


def test_speed_up_keeps_which_messages_are_within_retention(aws: Aws) -> None:
    url = aws.sqs.create_queue(QueueName="short", Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
    for body in ("fresh", "expired", "near-the-limit"):
        aws.sqs.send_message(QueueUrl=url, MessageBody=body)
    backend = sqs_backends[ACCOUNT][REGION]
    messages = {m.body: m for m in backend.get_queue("short")._messages}
    now_ms = unix_time_millis()
    messages["expired"].sent_timestamp = int(now_ms - 120_000)
    messages["near-the-limit"].sent_timestamp = int(now_ms - 55_000)

    def verdicts() -> dict[str, bool]:
        return {
            body: backend.is_message_valid_based_on_retention_period("short", m)
            for body, m in messages.items()
        }

    stock = verdicts()
    speed_up_moto_sqs()

    assert verdicts() == stock == {"fresh": True, "expired": False, "near-the-limit": True}


def test_speed_up_keeps_the_clock_and_what_is_visible(aws: Aws) -> None:
    speed_up_moto_sqs()

    before = unix_time()
    patched = moto_sqs_models.unix_time()
    after = unix_time()
    assert before - 0.001 <= patched <= after + 0.001
    assert before * 1000 - 1 <= moto_sqs_models.unix_time_millis() <= unix_time_millis() + 1
    aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody="now")
    aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody="later", DelaySeconds=60)
    received = aws.sqs.receive_message(QueueUrl=aws.source_url, MaxNumberOfMessages=10, VisibilityTimeout=60)
    assert [m["Body"] for m in received["Messages"]] == ["now"]
    assert "Messages" not in aws.sqs.receive_message(QueueUrl=aws.source_url, MaxNumberOfMessages=10)


def test_the_deployed_consumer_gets_the_kits_environment_and_the_layer_is_published() -> None:
    # The default stack as `cdk deploy` would create it, in moto's CloudFormation. moto drops a
    # function's Layers (the template test checks the attachment); the layer version itself is
    # published from the zipped asset the fake bootstrap uploaded.
    with mock_aws():
        deployment = deploy_synthesized(default_stack())
        [kit_layer] = boto3.client("lambda").list_layers(CompatibleRuntime="python3.14")["Layers"]
        s3 = boto3.client("s3")
        buckets = {b["Name"] for b in s3.list_buckets()["Buckets"]}
        [bucket] = [name for name in buckets if name.startswith("cdk-")]  # the fake bootstrap's
        zipped = {
            obj["Key"]: set(
                zipfile.ZipFile(
                    io.BytesIO(s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read())
                ).namelist()
            )
            for obj in s3.list_objects_v2(Bucket=bucket)["Contents"]
            if obj["Key"].endswith(".zip")
        }

    assert {name: deployment.consumer.environment.get(name) for name in KIT_ENV} == {
        ENV_DLQ_URL: deployment.dlq_url,
        ENV_TABLE_NAME: deployment.state_table,
        ENV_MAX_RECEIVE_COUNT: "5",
    }
    assert deployment.redriver.environment["CONSUMER_VERDICTS"] == "true"
    assert buckets - {bucket} == {deployment.redriver.environment["ARCHIVE_BUCKET"]}  # the archive
    assert "RedriverConsumerKitLayer" in kit_layer["LayerName"]
    [layer_files] = [
        names for names in zipped.values() if "python/sqs_redriver/protocol/envelope.py" in names
    ]
    assert [name for name in layer_files if "__pycache__" in name or name.endswith(".pyc")] == []


def test_the_powertools_layers_dynamic_reference_deploys_into_moto_unchanged() -> None:
    # moto resolves no {{resolve:ssm:...}} and cannot hold parameters under /aws/: the template goes
    # in as `cdk deploy` would send it, and moto drops the function's Layers.
    with mock_aws():
        deployment = deploy_synthesized(default_stack())
        body = boto3.client("cloudformation").get_template(StackName=deployment.stack_name)["TemplateBody"]

    template = body if isinstance(body, str) else json.dumps(body)
    assert f"{{{{resolve:ssm:{powertools_layer_parameter()}}}}}" in template
