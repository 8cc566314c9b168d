"""The web console in a real browser (Debian's Chromium, driven by Playwright): every page loads
against moto, a replay is previewed and confirmed by clicking, and hostile text in a message is
shown as text and runs no script. One browser for the module; a console server per test.

Two checks of hostile text, for two defences: the text shown literally fails when a template stops
escaping; ``window.pwned`` still unset fails only when the Content-Security-Policy fails too (both
were seen failing with an unescaped template, and without the policy)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from local_aws import REGION
from sqs_redriver.console.depth_history import DEPTH_METRIC
from sqs_redriver.console.web.server import ConsoleServer
from tests.support.aws import Aws
from tests.support.console import console_tool
from tests.support.operator import park, park_groups

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
HOSTILE = [
    "<script>window.pwned=1</script>",
    '<img src=x onerror="window.pwned=1">',
    '"><svg onload="window.pwned=1">',
]
# SCREENSHOTS=docs makes the screenshots of docs/ (status, groups, a message) while the tests run.
SCREENSHOTS = os.environ.get("SCREENSHOTS")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"no browser at {CHROMIUM}: install Debian's (apt-get install -y chromium chromium-driver; "
            ".ci/run does it when it is missing)"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield launched
        launched.close()


@pytest.fixture
def console(aws: Aws) -> Iterator[str]:
    """The console's URL (token included), served on 127.0.0.1 over ``aws``'s resources."""
    server = ConsoleServer.bind(console_tool(aws))
    server.serve_in_thread()
    yield server.url
    server.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


def snap(page: Page, name: str) -> None:
    if SCREENSHOTS:
        page.screenshot(path=str(Path(SCREENSHOTS) / f"console-{name}.png"), full_page=True)


def published_depths() -> None:
    """Depths of the DLQ and the parking lot over the last hours, as SQS would publish them."""
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    now = int(time.time())
    for minutes_ago in range(175, 0, -5):
        at = datetime.fromtimestamp(now - minutes_ago * 60, UTC).replace(tzinfo=None)  # naive: moto
        for queue, depth in (("orders-dlq", max(0, 40 - abs(minutes_ago - 90))), ("orders-parking-lot", 4)):
            cloudwatch.put_metric_data(
                Namespace="AWS/SQS",
                MetricData=[
                    {
                        "MetricName": DEPTH_METRIC,
                        "Dimensions": [{"Name": "QueueName", "Value": queue}],
                        "Timestamp": at,
                        "Value": float(depth),
                    }
                ],
            )


def test_every_page_loads_and_a_replay_is_previewed_then_confirmed(
    aws: Aws, console: str, page: Page
) -> None:
    park_groups(aws)
    published_depths()

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
    page.get_by_role("link", name="Audit").click()
    expect(page.get_by_role("cell", name="replay", exact=True)).to_be_visible()
    page.get_by_role("link", name="Groups").click()
    expect(page.get_by_role("heading", name="2 message(s) in 2 group(s)")).to_be_visible()


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
