"""``sqs-redriver fleet`` on moto, for the dead letters of other services: a Lambda function's DLQ
and on-failure destination, an EventBridge rule target's DLQ and an SNS subscription's DLQ are rows
with their kind, source, depth and guard; a destination that is not a queue is listed as not
re-drivable; a refused service or read is a problem line and the rest is listed; the calls stay
bounded (a page per 50 functions, one read each)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.awslambda.responses import LambdaResponse
from typer.testing import CliRunner

from local_aws import ACCOUNT, REGION
from sqs_redriver.console.cli import app
from sqs_redriver.console.cli.app import out
from sqs_redriver.console.tool import Connection, Deployment
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from sqs_redriver.protocol.sources import DeadLetterSource, SourceKind, TargetKind

TABLE_WIDTH = 240
AWS_FUNCTIONS_PAGE = 50  # ListFunctions gives at most 50 a page, whatever MaxItems asks
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{{}}"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{{}}"


def zipped_handler() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handle(event, context):\n    return event\n")
    return buffer.getvalue()


def create_functions(names: list[str]) -> None:
    role = boto3.client("iam").create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    functions = boto3.client("lambda")
    code = zipped_handler()
    for name in names:
        functions.create_function(
            FunctionName=name,
            Runtime="python3.13",
            Role=role,
            Handler="handler.handle",
            Code={"ZipFile": code},
        )


@pytest.fixture
def function_dlqs(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """ListFunctions as AWS answers it, which moto 5.2.5 does not: at most 50 functions a page
    (moto gives all at once), each with its ``DeadLetterConfig`` (moto does not store it). The
    test fills the DLQs in: function name -> queue ARN."""
    dlqs: dict[str, str] = {}

    def list_functions(response: LambdaResponse) -> str:
        functions = [fn.get_configuration() for fn in response.backend.list_functions()]
        for function in functions:
            if function["FunctionName"] in dlqs:
                function["DeadLetterConfig"] = {"TargetArn": dlqs[function["FunctionName"]]}
        start = int(response.querystring.get("Marker", ["0"])[0])
        size = min(
            int(response.querystring.get("MaxItems", [str(AWS_FUNCTIONS_PAGE)])[0]), AWS_FUNCTIONS_PAGE
        )
        page: dict[str, Any] = {"Functions": functions[start : start + size]}
        if start + size < len(functions):
            page["NextMarker"] = str(start + size)
        return json.dumps(page)

    monkeypatch.setattr(LambdaResponse, "list_functions", list_functions)
    return dlqs


def deploy(stack: str, redrivers: dict[str, tuple[str, list[DeadLetterSource]]]) -> None:
    """A stack publishing re-drivers (name -> its DLQ's URL and the sources it re-drives), as the
    construct's output does."""
    outputs = {}
    for index, (name, (dlq_url, sources)) in enumerate(redrivers.items()):
        document = json.loads(Deployment(name, dlq_url, (), "lot", "table").to_json())
        document["dead_letter_sources"] = [source.to_json() for source in sources]
        outputs[f"Redriver{index}"] = {"Value": json.dumps(document), "Description": OUTPUT_DESCRIPTION}
    template = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}, "Outputs": outputs}
    boto3.client("cloudformation").create_stack(StackName=stack, TemplateBody=json.dumps(template))


@pytest.fixture
def account(function_dlqs: dict[str, str]) -> Iterator[None]:
    """thumbnail's function DLQ (2 messages, guarded by a re-driver that names it); resize's
    on-failure destination (1 message, unguarded); notify's on-failure destination, a topic; the
    rule shipped on the bus orders, whose target t1 has a DLQ guarded by a re-driver that does not
    name it; the topic orders' subscription of the queue audit, with a DLQ, and of ledger, whose
    redrive policy is not JSON."""
    with mock_aws(config={"lambda": {"use_docker": False}}):
        sqs = boto3.client("sqs")
        urls = {
            name: sqs.create_queue(QueueName=name)["QueueUrl"]
            for name in ("thumbnail-dlq", "resize-dlq", "shipped-dlq", "audit-dlq", "audit", "ledger")
        }
        for n in range(2):
            sqs.send_message(QueueUrl=urls["thumbnail-dlq"], MessageBody=f"failed {n}")
        sqs.send_message(QueueUrl=urls["resize-dlq"], MessageBody="failed")
        create_functions(["thumbnail", "resize", "notify"])
        function_dlqs["thumbnail"] = QUEUE_ARN.format("thumbnail-dlq")
        functions = boto3.client("lambda")
        alerts = boto3.client("sns").create_topic(Name="alerts")["TopicArn"]
        for name, destination in (("resize", QUEUE_ARN.format("resize-dlq")), ("notify", alerts)):
            functions.put_function_event_invoke_config(
                FunctionName=name, DestinationConfig={"OnFailure": {"Destination": destination}}
            )
        rule_arn = create_rule_target()
        subscribe_with_redrive_policies()
        thumbnail = function_source("thumbnail")
        deploy(
            "App",
            {
                "App/Thumbnails/Redriver": (urls["thumbnail-dlq"], [thumbnail]),
                "App/Shipped/Redriver": (urls["shipped-dlq"], []),
            },
        )
        assert rule_arn.endswith("rule/orders/shipped")
        yield


