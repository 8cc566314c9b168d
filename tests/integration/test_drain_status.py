"""``sqs-redriver status`` on moto shows a large drain's progress from its record (``DRAIN#<DLQ
URL>``, as a worker writes it): messages left, rate, workers, time to empty; interrupted when no
worker stepped it for a minute; nothing when there is none, or only a corrupt one."""

from __future__ import annotations

import json
import logging

import pytest

from sqs_redriver.console.tool import Tool
from sqs_redriver.core.table import DrainRecord, StateTable
from sqs_redriver.protocol.keys import RecordKind
from tests.support.aws import Aws
from tests.support.operator import tool

AN_HOUR = 3_600
NOW = 1_700_000_000


@pytest.fixture(autouse=True)
def tool_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tool's clock stands at NOW."""
    monkeypatch.setattr(Tool, "now", lambda _tool: NOW)


def save_drain(aws: Aws, *, stepped_ago: int) -> None:
    """A drain of 120,000 messages at 800 a second by 8 workers, started an hour before NOW, last
    stepped ``stepped_ago`` seconds before."""
    record = DrainRecord(
        rate=800,
        phase="steady",
        fell_behind_at=1_000,
        workers=8,
        messages_left=120_000,
        stepped_at=NOW - stepped_ago,
        started_at=NOW - AN_HOUR,
    )
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60)
    assert table.save_drain(RecordKind.DRAIN.key(aws.dlq_url), record, expected_version=0)


def test_status_shows_a_going_drain_s_messages_left_rate_workers_and_time_to_empty(aws: Aws) -> None:
    save_drain(aws, stepped_ago=4)

    as_json, as_text = tool(aws, "status", "--json"), tool(aws, "status")

    assert as_json.exit_code == 0, as_json.output  # a drain is work going on, not a problem
    drain = json.loads(as_json.stdout)["drain"]
    assert (drain["state"], drain["messages_left"], drain["rate"], drain["workers"]) == (
        "going",
        120_000,
        800,
        8,
    )
    assert drain["seconds_to_empty"] == 150 and drain["ended_at"] is None
    assert as_text.exit_code == 0, as_text.output
    lines = " ".join(as_text.stdout.split())
    assert "Large drain" in lines and "state │ going" in lines
    assert (
        "120,000 in the DLQ as of 4s ago" in lines
        and "800 msg/s, all workers together (phase steady)" in lines
    )
    assert "workers wanted │ 8" in lines and "time to empty │ 2m at this rate" in lines


def test_status_says_a_drain_no_worker_stepped_for_a_minute_was_interrupted(aws: Aws) -> None:
    save_drain(aws, stepped_ago=600)

    as_json, as_text = tool(aws, "status", "--json"), tool(aws, "status")

    drain = json.loads(as_json.stdout)["drain"]
    assert (drain["state"], drain["seconds_to_empty"]) == ("interrupted", None)
    assert drain["stepped_seconds_ago"] == 600
    lines = " ".join(as_text.stdout.split())
    assert "interrupted: no worker stepped its pace for 10m" in lines
    assert "time to empty │ - (interrupted)" in lines


def test_status_without_a_drain_says_nothing_of_one(aws: Aws) -> None:
    as_json, as_text = tool(aws, "status", "--json"), tool(aws, "status")

    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["drain"] is None
    assert as_text.exit_code == 0 and "drain" not in as_text.stdout.lower()


def test_a_corrupt_drain_record_is_logged_and_shown_as_no_drain(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    key = RecordKind.DRAIN.key(aws.dlq_url)
    aws.dynamodb.put_item(
        TableName=aws.table_name, Item={"pk": {"S": key}, "rate": {"S": "<script>"}, "phase": {"S": "climb"}}
    )

    with caplog.at_level(logging.ERROR, logger="redriver"):
        as_json = tool(aws, "status", "--json")

    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["drain"] is None
    reported = [vars(r) for r in caplog.records if hasattr(r, "record_key")]
    assert [(fields["record_key"], fields["field"]) for fields in reported] == [(key, "rate")]
