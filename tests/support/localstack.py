"""LocalStack's SQS and SNS providers and a moto server for DynamoDB, for the conformance tests:
starting LocalStack and waiting for it, and a rig of clients and per-test resource names on both."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from local_aws import REGION
from local_aws.resources import Resources, create_state_table, queue_arn

VISIBILITY_TIMEOUT = 1
MAX_RECEIVE_COUNT = 2
STARTUP_TIMEOUT_SECONDS = 300  # a hang's bound: LocalStack's start imports much, slow on a busy machine
LOG_TAIL_LINES = 60
# LocalStack's providers the tests use (its SERVICES), on one gateway; each starts without Docker.
SERVICES = ("sqs", "sns")


@dataclass(frozen=True)
class Endpoints:
    sqs: str  # LocalStack's gateway: SNS too
    dynamodb: str


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def log_tail(path: Path) -> str:
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    return "\n".join(lines[-LOG_TAIL_LINES:])


def wait_until_ready(process: subprocess.Popen[bytes], endpoint: str, log: Path) -> None:
    """Return once LocalStack's SERVICES are available; fail the test with its log if it exits or
    is not ready in time."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"LocalStack exited with {process.returncode}:\n{log_tail(log)}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{endpoint}/_localstack/health", timeout=1) as response:
                services = json.load(response)["services"]
            if all(services.get(name) in ("available", "running") for name in SERVICES):
                return
        except OSError:
            pass
        time.sleep(0.25)
    pytest.fail(f"LocalStack not ready in {STARTUP_TIMEOUT_SECONDS} s:\n{log_tail(log)}", pytrace=False)


class Rig:
    """Clients for LocalStack's SQS and SNS and moto's DynamoDB, and names unique to one test."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.sqs: Any = boto3.client("sqs", region_name=REGION, endpoint_url=endpoints.sqs)
        self.sns: Any = boto3.client("sns", region_name=REGION, endpoint_url=endpoints.sqs)
        self.dynamodb: Any = boto3.client("dynamodb", region_name=REGION, endpoint_url=endpoints.dynamodb)
        # The archive of parked messages, on the moto server that plays DynamoDB.
        self.s3: Any = boto3.client("s3", region_name=REGION, endpoint_url=endpoints.dynamodb)
        self.prefix = f"c{uuid.uuid4().hex[:8]}"

    def queue(self, name: str, *, fifo: bool = False, dead_letter_to: str | None = None) -> str:
        """A queue (1 s visibility); with ``dead_letter_to``, SQS moves a message there after its
        second failed receive."""
        attributes = {"VisibilityTimeout": str(VISIBILITY_TIMEOUT)}
        if fifo:
            attributes["FifoQueue"] = "true"
        if dead_letter_to:
            target = queue_arn(self.sqs, dead_letter_to)
            policy = {"deadLetterTargetArn": target, "maxReceiveCount": MAX_RECEIVE_COUNT}
            attributes["RedrivePolicy"] = json.dumps(policy)
        suffix = ".fifo" if fifo else ""
        url: str = self.sqs.create_queue(QueueName=f"{self.prefix}-{name}{suffix}", Attributes=attributes)[
            "QueueUrl"
        ]
        return url

    def resources(self, *, fifo: bool = False, name: str = "orders") -> Resources:
        """A source queue dead-lettering into its DLQ, a parking lot and a state table."""
        dlq_url = self.queue(f"{name}-dlq", fifo=fifo)
        source_url = self.queue(name, fifo=fifo, dead_letter_to=dlq_url)
        table_name = f"{self.prefix}-state"
        create_state_table(self.dynamodb, table_name)
        return Resources(
            sqs=self.sqs,
            dynamodb=self.dynamodb,
            source_url=source_url,
            source_arn=queue_arn(self.sqs, source_url),
            dlq_url=dlq_url,
            parking_lot_url=self.queue(f"{name}-parking-lot", fifo=fifo),
            table_name=table_name,
            s3=self.s3,
            archive_bucket=self.archive_bucket(),
        )

    def archive_bucket(self) -> str:
        """A bucket of this test's own for the archive of parked messages."""
        name = f"{self.prefix}-archive".lower()
        self.s3.create_bucket(Bucket=name)  # us-east-1 takes no LocationConstraint
        return name
