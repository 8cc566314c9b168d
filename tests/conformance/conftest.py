"""LocalStack's SQS and SNS providers as a subprocess for the session, DynamoDB on a moto server,
and fresh queues and a state table for each test.

`make conformance` builds LocalStack's venv and names its interpreter in LOCALSTACK_VENV_PYTHON.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto.server import ThreadedMotoServer

from tests.support.localstack import SERVICES, Endpoints, Rig, free_port, log_tail, wait_until_ready

# Where the session's LocalStack writes its log, for the report of a failed test.
_LOCALSTACK_LOG: list[Path] = []


@pytest.fixture(scope="session")
def localstack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """LocalStack with only SQS and SNS, on 127.0.0.1 and a free port; its endpoint."""
    python = os.environ.get("LOCALSTACK_VENV_PYTHON")
    if not python:
        pytest.fail("LOCALSTACK_VENV_PYTHON is not set: run these with `make conformance`", pytrace=False)
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("localstack") / "localstack.log"
    _LOCALSTACK_LOG.append(log)
    env = {
        **os.environ,
        "SERVICES": ",".join(SERVICES),
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
        wait_until_ready(process, endpoint, log)
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
    """SQS and SNS on LocalStack; DynamoDB on moto (LocalStack's needs a Java download)."""
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
        report.sections.append(("LocalStack log (tail)", log_tail(_LOCALSTACK_LOG[0])))


@pytest.fixture
def rig(endpoints: Endpoints) -> Rig:
    return Rig(endpoints)