def function_source(name: str) -> DeadLetterSource:
    arn = FUNCTION_ARN.format(name)
    return DeadLetterSource(SourceKind.FUNCTION, arn, TargetKind.FUNCTION, arn)


def create_rule_target() -> str:
    events = boto3.client("events")
    events.create_event_bus(Name="orders")
    pattern = json.dumps({"source": ["orders"], "detail-type": ["shipped"]})
    rule = events.put_rule(Name="shipped", EventBusName="orders", EventPattern=pattern)
    events.put_targets(
        Rule="shipped",
        EventBusName="orders",
        Targets=[
            {
                "Id": "t1",
                "Arn": FUNCTION_ARN.format("resize"),
                "DeadLetterConfig": {"Arn": QUEUE_ARN.format("shipped-dlq")},
            }
        ],
    )
    return str(rule["RuleArn"])


def subscribe_with_redrive_policies() -> None:
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="orders")["TopicArn"]
    policy = json.dumps({"deadLetterTargetArn": QUEUE_ARN.format("audit-dlq")})
    for endpoint, redrive in (("audit", policy), ("ledger", "{not json")):
        sns.subscribe(
            TopicArn=topic,
            Protocol="sqs",
            Endpoint=QUEUE_ARN.format(endpoint),
            Attributes={"RedrivePolicy": redrive},
        )


@pytest.fixture
def refused(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The actions (``lambda:ListFunctions``) every client the tool makes is refused."""
    actions: set[str] = set()
    made = Connection.client

    def client(connection: Any, service: str, **options: Any) -> Any:
        real = made(connection, service, **options)
        real.meta.events.register(f"before-call.{real.meta.service_model.service_id.hyphenize()}", refuse)
        return real

    def refuse(model: Any, **_: Any) -> None:
        action = f"{model.service_model.endpoint_prefix}:{model.name}"
        if action in actions:
            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, model.name)

    monkeypatch.setattr(Connection, "client", client)
    return actions


@pytest.fixture(autouse=True)
def wide_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tool's console as wide as the table (test_fleet.py's fixture says why)."""
    monkeypatch.setattr(out(), "_width", TABLE_WIDTH)


def fleet(*args: str) -> Any:
    return CliRunner().invoke(app, ["fleet", *args])


def rows_of(result: Any) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in json.loads(result.stdout)["dead_letter_queues"]}


@pytest.mark.usefixtures("account")
def test_each_kind_of_dlq_is_a_row_with_its_kind_source_depth_and_guard() -> None:
    result = fleet("--json")

    rows = rows_of(result)
    assert list(rows) == ["thumbnail-dlq", "resize-dlq", "audit-dlq", "shipped-dlq"]
    seen = {
        name: (row["kinds"], [s["label"] for s in row["sources"]], row["total"], row["guarded_by"])
        for name, row in rows.items()
    }
    thumbnails = {"stack": "App", "name": "App/Thumbnails/Redriver"}
    shipped = {"stack": "App", "name": "App/Shipped/Redriver"}
    assert seen == {
        "thumbnail-dlq": (["lambda DLQ"], ["thumbnail"], 2, [thumbnails]),
        "resize-dlq": (["lambda destination"], ["resize"], 1, []),
        "audit-dlq": (["sns subscription"], ["orders → audit"], 0, []),
        "shipped-dlq": (["eventbridge target"], ["orders/shipped target t1"], 0, [shipped]),
    }
    assert rows["resize-dlq"]["url"].endswith(f"/{ACCOUNT}/resize-dlq")
    assert rows["resize-dlq"]["sources"][0]["arn"] == FUNCTION_ARN.format("resize")
    assert rows["shipped-dlq"]["sources"][0]["target_arn"] == FUNCTION_ARN.format("resize")


