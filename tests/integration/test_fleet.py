"""``sqs-redriver fleet`` on moto: every DLQ of the account over several pages of queues and two
regions, with its depth, age, sources and guard; a broken policy, a refused queue and a refused
region are problem lines (exit 1), and the rest is still listed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from typer.testing import CliRunner

from local_aws import REGION
from local_aws.clients import ClientProxy
from sqs_redriver.console import fleet as fleet_reads
from sqs_redriver.console.advice import NO_REGION
from sqs_redriver.console.cli import app
from sqs_redriver.console.cli.app import out
from sqs_redriver.console.tool import Connection, Deployment
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION

OTHER_REGION = "eu-west-1"
ACCOUNT = "123456789012"
RETENTION = 345_600  # moto's default, four days
TABLE_WIDTH = 220  # the whole table on one line per row


def create_queue(sqs: Any, name: str, dlq: str | None = None, region: str = REGION) -> str:
    attributes = {}
    if dlq:
        target = f"arn:aws:sqs:{region}:{ACCOUNT}:{dlq}"
        attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": target, "maxReceiveCount": 5})
    return str(sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"])


def publish_oldest_age(name: str, seconds: int) -> None:
    """What SQS publishes for a queue every minute."""
    boto3.client("cloudwatch").put_metric_data(
        Namespace="AWS/SQS",
        MetricData=[
            {
                "MetricName": "ApproximateAgeOfOldestMessage",
                "Dimensions": [{"Name": "QueueName", "Value": name}],
                "Value": seconds,
                "Unit": "Seconds",
            }
        ],
    )


def deploy_redriver(dlq_url: str) -> None:
    """A stack publishing a re-driver of ``dlq_url``, as the construct's output does."""
    deployment = Deployment("App/Orders/Redriver", dlq_url, ("src",), "lot", "table")
    template = {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"Redriver": {"Value": deployment.to_json(), "Description": OUTPUT_DESCRIPTION}},
    }
    boto3.client("cloudformation").create_stack(StackName="App", TemplateBody=json.dumps(template))


@pytest.fixture
def account() -> Iterator[None]:
    """orders and shipping share orders-dlq (3 messages, a re-driver guards it, named by the legacy
    URL form); payments-dlq (1 message, unguarded); an idle DLQ; a queue with no policy; and, in
    another region, one DLQ."""
    with mock_aws():
        sqs = boto3.client("sqs")
        orders_dlq = create_queue(sqs, "orders-dlq")
        payments_dlq = create_queue(sqs, "payments-dlq")
        create_queue(sqs, "idle-dlq")
        for source, dlq in (
            ("orders", "orders-dlq"),
            ("shipping", "orders-dlq"),
            ("payments", "payments-dlq"),
        ):
            create_queue(sqs, source, dlq)
        create_queue(sqs, "idle", "idle-dlq")
        create_queue(sqs, "broken")
        create_queue(sqs, "plain")
        for n in range(3):
            sqs.send_message(QueueUrl=orders_dlq, MessageBody=f"m{n}")
        sqs.send_message(QueueUrl=payments_dlq, MessageBody="p")
        publish_oldest_age("orders-dlq", RETENTION - 2 * 86_400)
        deploy_redriver(
            orders_dlq.replace(f"https://sqs.{REGION}.amazonaws.com", f"https://{REGION}.queue.amazonaws.com")
        )
        other = boto3.client("sqs", region_name=OTHER_REGION)
        create_queue(other, "eu-dlq", region=OTHER_REGION)
        create_queue(other, "eu-orders", "eu-dlq", region=OTHER_REGION)
        yield


class Doctored(ClientProxy):
    """An SQS client whose GetQueueAttributes refuses some queues and garbles some policies."""

    def __init__(self, client: Any, refused: set[str], policies: dict[str, str]) -> None:
        super().__init__(client)
        self._refused = refused
        self._policies = policies

    def get_queue_attributes(self, *, QueueUrl: str, **kwargs: Any) -> Any:  # noqa: N803 - boto3's name
        name = QueueUrl.rsplit("/", 1)[-1]
        if name in self._refused:
            error = {"Error": {"Code": "AccessDenied", "Message": f"not {name}"}}
            raise ClientError(error, "GetQueueAttributes")  # type: ignore[arg-type]
        response = self._client.get_queue_attributes(QueueUrl=QueueUrl, **kwargs)
        if name in self._policies:
            response["Attributes"]["RedrivePolicy"] = self._policies[name]
        return response


