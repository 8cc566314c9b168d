"""The web console in a real browser (Debian's Chromium, driven by Playwright): every page loads
against moto, a replay and an edit are previewed and confirmed by clicking, and hostile text in a
message is shown as text, in its page and in the edit's form, and runs no script. One browser for
the module; a console server per test.

Two checks of hostile text, for two defences: the text shown literally fails when a template stops
escaping; ``window.pwned`` still unset fails only when the Content-Security-Policy fails too (both
were seen failing with an unescaped template, and without the policy)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from playwright.sync_api import Browser, Page, expect

from local_aws import REGION
from local_aws.queues import drain
from sqs_redriver.console.aws import DEPTH_METRIC
from sqs_redriver.console.tool import Deployment
from sqs_redriver.console.web.server import ConsoleServer
from sqs_redriver.protocol.keys import EDIT_ARCHIVE_PREFIX
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from tests.support.aws import Aws
from tests.support.browser import chromium, fresh_page
from tests.support.console import console_tool
from tests.support.operator import park, park_groups

pytestmark = pytest.mark.browser

OLDEST_AGE_METRIC = "ApproximateAgeOfOldestMessage"
HOSTILE = [
    "<script>window.pwned=1</script>",
    '<img src=x onerror="window.pwned=1">',
    '"><svg onload="window.pwned=1">',
    "</textarea><script>window.pwned=1</script>",
]
ORDER = '{"order": 7, "items": [], "note": "gift wrap"}'
# SCREENSHOTS=docs makes the screenshots of docs/ (status, fleet, groups, a message, an edit's
# preview) while the tests run.
SCREENSHOTS = os.environ.get("SCREENSHOTS")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def console(aws: Aws) -> Iterator[str]:
    """A sign-in URL of a console served on 127.0.0.1 over ``aws``'s resources."""
    server = ConsoleServer.bind(console_tool(aws))
    server.serve_in_thread()
    yield server.url
    server.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with fresh_page(browser) as fresh:
        yield fresh


def snap(page: Page, name: str) -> None:
    if SCREENSHOTS:
        page.screenshot(path=str(Path(SCREENSHOTS) / f"console-{name}.png"), full_page=True)


def published_metrics() -> None:
    """Depths of the DLQ and the parking lot over the last hours, and the age of the DLQ's oldest
    message, as SQS would publish them."""
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    now = int(time.time())
    for minutes_ago in range(175, 0, -5):
        at = datetime.fromtimestamp(now - minutes_ago * 60, UTC).replace(tzinfo=None)  # naive: moto
        metrics = [
            (DEPTH_METRIC, "orders-dlq", max(0, 40 - abs(minutes_ago - 90))),
            (DEPTH_METRIC, "orders-parking-lot", 4),
            (OLDEST_AGE_METRIC, "orders-dlq", 3 * 86_400 + (175 - minutes_ago) * 60),
        ]
        for metric, queue, value in metrics:
            cloudwatch.put_metric_data(
                Namespace="AWS/SQS",
                MetricData=[
                    {
                        "MetricName": metric,
                        "Dimensions": [{"Name": "QueueName", "Value": queue}],
                        "Timestamp": at,
                        "Value": float(value),
                    }
                ],
            )


def guarded_and_unguarded(aws: Aws) -> None:
    """The fleet around the re-driver: a stack publishing it (its DLQ is guarded), and another
    team's queue whose DLQ holds a message nobody guards."""
    deployment = Deployment(
        "Shop/Orders/Redriver", aws.dlq_url, (aws.source_url,), aws.parking_lot_url, aws.table_name
    )
    template = {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"Redriver": {"Value": deployment.to_json(), "Description": OUTPUT_DESCRIPTION}},
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName="Shop", TemplateBody=json.dumps(template)
    )
    dlq = aws.sqs.create_queue(QueueName="payments-dlq")["QueueUrl"]
    arn = aws.sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})
    aws.sqs.create_queue(QueueName="payments", Attributes={"RedrivePolicy": policy})
    aws.sqs.send_message(QueueUrl=dlq, MessageBody="declined")


