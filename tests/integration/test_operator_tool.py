"""The operator's command-line tool on moto: what it shows, what it moves, what it records."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from local_aws.queues import drain, queue_counts
from sqs_redriver.console.cli import app
from sqs_redriver.core.breaker import SILENT_PROBES_LIMIT, Breaker, Evidence, State
from sqs_redriver.core.table import GroupAction, StateTable
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.keys import RecordKind
from tests.support.aws import Aws, create_aws
from tests.support.operator import FIRST_FAILED, park, park_groups, tool


def marks(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        m["Body"]: json.loads(m["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
        for m in messages
        if MARK_ATTRIBUTE in m.get("MessageAttributes", {})
    }


def test_groups_reads_both_queues_grouped_and_consumes_nothing(aws: Aws) -> None:
    park_groups(aws)

    result = tool(aws, "groups", "--json")

    assert result.exit_code == 0, result.output
    found = {(g["queue"], g["group"]): g for g in json.loads(result.stdout)}
    assert found[("parking-lot", "fp-bad")]["count"] == 3
    assert found[("parking-lot", "fp-bad")]["label"] == "orders.InvalidOrder: no items"
    assert found[("parking-lot", "cause:over_limit")]["count"] == 1
    assert found[("dlq", "unclassified")]["count"] == 1
    # Everything was given back at once: visible again, nothing in flight.
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 4
    assert queue_counts(aws.sqs, aws.dlq_url).visible == 1


def test_show_prints_one_message_with_its_mark_and_reason(aws: Aws) -> None:
    park(aws, "poison", count=5)
    message_id = aws.sqs.receive_message(QueueUrl=aws.parking_lot_url, VisibilityTimeout=0)["Messages"][0][
        "MessageId"
    ]

    result = tool(aws, "show", message_id, "--json")
    by_identity = tool(aws, "show", "id-poison")
    by_prefix = tool(aws, "show", message_id[:8], "--json")
    missing = tool(aws, "show", "no-such-message")

    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert (shown["body"], shown["mark"]["n"], shown["parked"]["cause"]) == ("poison", 5, "over_limit")
    assert by_identity.exit_code == 0 and "poison" in by_identity.output
    assert json.loads(by_prefix.stdout)["message_id"] == message_id  # as the tables show it
    assert missing.exit_code == 1 and "no message no-such-message" in missing.output


def test_a_dry_run_prints_the_histogram_and_moves_nothing(aws: Aws) -> None:
    park_groups(aws)

    result = tool(aws, "replay", "--group", "fp-bad", "--dry-run", "--json")

    assert result.exit_code == 0, result.output
    preview = json.loads(result.stdout)
    assert preview["would_replay"] == 3
    assert [(g["group"], g["count"]) for g in preview["groups"]] == [("fp-bad", 3)]
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 4
    assert queue_counts(aws.sqs, aws.source_url).total == 0


def test_replay_sends_a_group_back_with_its_count_reset_and_the_replay_in_its_history(aws: Aws) -> None:
    park_groups(aws)

    result = tool(aws, "replay", "--group", "fp-bad", "--yes", "--json", "--rate", "1000")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["moved"] == 3
    arrived = marks(drain(aws.sqs, aws.source_url))
    assert sorted(arrived) == ["bad-0", "bad-1", "bad-2"]
    for mark in arrived.values():
        assert mark["n"] == 0 and "parked" not in mark and "err" not in mark
        assert [n for _at, n in mark["rp"]] == [5]
        assert mark["first"] == FIRST_FAILED
    assert [m["Body"] for m in drain(aws.sqs, aws.parking_lot_url)] == ["poison"]


def test_replay_keeps_the_message_attributes_and_honours_the_limit(aws: Aws) -> None:
    for n in range(4):
        park(aws, f"t{n}", fingerprint="fp", tenant="acme")

    result = tool(aws, "replay", "--attribute", "tenant=acme", "--limit", "2", "--yes", "--rate", "1000")

    assert result.exit_code == 0, result.output
    arrived = drain(aws.sqs, aws.source_url)
    assert len(arrived) == 2
    assert all(m["MessageAttributes"]["tenant"]["StringValue"] == "acme" for m in arrived)
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 2


def test_replay_asks_before_moving_and_moves_nothing_on_no(aws: Aws) -> None:
    park_groups(aws)

    result = tool(aws, "replay", "--all", input="n\n")

    assert result.exit_code == 1  # aborted
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 4


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["replay"], "or --all"),
        (["replay", "--older-than", "2 weeks"], "not a duration"),
        (["replay", "--all", "--json"], "needs --yes"),
        (["purge", "--attribute", "tenant"], "name=value"),
    ],
)
def test_a_command_line_that_does_not_say_enough_exits_2_and_says_what_to_do(
    aws: Aws, args: list[str], says: str
) -> None:
    result = tool(aws, *args)

    assert result.exit_code == 2
    assert says in result.output


def test_purge_deletes_only_the_chosen_group(aws: Aws) -> None:
    park_groups(aws)

    result = tool(aws, "purge", "--group", "cause:over_limit", "--yes")

    assert result.exit_code == 0, result.output
    left = sorted(m["Body"] for m in drain(aws.sqs, aws.parking_lot_url))
    assert left == ["bad-0", "bad-1", "bad-2"]


def test_pause_and_resume_write_the_record_every_run_honours(aws: Aws) -> None:
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60)

    paused = tool(aws, "pause", "--reason", "bad deploy")
    recorded = table.load_pause(RecordKind.PAUSE.key(aws.dlq_url))
    resumed = tool(aws, "resume")

    assert paused.exit_code == 0 and resumed.exit_code == 0
    assert recorded is not None and recorded.reason == "bad deploy" and recorded.by
    assert table.load_pause(RecordKind.PAUSE.key(aws.dlq_url)) is None
    assert " ".join(resumed.stdout.split()) == (
        f"resumed (paused by {recorded.by}: bad deploy): the next run re-drives"
    )


def test_resume_says_when_there_was_nothing_to_resume_and_writes_nothing(aws: Aws) -> None:
    resumed = tool(aws, "resume")
    again = tool(aws, "resume")

    for result in (resumed, again):
        assert result.exit_code == 0, result.output  # not paused: what resume is for holds
        assert " ".join(result.stdout.split()) == (
            "nothing to resume: the re-driver is not paused (the runs re-drive as usual)"
        )
        assert "resumed" not in result.output


def test_status_says_paused_and_exits_1_while_paused_and_ok_after_resume(aws: Aws) -> None:
    tool(aws, "pause", "--reason", "bad deploy")

    paused, paused_json = tool(aws, "status"), tool(aws, "status", "--json")
    tool(aws, "resume")
    running, running_json = tool(aws, "status"), tool(aws, "status", "--json")

    assert paused.exit_code == 1 and paused_json.exit_code == 1
    assert "! paused by " in paused.stdout and "bad deploy (no run re-drives until `resume`)" in paused.stdout
    shown = json.loads(paused_json.stdout)
    assert shown["paused"] is True and shown["problems"][0].startswith("paused by ")
    assert running.exit_code == 0 and running_json.exit_code == 0, running.output
    assert "paused" not in running.stdout.lower() and running.stdout.rstrip().endswith("ok")
    assert json.loads(running_json.stdout)["paused"] is False


def test_breaker_open_and_close_by_hand_move_the_stored_breaker(aws: Aws) -> None:
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60)

    opened = tool(aws, "breaker", "open", "--reason", "consumer down")
    state_after_open = table.load_breaker(RecordKind.BREAKER.key(aws.source_url)).state
    closed = tool(aws, "breaker", "close", "--reason", "fixed")

    assert opened.exit_code == 0 and closed.exit_code == 0, opened.output + closed.output
    assert state_after_open is State.OPEN
    assert table.load_breaker(RecordKind.BREAKER.key(aws.source_url)).state is State.CLOSED
    wrong = tool(aws, "breaker", "open", "--reason", "x", "--source", "https://elsewhere")
    assert wrong.exit_code == 2


def test_retry_and_park_group_set_the_one_record_of_a_fingerprint(aws: Aws) -> None:
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60)
    park(aws, "bad", fingerprint="fp-1")

    tool(aws, "retry-group", "fp-1", "--reason", "fixed in 1.2.3")
    after_retry = table.load_group_marks(["fp-1"])["fp-1"].action
    tool(aws, "park-group", "fp-1", "--reason", "bad release")
    after_park = table.load_group_marks(["fp-1"])["fp-1"].action
    tool(aws, "clear-group", "fp-1")

    assert (after_retry, after_park) == (GroupAction.RETRY, GroupAction.PARK)
    assert table.load_group_marks(["fp-1"]) == {}


def test_status_shows_breakers_queues_and_exits_1_when_messages_are_parked(aws: Aws) -> None:
    park_groups(aws)
    tool(aws, "pause", "--reason", "investigating")

    result = tool(aws, "status", "--json")

    assert result.exit_code == 1  # parked messages need a look
    status = json.loads(result.stdout)
    assert status["pause"]["reason"] == "investigating"
    assert status["breakers"][aws.source_url]["state"] == "CLOSED"
    assert status["queues"]["parking_lot"]["visible"] == 4
    assert status["queues"]["dlq"]["visible"] == 1
    assert status["problems"][1:] == ["4 message(s) in the parking lot"]
    assert status["problems"][0].startswith("paused by ") and status["problems"][0].count("investigating")
    human = tool(aws, "status")
    assert "PAUSED" in human.output and "Circuit breakers" in human.output


def test_without_a_stack_or_queues_the_tool_says_how_to_name_the_re_driver(aws: Aws) -> None:
    result = CliRunner().invoke(app, ["status"], env={"SQS_REDRIVER_STACK": ""})

    assert result.exit_code == 2
    assert "--stack" in result.output


def test_status_counts_the_dlq_s_time_to_expiry_from_cloudwatch_and_warns_within_a_day(aws: Aws) -> None:
    retention = int(
        aws.sqs.get_queue_attributes(QueueUrl=aws.dlq_url, AttributeNames=["MessageRetentionPeriod"])[
            "Attributes"
        ]["MessageRetentionPeriod"]
    )
    # What SQS publishes for the DLQ every minute.
    boto3.client("cloudwatch").put_metric_data(
        Namespace="AWS/SQS",
        MetricData=[
            {
                "MetricName": "ApproximateAgeOfOldestMessage",
                "Dimensions": [{"Name": "QueueName", "Value": aws.dlq_url.rsplit("/", 1)[-1]}],
                "Value": retention - 3600,
                "Unit": "Seconds",
            }
        ],
    )

    result = tool(aws, "status", "--json")

    status = json.loads(result.stdout)
    assert status["queues"]["dlq"]["time_to_expiry_seconds"] == 3600
    assert status["problems"] == ["the DLQ's oldest message expires in 3600 s"]
    assert result.exit_code == 1


def test_a_fifo_scan_says_what_it_could_not_read_behind_the_messages_it_holds() -> None:
    with mock_aws():
        aws = create_aws(fifo=True)
        for n in range(15):  # one group: SQS hands out no more of it while the scan holds ten
            aws.sqs.send_message(
                QueueUrl=aws.parking_lot_url,
                MessageBody=f"m{n}",
                MessageGroupId="customer-1",
                MessageDeduplicationId=f"m{n}",
            )

        result = tool(aws, "groups", "--queue", "parking-lot", "--json")

    assert result.exit_code == 0
    assert sum(g["count"] for g in json.loads(result.stdout)) == 10
    assert "about 5 more not read" in result.stderr


def test_park_group_refuses_a_group_that_is_not_a_fingerprint(aws: Aws) -> None:
    result = tool(aws, "park-group", "cause:over_limit", "--reason", "x")

    assert result.exit_code == 2
    assert "not an error fingerprint" in result.output


def test_text_with_brackets_is_recorded_and_echoed_as_written(aws: Aws) -> None:
    result = tool(aws, "pause", "--reason", "see [/runbook/dlq] and [bold]")

    assert result.exit_code == 0, result.output
    assert "see [/runbook/dlq] and [bold]" in result.stdout
    recorded = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60).load_pause(
        RecordKind.PAUSE.key(aws.dlq_url)
    )
    assert recorded is not None and recorded.reason == "see [/runbook/dlq] and [bold]"


def test_a_replay_that_chooses_nothing_still_prints_a_report_for_scripts(aws: Aws) -> None:
    result = tool(aws, "replay", "--all", "--yes", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout)["moved"] == 0


def test_status_says_what_moved_each_breaker_and_when_the_consumer_reports_no_verdicts(aws: Aws) -> None:
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60)
    key = RecordKind.BREAKER.key(aws.source_url)
    silent = replace(
        Breaker().opened(int(time.time()) - 60, Evidence.METRICS), silent_probes=SILENT_PROBES_LIMIT
    )
    assert table.save_breaker(key, silent, expected_version=0)

    status = json.loads(tool(aws, "status", "--json").stdout)

    breaker = status["breakers"][aws.source_url]
    assert (breaker["moved_by"], breaker["silent_probes"]) == ("metrics", SILENT_PROBES_LIMIT)
    assert any("reported no verdict for its last 2 probes" in problem for problem in status["problems"])
    assert "metrics" in tool(aws, "status").output
