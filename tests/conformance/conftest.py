"""LocalStack's SQS provider as a subprocess for the session, DynamoDB on a moto server, and fresh
queues and a state table for each test.

`make conformance` builds LocalStack's venv and names its interpreter in LOCALSTACK_VENV_PYTHON.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from local_aws import REGION
from local_aws.resources import STATE_TABLE_KEY, Resources, create_table, queue_arn

VISIBILITY_TIMEOUT = 1
MAX_RECEIVE_COUNT = 2
STARTUP_TIMEOUT_SECONDS = 120
LOG_TAIL_LINES = 60
# Where the session's LocalStack writes its log, for the report of a failed test.
_LOCALSTACK_LOG: list[Path] = []


@dataclass(frozen=True)
class Endpoints:
    sqs: str
    dynamodb: str


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _log_tail(path: Path) -> str:
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    return "\n".join(lines[-LOG_TAIL_LINES:])


def _wait_until_ready(process: subprocess.Popen[bytes], endpoint: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"LocalStack exited with {process.returncode}:\n{_log_tail(log)}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{endpoint}/_localstack/health", timeout=1) as response:
                services = json.load(response)["services"]
            if services.get("sqs") in ("available", "running"):
                return
        except OSError:
            pass
        time.sleep(0.25)
    pytest.fail(f"LocalStack not ready in {STARTUP_TIMEOUT_SECONDS} s:\n{_log_tail(log)}", pytrace=False)


@pytest.fixture(scope="session")
def localstack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """LocalStack with only SQS, on 127.0.0.1 and a free port; its endpoint."""
    python = os.environ.get("LOCALSTACK_VENV_PYTHON")
    if not python:
        pytest.fail("LOCALSTACK_VENV_PYTHON is not set: run these with `make conformance`", pytrace=False)
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("localstack") / "localstack.log"
    _LOCALSTACK_LOG.append(log)
    env = {
        **os.environ,
        "SERVICES": "sqs",
        "GATEWAY_LISTEN": f"127.0.0.1:{port}",
        # No DNS server, no certificate download, no usage events: nothing leaves the machine.
        "DNS_ADDRESS": "0",
        "SKIP_SSL_CERT_DOWNLOAD": "1",
        "DISABLE_EVENTS": "1",
    }
    with log.open("wb") as output:
        process = subprocess.Popen(
            [python, "-m", "localstack.runtime.main"], env=env, stdout=output, stderr=subprocess.STDOUT
        )
    try:
        _wait_until_ready(process, endpoint, log)
        yield endpoint
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def endpoints(localstack: str) -> Iterator[Endpoints]:
    """SQS on LocalStack; DynamoDB on moto (LocalStack's needs a Java download)."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield Endpoints(sqs=localstack, dynamodb=f"http://{host}:{port}")
    finally:
        server.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report ends with the tail of LocalStack's log."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and _LOCALSTACK_LOG:
        report.sections.append(("LocalStack log (tail)", _log_tail(_LOCALSTACK_LOG[0])))


class Rig:
    """Clients for LocalStack's SQS and moto's DynamoDB, and names unique to one test."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.sqs: Any = boto3.client("sqs", region_name=REGION, endpoint_url=endpoints.sqs)
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
        create_table(self.dynamodb, table_name, STATE_TABLE_KEY)
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


@pytest.fixture
def rig(endpoints: Endpoints) -> Rig:
    return Rig(endpoints)