def test_every_page_loads_and_a_replay_is_previewed_then_confirmed(
    aws: Aws, console: str, page: Page
) -> None:
    park_groups(aws, first_failed=int(time.time()) - 5 * 3600)
    published_metrics()
    guarded_and_unguarded(aws)

    page.goto(console)
    expect(page.get_by_role("heading", name="Circuit breakers")).to_be_visible()
    expect(page.get_by_text("4 message(s) in the parking lot")).to_be_visible()
    expect(page.locator("figure.chart polyline")).to_have_count(2)
    snap(page, "status")
    page.get_by_role("link", name="Groups").click()
    expect(page.get_by_role("heading", name="5 message(s) in 3 group(s)")).to_be_visible()
    snap(page, "groups")
    page.get_by_role("row").filter(has_text="fp-bad").get_by_role("link", name="replay…").click()
    expect(page.get_by_role("heading", name="Replay 3 message(s) from the parking-lot")).to_be_visible()
    page.get_by_role("button", name="Replay 3 message(s)").click()

    expect(page.get_by_text("replayed: 3")).to_be_visible()
    page.get_by_role("link", name="What became of them").click()
    expect(
        page.get_by_role("heading", name="3 not back after 0m (may still be waiting in its source queue)")
    ).to_be_visible()
    page.get_by_role("link", name="Outcomes").click()
    expect(page.get_by_role("cell", name="replay", exact=True)).to_be_visible()
    page.get_by_role("link", name="Fleet").click()
    expect(page.get_by_role("row").filter(has_text="orders-dlq")).to_contain_text("Shop/Orders/Redriver")
    expect(page.get_by_role("row").filter(has_text="payments-dlq")).to_contain_text("unguarded")
    snap(page, "fleet")
    page.get_by_role("link", name="Audit").click()
    expect(page.get_by_role("cell", name="replay", exact=True)).to_be_visible()
    page.get_by_role("link", name="Groups").click()
    expect(page.get_by_role("heading", name="2 message(s) in 2 group(s)")).to_be_visible()


def test_a_message_is_edited_previewed_and_sent_to_its_source(aws: Aws, console: str, page: Page) -> None:
    park(aws, ORDER, identity="order-7")
    page.goto(console)
    page.get_by_role("link", name="Groups").click()
    page.get_by_role("row").filter(has_text="over_limit").get_by_role("link").first.click()
    page.get_by_role("link", name="Edit and retry…").click()
    document = page.get_by_role("textbox")
    edited = json.loads(document.input_value())
    edited["body"]["items"] = [{"sku": "A1", "count": 2}]
    document.fill(json.dumps(edited, indent=2))

    page.get_by_role("button", name="Preview the change").click()
    expect(page.locator("pre.diff .diff-add").filter(has_text='"sku": "A1"')).to_be_visible()
    snap(page, "edit")
    page.get_by_role("button", name="Send the edited message to its source").click()

    expect(page.get_by_text("edited and sent to")).to_be_visible()
    [arrived] = drain(aws.sqs, aws.source_url)
    assert json.loads(arrived["Body"])["items"] == [{"sku": "A1", "count": 2}]
    archived = aws.s3.list_objects_v2(Bucket=aws.archive_bucket, Prefix=f"{EDIT_ARCHIVE_PREFIX}/")["Contents"]
    [original] = [aws.s3.get_object(Bucket=aws.archive_bucket, Key=o["Key"])["Body"].read() for o in archived]
    assert json.loads(original)["body"] == ORDER
    assert drain(aws.sqs, aws.parking_lot_url) == []


def test_hostile_text_in_a_message_is_shown_as_text_and_runs_no_script(
    aws: Aws, console: str, page: Page
) -> None:
    park(aws, "\n".join(HOSTILE), count=3, **{f"note{n}": text for n, text in enumerate(HOSTILE)})
    page.goto(console)
    page.get_by_role("link", name="Groups").click()
    page.get_by_role("row").filter(has_text="over_limit").get_by_role("link").first.click()
    expect(page.get_by_role("heading", name="Body")).to_be_visible()

    page.goto(page.url)  # a fresh page: nothing left over from the pages before

    expect(page.locator("pre.body")).to_have_text("\n".join(HOSTILE))
    for n, text in enumerate(HOSTILE):
        expect(page.get_by_role("row", name=f"note{n}")).to_contain_text(text)
    assert page.evaluate("window.pwned") is None
    snap(page, "message")

    page.get_by_role("link", name="Edit and retry…").click()
    page.goto(page.url)  # the edit's form, fresh

    assert HOSTILE[-1] in page.get_by_role("textbox").input_value()
    assert page.evaluate("window.pwned") is None
