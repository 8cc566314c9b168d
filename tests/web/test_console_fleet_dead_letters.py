"""The web console's fleet page, for the dead letters of other services: a subscription's DLQ is a
row with its kind and source, and a function's on-failure destination that is a topic is listed
as not re-drivable."""

from __future__ import annotations

import html
import io
import json
import re
import zipfile

import boto3

from local_aws import ACCOUNT, REGION
from tests.support.aws import Aws
from tests.support.console import get, open_console

ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.S)


def a_subscription_with_a_dlq(aws: Aws) -> None:
    sns = boto3.client("sns", region_name=REGION)
    topic = sns.create_topic(Name="orders")["TopicArn"]
    aws.sqs.create_queue(QueueName="audit-dlq")
    policy = json.dumps({"deadLetterTargetArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:audit-dlq"})
    endpoint = f"arn:aws:sqs:{REGION}:{ACCOUNT}:audit"
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=endpoint, Attributes={"RedrivePolicy": policy})


def a_function_failing_to_a_topic() -> None:
    topic = boto3.client("sns", region_name=REGION).create_topic(Name="alerts")["TopicArn"]
    role = boto3.client("iam").create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handle(event, context):\n    return event\n")
    functions = boto3.client("lambda", region_name=REGION)
    functions.create_function(
        FunctionName="notify",
        Runtime="python3.13",
        Role=role,
        Handler="handler.handle",
        Code={"ZipFile": buffer.getvalue()},
    )
    functions.put_function_event_invoke_config(
        FunctionName="notify", DestinationConfig={"OnFailure": {"Destination": topic}}
    )


def test_the_fleet_lists_a_subscription_s_dlq_and_a_destination_that_is_not_a_queue(aws: Aws) -> None:
    a_subscription_with_a_dlq(aws)
    a_function_failing_to_a_topic()
    client, _tool = open_console(aws)

    code, page = get(client, "/fleet")

    assert code == 200
    rows = [cells_of(row) for row in ROW.findall(page)]
    assert ["audit-dlq", "sns subscription", "0", "0", "0", "-", "-", "orders → audit", "unguarded"] in rows
    assert [f"arn:aws:sns:{REGION}:{ACCOUNT}:alerts", "lambda destination", "notify"] in rows
    assert "1 dead-letter destination(s) that are not SQS queues: not re-drivable by this tool" in page


def cells_of(row: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in CELL.findall(row)]
