"""The audit trail on moto: every action recorded begun and ended, with who, what and how many;
an action that cannot be recorded is not done; `audit` reads the trail back."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest

from local_aws import REGION
from sqs_redriver.core.table import StateTable
from sqs_redriver.protocol.keys import RecordKind
from tests.support.aws import Aws
from tests.support.operator import park, park_groups, tool

GROUP = "redriver-audit"


@pytest.fixture
def logs(aws: Aws) -> Any:
    client = boto3.client("logs", region_name=REGION)
    client.create_log_group(logGroupName=GROUP)
    return client


def audited(aws: Aws, *args: str, input: str | None = None) -> Any:
    return tool(aws, "--audit-log-group", GROUP, *args, input=input)


def events(logs: Any) -> list[dict[str, Any]]:
    found = logs.filter_log_events(logGroupName=GROUP)["events"]
    return [json.loads(event["message"]) for event in found]


def trail(aws: Aws) -> list[dict[str, Any]]:
    result = audited(aws, "audit", "--json")
    assert result.exit_code == 0, result.output
    listed: list[dict[str, Any]] = json.loads(result.stdout)
    return listed


def test_a_pause_is_recorded_begun_and_ended_with_who_and_why(aws: Aws, logs: Any) -> None:
    result = audited(aws, "pause", "--reason", "deploying the fix")
    assert result.exit_code == 0, result.output

    recorded = events(logs)
    assert [e["phase"] for e in recorded] == ["begun", "ended"]
    assert {e["id"] for e in recorded} == {recorded[0]["id"]}
    (action,) = trail(aws)
    assert action["action"] == "pause" and action["outcome"] == "done" and action["count"] == 1
    assert action["details"] == {"reason": "deploying the fix"}
    assert action["who"].startswith("arn:aws:")  # the caller, from STS


def test_a_replay_records_how_many_it_moved(aws: Aws, logs: Any) -> None:
    park_groups(aws)

    result = audited(aws, "replay", "--group", "fp-bad", "--yes")
    assert result.exit_code == 0, result.output

    (action,) = trail(aws)
    assert (action["action"], action["count"], action["outcome"]) == ("replay", 3, "done")
    assert action["details"]["selection"] == "group=fp-bad" and action["details"]["from"] == "parking-lot"


def test_actions_listed_newest_first_and_neither_a_dry_run_nor_an_idle_resume_is_one(
    aws: Aws, logs: Any
) -> None:
    park(aws, "one")
    assert audited(aws, "pause", "--reason", "first").exit_code == 0
    assert audited(aws, "replay", "--all", "--dry-run").exit_code == 0
    assert audited(aws, "resume").exit_code == 0
    assert audited(aws, "resume").exit_code == 0  # nothing to resume: nothing done, nothing recorded

    assert [a["action"] for a in trail(aws)] == ["resume", "pause"]


def test_an_action_that_cannot_be_recorded_is_not_done(aws: Aws) -> None:
    # no log group by that name: the begun event cannot be written
    result = audited(aws, "pause", "--reason", "unrecorded")

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "cannot record pause in the audit log" in result.output
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60)
    assert table.load_pause(RecordKind.PAUSE.key(aws.dlq_url)) is None


def test_a_command_refused_before_it_began_is_not_an_action(aws: Aws, logs: Any) -> None:
    result = audited(aws, "clear-group", "fp-none", "--force")
    assert result.exit_code == 0, result.output  # --force: deletes whatever is there
    failing = audited(aws, "breaker", "open", "--reason", "x", "--source", "https://nowhere")
    assert failing.exit_code == 2  # refused before it began: not an action

    assert [a["action"] for a in trail(aws)] == ["clear-group"]


def test_an_action_begun_and_never_ended_is_shown_unfinished(aws: Aws, logs: Any) -> None:
    now = int(time.time())
    begun = {"id": "a1", "phase": "begun", "action": "purge", "who": "arn:aws:iam::1:user/x", "at": now}
    logs.create_log_stream(logGroupName=GROUP, logStreamName="s")
    now_ms = now * 1000
    logs.put_log_events(
        logGroupName=GROUP,
        logStreamName="s",
        logEvents=[
            {"timestamp": now_ms, "message": json.dumps({**begun, "target": "t", "details": {}})},
            {"timestamp": now_ms, "message": "<script>not an audit event</script>"},
        ],
    )

    result = audited(aws, "audit", "--since", "30d", "--json")

    assert result.exit_code == 0, result.output
    (action,) = json.loads(result.stdout)
    assert (action["action"], action["outcome"], action["count"]) == ("purge", "unfinished", None)
    assert "1 event(s) of the log group are not audit events" in result.stderr


def test_without_a_trail_an_action_warns_and_audit_says_why(aws: Aws) -> None:
    result = tool(aws, "pause", "--reason", "no trail")
    assert result.exit_code == 0 and "the action is not recorded" in result.stderr

    listed = tool(aws, "audit")
    assert listed.exit_code == 2 and "no audit log group" in listed.stderr


def test_a_bad_since_is_a_usage_error(aws: Aws, logs: Any) -> None:
    result = audited(aws, "audit", "--since", "forever")
    assert result.exit_code == 2 and "--since" in result.stderr and "Traceback" not in result.output
