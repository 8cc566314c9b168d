"""The operator's tool when AWS cannot be used: no region, no credentials, an unreachable endpoint,
expired credentials, a denied call, a re-driver the stack does not have. Each ends in one line that
says what to do and exit code 1, never a traceback. No network: a closed local port refuses at once."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from typer.testing import CliRunner

from sqs_redriver.console import aws as tool_aws
from sqs_redriver.console.advice import EXPIRED, NO_CREDENTIALS, NO_REGION
from sqs_redriver.console.cli import app
from sqs_redriver.console.deployment import Deployment
from sqs_redriver.protocol.deployment import OUTPUT_DESCRIPTION
from tests.support.aws import Aws

CLOSED_PORT = "http://127.0.0.1:9"  # nothing listens: the connection is refused at once


def explicit(*args: str, endpoint: str | None = None) -> Any:
    """The tool on queues and a table named on the command line (nothing is called before a command)."""
    target = ["--dlq-url", f"{CLOSED_PORT}/1/dlq", "--source-url", f"{CLOSED_PORT}/1/src"]
    target += ["--parking-lot-url", f"{CLOSED_PORT}/1/lot", "--table", "state"]
    if endpoint:
        target += ["--endpoint-url", endpoint]
    return CliRunner().invoke(app, [*target, *args])


def assert_one_line(result: Any, expected: str) -> None:
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit), result.exception  # an exit, not a raised error
    assert "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == [f"error: {expected}"]


@pytest.fixture
def fast_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    """One attempt, short timeouts: a refused connection fails at once."""
    monkeypatch.setattr(tool_aws, "TOOL_CONFIG", Config(retries={"max_attempts": 1}, connect_timeout=1))


@pytest.fixture
def nothing_configured(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """No AWS configuration file, no region, no credentials anywhere (instance metadata off)."""
    for name in (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    for name in (
        "AWS_SESSION_TOKEN",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.usefixtures("fast_failing", "nothing_configured")
def test_a_missing_region_says_to_pass_one() -> None:
    assert_one_line(explicit("groups"), NO_REGION)


@pytest.mark.usefixtures("fast_failing", "nothing_configured")
def test_missing_credentials_say_how_to_log_in() -> None:
    assert_one_line(explicit("--region", "eu-west-1", "groups", endpoint=CLOSED_PORT), NO_CREDENTIALS)


@pytest.mark.usefixtures("fast_failing")
def test_an_unreachable_endpoint_is_named_with_what_to_check() -> None:
    result = explicit("groups", "--queue", "dlq", endpoint=CLOSED_PORT)

    assert_one_line(
        result,
        f"cannot reach {CLOSED_PORT}/: check --endpoint-url (or AWS_ENDPOINT_URL), --region and the network, "
        "then retry",
    )


def refusing(code: str) -> Callable[[Any, str], Any]:
    """``Connection.client`` whose clients answer every receive with AWS error ``code``."""

    def client(_connection: Any, service: str) -> Any:
        made = boto3.client(service, region_name="eu-west-1")  # type: ignore[call-overload]
        stubber = Stubber(made)
        stubber.add_client_error("receive_message", service_error_code=code, http_status_code=403)
        stubber.activate()
        return made

    return client


def test_expired_credentials_say_to_log_in_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_aws.Connection, "client", refusing("ExpiredToken"))

    assert_one_line(explicit("groups", "--queue", "dlq"), EXPIRED)


def test_access_denied_says_which_call_and_how_to_get_access(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_aws.Connection, "client", refusing("AccessDenied"))

    result = explicit("groups", "--queue", "dlq")

    assert_one_line(
        result,
        "access denied (ReceiveMessage): this identity may not use the re-driver's resources; use a role "
        "given them by redriver.grant_operator(role), or a profile that has one",
    )


def test_an_unknown_redriver_lists_the_stacks_re_drivers(aws: Aws) -> None:
    deployment = Deployment("App/Orders/Redriver", aws.dlq_url, (aws.source_url,), aws.parking_lot_url, "t")
    template = {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"Redriver": {"Value": deployment.to_json(), "Description": OUTPUT_DESCRIPTION}},
    }
    boto3.client("cloudformation").create_stack(StackName="App", TemplateBody=json.dumps(template))

    result = CliRunner().invoke(app, ["--stack", "App", "--redriver", "Payments", "status"])

    assert_one_line(
        result,
        "stack App has no re-driver named 'Payments'; its re-drivers: App/Orders/Redriver (--redriver takes "
        "a name or the end of one)",
    )
