"""The operator's tool when AWS cannot be used: no region, no credentials, an unreachable endpoint,
expired credentials, a denied call, a re-driver the stack does not have; an endpoint or region
that is not of a usable form, an endpoint that is not AWS, a region the endpoint does not serve.
Each ends in one line that says what to do and exit code 1 (2: the option's form is wrong), never
a traceback. No network: a closed local port refuses at once, local servers stand in for the rest."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from moto.server import ThreadedMotoServer
from typer.testing import CliRunner

from local_aws import REGION
from sqs_redriver.console import tool
from sqs_redriver.console.advice import (
    EXPIRED,
    NO_CREDENTIALS,
    NO_CREDENTIALS_LOCALLY,
    NO_REGION,
    REJECTED,
    explain,
)
from sqs_redriver.console.cli import app
from sqs_redriver.console.tool import Connection, Deployment
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from tests.support.aws import Aws
from tests.support.fake_endpoints import aws_refusing, web_server

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
    monkeypatch.setattr(tool, "TOOL_CONFIG", Config(retries={"max_attempts": 1}, connect_timeout=1))


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
    # Signing fails before any request: nothing is sent to AWS.
    assert_one_line(explicit("--region", "eu-west-1", "groups"), NO_CREDENTIALS)


@pytest.mark.usefixtures("fast_failing", "nothing_configured")
def test_missing_credentials_for_a_local_endpoint_say_that_any_will_do() -> None:
    assert_one_line(explicit("--region", "eu-west-1", "groups", endpoint=CLOSED_PORT), NO_CREDENTIALS_LOCALLY)


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
    monkeypatch.setattr(Connection, "client", refusing("ExpiredToken"))

    assert_one_line(explicit("groups", "--queue", "dlq"), EXPIRED)


def test_access_denied_says_which_call_and_how_to_get_access(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Connection, "client", refusing("AccessDenied"))

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


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """A moto server: it serves the regions it knows, and answers any other with an HTML error page."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@dataclass(frozen=True)
class BadSetup:
    """Options (``<server>``: the local server's URL, ``<moto>``: moto's), the server to start, the
    exit code and the one line the tool must print."""

    options: tuple[str, ...]
    code: int
    line: str
    server: Callable[[], AbstractContextManager[str]] | None = None


def form(option: str, value: str, what: str) -> str:
    return f"{option} {value!r} is not {what}"


URL = "an http:// or https:// URL with a host (like http://localhost:4566)"
ENDPOINT_OPTION = "--endpoint-url (or AWS_ENDPOINT_URL)"
UNREACHABLE = f"cannot reach {CLOSED_PORT}/: check {ENDPOINT_OPTION}, --region and the network, then retry"
WITH_A_STACK = ("--stack", "Shop")  # CloudFormation first: an XML (query) API; without, SQS's JSON API


def not_aws(answered: str, region: str = REGION) -> str:
    return (
        f"{answered}: not an AWS endpoint, or one that does not serve region {region}; check "
        f"{ENDPOINT_OPTION} and --region"
    )