@pytest.mark.usefixtures("account")
def test_a_destination_that_is_not_a_queue_is_listed_as_not_re_drivable() -> None:
    as_json = fleet("--json")
    as_table = fleet()

    others = json.loads(as_json.stdout)["other_destinations"]
    assert [(o["source"]["kind"], o["source"]["name"], o["destination"]) for o in others] == [
        ("lambda destination", "notify", f"arn:aws:sns:{REGION}:{ACCOUNT}:alerts")
    ]
    assert others[0]["note"] == "not an SQS queue: not re-drivable by this tool"
    assert (
        "1 dead-letter destination(s) that are not SQS queues: not re-drivable by this tool"
        in as_table.stdout
    )
    assert "notify" not in " ".join(p["subject"] for p in json.loads(as_json.stdout)["problems"])


@pytest.mark.usefixtures("account")
def test_a_bad_policy_and_a_source_its_re_driver_does_not_name_are_problem_lines() -> None:
    result = fleet("--json")

    assert result.exit_code == 1
    assert json.loads(result.stdout)["problems"] == [
        {
            "region": REGION,
            "subject": "shipped-dlq",
            "problem": "eventbridge target orders/shipped target t1 dead-letters here, but "
            "App/Shipped/Redriver does not re-drive it (not among its dead_letter_sources)",
        },
        {"region": REGION, "subject": "subscription orders → ledger", "problem": "RedrivePolicy is not JSON"},
    ]


@pytest.mark.usefixtures("account")
def test_the_table_says_each_row_s_kind_and_source() -> None:
    result = fleet()

    lines = result.stdout.splitlines()
    cells = {
        name: [cell.strip() for cell in next(line for line in lines if f" {name} " in line).split("│")[2:-1]]
        for name in ("thumbnail-dlq", "shipped-dlq")
    }
    assert cells["thumbnail-dlq"] == [
        *("lambda DLQ", "2", "0", "0", "unknown", "unknown"),
        *("thumbnail", "App/Thumbnails/Redriver"),
    ]
    assert cells["shipped-dlq"] == [
        *("eventbridge target", "0", "0", "0", "-", "-"),
        *("orders/shipped target t1", "App/Shipped/Redriver"),
    ]


@pytest.mark.usefixtures("account")
def test_a_service_that_refuses_its_listing_is_one_problem_and_the_rest_is_listed(refused: set[str]) -> None:
    refused.add("lambda:ListFunctions")

    result = fleet("--json")

    assert result.exit_code == 1
    assert "Traceback" not in result.output
    found = json.loads(result.stdout)
    assert list(rows_of(result)) == ["thumbnail-dlq", "audit-dlq", "shipped-dlq"]  # thumbnail-dlq: guarded
    assert rows_of(result)["thumbnail-dlq"]["sources"] == []
    region_wide = [p["problem"] for p in found["problems"] if not p["subject"]]
    assert len(region_wide) == 1
    assert region_wide[0].startswith("lambda:ListFunctions failed: access denied (ListFunctions)")
    assert region_wide[0].endswith(f"the functions of {REGION} are not all listed")


@pytest.mark.usefixtures("account")
def test_a_read_refused_for_every_function_is_one_problem_line(refused: set[str]) -> None:
    refused.add("lambda:ListFunctionEventInvokeConfigs")

    result = fleet("--json")

    assert result.exit_code == 1
    refusals = [
        p for p in json.loads(result.stdout)["problems"] if "ListFunctionEventInvokeConfigs" in p["problem"]
    ]
    assert len(refusals) == 1
    assert refusals[0]["subject"] == ""
    assert refusals[0]["problem"].startswith("lambda:ListFunctionEventInvokeConfigs failed: access denied")
    assert refusals[0]["problem"].endswith(
        "(3 sources: function notify, function resize, function thumbnail)"
    )
    assert "thumbnail-dlq" in rows_of(result)  # its DLQ is ListFunctions' still


def test_two_hundred_functions_take_a_page_per_fifty_and_one_read_each(function_dlqs: dict[str, str]) -> None:
    with mock_aws(config={"lambda": {"use_docker": False}}):
        names = [f"fn-{n:03d}" for n in range(200)]
        create_functions(names)
        boto3.client("sqs").create_queue(QueueName="shared-dlq")
        function_dlqs.update(dict.fromkeys(names, QUEUE_ARN.format("shared-dlq")))

        result = fleet("--json")

    found = json.loads(result.stdout)
    assert result.exit_code == 0
    assert len(found["dead_letter_queues"][0]["sources"]) == 200
    lambda_calls = {action: n for action, n in found["calls"].items() if action.startswith("lambda:")}
    assert lambda_calls == {"lambda:ListFunctions": 4, "lambda:ListFunctionEventInvokeConfigs": 200}
    assert sum(found["calls"].values()) < 220  # and a handful of listings of the other services
