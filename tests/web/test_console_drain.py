"""The console's status page shows a large drain's progress as ``status`` does, what its record
holds escaped, and no drain section when there is no drain."""

from __future__ import annotations

from flask.testing import FlaskClient

from sqs_redriver.console.tool import Tool
from sqs_redriver.core.table import DrainRecord
from sqs_redriver.protocol.keys import RecordKind
from tests.support.aws import Aws
from tests.support.console import console_app, get, signed_in
from tests.support.operator import operator_tool

HOSTILE_PHASE = "<b>x</b>\u202e"  # what the core's parser lets through: any text of up to 16 characters
NOW = 1_700_000_000  # the console's clock: behind AWS's, so kept as it is (Tool.now)


def open_console(aws: Aws) -> tuple[FlaskClient, Tool]:
    """A signed-in client of a console over ``aws`` whose clock stands at NOW."""
    tool = operator_tool(aws, clock=lambda: NOW)
    return signed_in(console_app(tool)), tool


def save_drain(aws: Aws, tool: Tool, *, phase: str = "climb", stepped_ago: int = 4) -> None:
    record = DrainRecord(
        rate=2_000,
        phase=phase,
        fell_behind_at=0,
        workers=12,
        messages_left=900_000,
        stepped_at=NOW - stepped_ago,
        started_at=NOW - 1_200,
    )
    assert tool.table.save_drain(RecordKind.DRAIN.key(aws.dlq_url), record, expected_version=0)


def test_status_shows_a_going_drain_with_its_time_to_empty(aws: Aws) -> None:
    client, tool = open_console(aws)
    save_drain(aws, tool)

    code, page = get(client, "/")

    assert code == 200
    assert "<h2>Large drain</h2>" in page
    assert '<td class="drain-going">going</td>' in page
    assert "<td>900,000 in the DLQ as of 4s ago</td>" in page
    assert "<td>2,000 msg/s, all workers together (phase climb)</td>" in page
    assert "<th>workers wanted</th><td>12</td>" in page
    assert "<th>time to empty</th><td>7m at this rate</td>" in page


def test_status_shows_an_interrupted_drain_so(aws: Aws) -> None:
    client, tool = open_console(aws)
    save_drain(aws, tool, stepped_ago=900)

    _code, page = get(client, "/")

    assert '<td class="drain-interrupted">interrupted: no worker stepped its pace for 15m' in page
    assert "<th>time to empty</th><td>- (interrupted)</td>" in page


def test_what_a_drain_record_says_is_shown_escaped(aws: Aws) -> None:
    client, tool = open_console(aws)
    save_drain(aws, tool, phase=HOSTILE_PHASE)

    _code, page = get(client, "/")

    assert "<b>x" not in page and "\u202e" not in page
    assert "(phase &lt;b&gt;x&lt;/b&gt;\\u202e)" in page


def test_status_without_a_drain_has_no_drain_section(aws: Aws) -> None:
    client, _tool = open_console(aws)

    code, page = get(client, "/")

    assert code == 200 and "Large drain" not in page