BAD_SETUPS = {
    "endpoint not a URL": BadSetup(("--endpoint-url", "notaurl"), 2, form(ENDPOINT_OPTION, "notaurl", URL)),
    "endpoint without a host": BadSetup(
        ("--endpoint-url", "http://"), 2, form(ENDPOINT_OPTION, "http://", URL)
    ),
    "endpoint not http": BadSetup(("--endpoint-url", "ftp://x"), 2, form(ENDPOINT_OPTION, "ftp://x", URL)),
    "endpoint port out of range": BadSetup(
        ("--endpoint-url", "http://127.0.0.1:99999"), 2, form(ENDPOINT_OPTION, "http://127.0.0.1:99999", URL)
    ),
    "region not a region name": BadSetup(
        ("--region", "bad_region!"),
        2,
        form("--region (or AWS_REGION)", "bad_region!", "a region name (like eu-west-1)"),
    ),
    "nothing listening": BadSetup(("--endpoint-url", CLOSED_PORT), 1, UNREACHABLE),
    "a web server's 404 (JSON API)": BadSetup(
        ("--endpoint-url", "<server>"),
        1,
        not_aws("<server> answered GetQueueAttributes with HTTP 404 and no AWS error"),
        web_server,
    ),
    "a web server's 404 (XML API)": BadSetup(
        ("--endpoint-url", "<server>", *WITH_A_STACK),
        1,
        not_aws("<server> answered in a form AWS does not use"),
        web_server,
    ),
    "a region moto does not serve (JSON API)": BadSetup(
        ("--endpoint-url", "<moto>", "--region", "xx-nowhere-1"),
        1,
        not_aws("<moto> answered GetQueueAttributes with HTTP 500 and no AWS error", "xx-nowhere-1"),
    ),
    "a region moto does not serve (XML API)": BadSetup(
        ("--endpoint-url", "<moto>", "--region", "xx-nowhere-1", *WITH_A_STACK),
        1,
        not_aws("<moto> answered in a form AWS does not use", "xx-nowhere-1"),
    ),
    "an expired token (JSON API)": BadSetup(
        ("--endpoint-url", "<server>"), 1, EXPIRED, lambda: aws_refusing("ExpiredTokenException")
    ),
    "an expired token (XML API)": BadSetup(
        ("--endpoint-url", "<server>", *WITH_A_STACK), 1, EXPIRED, lambda: aws_refusing("ExpiredToken")
    ),
    "credentials AWS does not know (JSON API)": BadSetup(
        ("--endpoint-url", "<server>"), 1, REJECTED, lambda: aws_refusing("UnrecognizedClientException")
    ),
    "credentials AWS does not know (XML API)": BadSetup(
        ("--endpoint-url", "<server>", *WITH_A_STACK),
        1,
        REJECTED,
        lambda: aws_refusing("InvalidClientTokenId", status=403),
    ),
    "a signature AWS does not accept": BadSetup(
        ("--endpoint-url", "<server>"), 1, REJECTED, lambda: aws_refusing("InvalidSignatureException")
    ),
    "a profile that does not exist": BadSetup(
        ("--profile", "nosuch"),
        1,
        "The config profile (nosuch) could not be found: check --profile (or AWS_PROFILE) against your AWS "
        "config (aws configure list-profiles)",
    ),
}


@pytest.mark.usefixtures("fast_failing")
@pytest.mark.parametrize("case", BAD_SETUPS)
def test_every_bad_endpoint_region_or_credential_ends_in_one_line(case: str, moto_endpoint: str) -> None:
    setup = BAD_SETUPS[case]

    with (setup.server or nullcontext)() as endpoint:
        named = {"<server>": endpoint or "", "<moto>": moto_endpoint}
        options = [named.get(option, option) for option in setup.options]
        stack = "--stack" in options  # else the queues and the table are named on the command line
        result = CliRunner().invoke(app, [*options, "status"]) if stack else explicit(*options, "status")

    expected = setup.line.replace("<server>", named["<server>"]).replace("<moto>", named["<moto>"])
    assert result.exit_code == setup.code, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # an exit, not a raised error
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {expected}"]


def test_a_services_endpoint_from_the_environment_that_is_not_a_url_ends_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", "notaurl")

    result = CliRunner().invoke(app, [*WITH_A_STACK, "status"])

    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: the endpoint for cloudformation (AWS_ENDPOINT_URL_CLOUDFORMATION, or ")
    assert "notaurl" in line


def test_an_unreachable_region_botocore_does_not_know_is_called_a_likely_typo() -> None:
    unknown, known = Connection(region="xx-nowhere-1"), Connection(region="eu-west-1")
    failure = EndpointConnectionError(endpoint_url="https://sqs.xx-nowhere-1.amazonaws.com/")

    assert explain(failure, unknown) == (
        "cannot reach AWS in region xx-nowhere-1, a region botocore does not know: check --region "
        "(or AWS_REGION)"
    )
    assert (explain(failure, known) or "").startswith("cannot reach https://sqs.xx-nowhere-1.amazonaws.com/")