@pytest.fixture
def doctor(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Settings for every SQS client the tool makes: queues refused, policies garbled, regions whose
    ListQueues is refused; and the count of ListQueues calls."""
    plan: dict[str, Any] = {
        "refused": set(),
        "policies": {"broken": "{not json"},
        "regions": set(),
        "lists": 0,
    }
    made = Connection.client

    def client(connection: Any, service: str, **options: Any) -> Any:
        real = made(connection, service, **options)
        if service != "sqs":
            return real
        region = options.get("region")
        real.meta.events.register("before-call.sqs.ListQueues", lambda **_: refuse_listing(plan, region))
        return Doctored(real, plan["refused"], plan["policies"])

    monkeypatch.setattr(Connection, "client", client)
    monkeypatch.setattr(fleet_reads, "LIST_PAGE_SIZE", 3)  # 10 queues: four pages
    return plan


def refuse_listing(plan: dict[str, Any], region: str | None) -> None:
    plan["lists"] += 1
    if region in plan["regions"]:
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "ListQueues")


@pytest.fixture(autouse=True)
def wide_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tool's console as wide as the table, whatever the environment: rich fixes a console's
    width from COLUMNS when it is made (at import), so a COLUMNS set for one invocation changes
    nothing once a process started with another (a full run's workers did: 80 columns)."""
    monkeypatch.setattr(out(), "_width", TABLE_WIDTH)


def fleet(*args: str) -> Any:
    return CliRunner().invoke(app, ["fleet", *args])


@pytest.mark.usefixtures("account")
def test_every_dlq_is_listed_with_depth_age_sources_and_guard_over_every_page(doctor: dict[str, Any]) -> None:
    result = fleet("--json")

    assert result.exit_code == 1  # the broken policy
    found = json.loads(result.stdout)
    rows = {row["name"]: row for row in found["dead_letter_queues"]}
    assert list(rows) == ["orders-dlq", "payments-dlq", "idle-dlq"]  # most messages first
    assert doctor["lists"] == 4  # 10 queues, 3 a page
    orders = rows["orders-dlq"]
    assert (orders["visible"], orders["in_flight"], orders["delayed"]) == (3, 0, 0)
    assert (orders["oldest_age_seconds"], orders["time_to_expiry_seconds"]) == (
        RETENTION - 2 * 86_400,
        2 * 86_400,
    )
    assert [s["name"] for s in orders["sources"]] == ["orders", "shipping"]
    assert orders["guarded_by"] == [{"stack": "App", "name": "App/Orders/Redriver"}]
    assert rows["payments-dlq"]["guarded_by"] == [] and rows["payments-dlq"]["oldest_age_seconds"] is None
    assert found["problems"] == [
        {"region": REGION, "subject": "broken", "problem": "RedrivePolicy is not JSON"}
    ]


@pytest.mark.usefixtures("account", "doctor")
def test_the_table_says_unknown_unguarded_and_each_problem_on_a_line() -> None:
    result = fleet()

    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    orders = next(line for line in lines if "orders-dlq" in line)
    cells = [cell.strip() for cell in orders.split("│")[2:-1]]
    assert cells == ["sqs", "3", "0", "0", "2d0h", "2d0h", "orders, shipping", "App/Orders/Redriver"]
    payments = next(line for line in lines if "payments-dlq" in line)
    assert "unknown" in payments and "unguarded" in payments
    assert f"! {REGION} broken: RedrivePolicy is not JSON" in lines


@pytest.mark.usefixtures("account")
def test_a_refused_queue_is_a_problem_and_the_rest_is_listed(doctor: dict[str, Any]) -> None:
    doctor["refused"].update({"payments-dlq", "shipping"})
    doctor["policies"].clear()

    result = fleet("--json")

    assert result.exit_code == 1
    assert "Traceback" not in result.output
    found = json.loads(result.stdout)
    rows = {row["name"]: row for row in found["dead_letter_queues"]}
    assert rows["payments-dlq"]["visible"] is None and [
        s["name"] for s in rows["payments-dlq"]["sources"]
    ] == ["payments"]
    assert [s["name"] for s in rows["orders-dlq"]["sources"]] == ["orders"]  # shipping's policy is unknown
    assert [(p["subject"], p["problem"].split(":")[0]) for p in found["problems"]] == [
        ("payments-dlq", "GetQueueAttributes failed"),
        ("shipping", "GetQueueAttributes failed"),
    ]


@pytest.mark.usefixtures("account")
def test_two_regions_are_read_and_a_refused_one_is_a_problem_line(doctor: dict[str, Any]) -> None:
    doctor["policies"].clear()

    both = fleet("--region", REGION, "--region", OTHER_REGION, "--json")
    doctor["regions"].add(REGION)
    refused = fleet("--region", REGION, "--region", OTHER_REGION)

    assert both.exit_code == 0
    rows = [(row["region"], row["name"]) for row in json.loads(both.stdout)["dead_letter_queues"]]
    assert rows == [
        (REGION, "orders-dlq"),
        (REGION, "payments-dlq"),
        (OTHER_REGION, "eu-dlq"),
        (REGION, "idle-dlq"),
    ]
    assert refused.exit_code == 1
    assert "eu-dlq" in refused.stdout
    # The re-driver's DLQ is still shown (depth unknown); only the listing's failure is a problem.
    assert [line.split(":")[0] for line in refused.stdout.splitlines() if line.startswith("!")] == [
        f"! {REGION}"
    ]
    assert "ListQueues failed" in refused.stdout


def test_a_region_that_is_not_one_is_a_usage_error() -> None:
    result = fleet("--region", "eu west")

    assert result.exit_code == 2
    assert "is not a region name" in result.stderr


def test_without_any_region_the_fleet_says_to_pass_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))

    result = fleet()

    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"error: {NO_REGION}"]
