"""The operator's tool at the edges: hostile text and names that do not exist, each ending in one
line and an exit code (setups that do not work: test_operator_setup.py), never a raw escape."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from local_aws.queues import queue_counts
from sqs_redriver.console.cli import app
from sqs_redriver.console.inventory import GroupIndex
from sqs_redriver.core.table import GroupAction, StateTable
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.mark import Mark
from tests.support.aws import Aws
from tests.support.operator import FIRST_FAILED, park, park_groups, tool

HOSTILE_MESSAGE = (
    "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 \x1b[2J\r\u202eevil [link=https://x/]y[/link]"
)
# The mark parser refuses a fingerprint outside its pattern, so markup and escapes travel where a
# consumer may write any text: the error's class and message.
HOSTILE_FINGERPRINT = "fp-hostile"
HOSTILE_CLASS = "Err\x9b[/oops]\x1b[31m"


def park_hostile(aws: Aws) -> None:
    """A parked message whose consumer failure says anything a hostile consumer could say."""
    failure = Failure(
        FailureKind.TERMINAL, HOSTILE_CLASS, HOSTILE_MESSAGE, HOSTILE_FINGERPRINT, FIRST_FAILED, 1, "a"
    )
    mark = Mark("id-hostile", 5, FIRST_FAILED, failure=failure)
    aws.sqs.send_message(
        QueueUrl=aws.parking_lot_url,
        MessageBody=HOSTILE_MESSAGE,
        MessageAttributes={
            MARK_ATTRIBUTE: string_attribute(mark.to_json()),
            "tenant": string_attribute("[bold]t[/bold]\u202e"),
        },
    )


def assert_inert(output: str) -> None:
    assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output and "\x9b" not in output
    assert "\r" not in output


def test_groups_and_show_print_hostile_text_inertly(aws: Aws) -> None:
    park_hostile(aws)

    table = tool(aws, "groups")
    shown = tool(aws, "show", "id-hostile")

    assert table.exit_code == 0 and shown.exit_code == 0, table.output + shown.output
    for output in (table.stdout, shown.stdout):
        assert_inert(output)
        assert HOSTILE_FINGERPRINT in output  # the table wraps the label in a narrow column
    assert "Err\\x9b[/oops]\\x1b[31m" in shown.stdout
    assert "\\x1b]8;;https://evil.example/\\x07click" in shown.stdout
    assert "[link=https://x/]y[/link]" in shown.stdout and "[bold]t[/bold]\\u202e" in shown.stdout


def test_json_keeps_hostile_text_faithfully(aws: Aws) -> None:
    park_hostile(aws)

    result = tool(aws, "groups", "--json")

    assert result.exit_code == 0, result.output
    assert_inert(result.stdout)
    (found,) = json.loads(result.stdout)
    assert found["group"] == HOSTILE_FINGERPRINT and found["label"] == f"{HOSTILE_CLASS}: {HOSTILE_MESSAGE}"


def test_a_replay_or_purge_of_an_unknown_group_exits_1_naming_the_groups_there_are(aws: Aws) -> None:
    park_groups(aws)

    replayed = tool(aws, "replay", "--group", "nosuchgroup", "--yes")
    dry_run = tool(aws, "replay", "--group", "fp-bad", "--group", "nosuchgroup", "--dry-run", "--json")
    purged = tool(aws, "purge", "--group", "nosuchgroup", "--yes")

    for result in (replayed, dry_run, purged):
        assert result.exit_code == 1
        assert (
            "no group nosuchgroup in the parking-lot; its groups: fp-bad, cause:over_limit" in result.stderr
        )
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 4  # nothing moved
    assert queue_counts(aws.sqs, aws.source_url).total == 0


def test_a_replay_of_an_unknown_id_exits_1_naming_the_messages_there_are(aws: Aws) -> None:
    park(aws, "poison")

    result = tool(aws, "replay", "--id", "no-such-id", "--yes")

    assert result.exit_code == 1
    assert "no message no-such-id in the parking-lot; it holds " in result.stderr
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == 1


def test_show_of_an_unknown_id_names_the_messages_there_are(aws: Aws) -> None:
    park(aws, "poison")
    message_id = aws.sqs.receive_message(QueueUrl=aws.parking_lot_url, VisibilityTimeout=0)["Messages"][0][
        "MessageId"
    ]

    result = tool(aws, "show", "no-such-id")

    assert result.exit_code == 1
    assert (
        f"no message no-such-id in the parking lot or the DLQ; they hold {message_id[:13]}" in result.stderr
    )


def test_retry_of_an_unknown_fingerprint_exits_1_and_writes_nothing_unless_forced(aws: Aws) -> None:
    park_groups(aws)
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60)

    refused = tool(aws, "retry-group", "fp-typo", "--reason", "fixed")
    refused_park = tool(aws, "park-group", "fp-typo", "--reason", "bad release")
    nothing_written = table.load_group_marks(["fp-typo"])
    forced = tool(aws, "park-group", "fp-next", "--reason", "release 1.3 is bad", "--force")

    for result in (refused, refused_park):
        assert result.exit_code == 1
        assert "no message in the DLQ or the parking lot has fingerprint fp-typo" in result.stderr
        assert (
            "Fingerprints there: fp-bad; with a record: none" in result.stderr and "--force" in result.stderr
        )
    assert nothing_written == {}
    assert forced.exit_code == 0, forced.output
    assert table.load_group_marks(["fp-next"])["fp-next"].action is GroupAction.PARK


def test_clear_of_a_fingerprint_without_a_record_exits_1_naming_the_records(aws: Aws) -> None:
    park(aws, "bad", fingerprint="fp-1")
    tool(aws, "retry-group", "fp-1", "--reason", "fixed")

    refused = tool(aws, "clear-group", "fp-typo")
    cleared = tool(aws, "clear-group", "fp-1")

    assert (
        refused.exit_code == 1
        and "group fp-typo has no retry or park record; records: fp-1" in refused.stderr
    )
    assert cleared.exit_code == 0, cleared.output
    assert GroupIndex(aws.table_name, aws.dynamodb).load() == []


def test_rules_lists_the_operators_records_with_who_when_and_why(aws: Aws) -> None:
    park(aws, "bad", fingerprint="fp-1")
    tool(aws, "retry-group", "fp-1", "--reason", "fixed in [1.2.3]")
    tool(aws, "park-group", "fp-2", "--reason", "bad release", "--force")

    listed = tool(aws, "rules", "--json")
    table = tool(aws, "rules")
    missing = tool(aws, "rules", "fp-1", "fp-none")

    assert listed.exit_code == 0, listed.output
    records = {record["fingerprint"]: record for record in json.loads(listed.stdout)}
    assert {fp: (r["action"], r["reason"]) for fp, r in records.items()} == {
        "fp-1": ("retry", "fixed in [1.2.3]"),
        "fp-2": ("park", "bad release"),
    }
    assert all(r["by"] and r["at"] for r in records.values())
    assert table.exit_code == 0 and "2 retry or park record(s)" in table.stdout
    assert "fp-1" in table.stdout and "retry" in table.stdout and "fixed in [1" in table.stdout
    assert missing.exit_code == 1 and "no retry or park record for fp-none" in missing.stderr
    assert "fp-1" in missing.stdout


def test_rules_reads_a_record_written_by_hand_when_named(aws: Aws) -> None:
    aws.dynamodb.put_item(TableName=aws.table_name, Item={"pk": {"S": "RETRY#fp-hand"}})

    unnamed = tool(aws, "rules", "--json")
    named = tool(aws, "rules", "fp-hand", "--json")

    assert json.loads(unnamed.stdout) == []
    assert [r["fingerprint"] for r in json.loads(named.stdout)] == ["fp-hand"]


# What each command with a choice option needs besides it (a new one must be added here).
CHOICE_RUNS = {"groups": (), "replay": ("--all", "--dry-run"), "edit": ("id-poison", "--yes")}


CHOICES_IN_HELP = re.compile(r"(--[a-z-]+)\s+(?:-[a-z]\s+)?<([a-z0-9-]+(?:\|[a-z0-9-]+)+)>")


def offered_choices() -> Iterator[tuple[str, str, str]]:
    """Every (command, option, choice) a command's --help offers, read from the help as printed."""
    commands: Any = typer.main.get_command(app)
    for name in commands.commands:
        shown = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "200"}).stdout
        for option, choices in CHOICES_IN_HELP.findall(shown):
            for choice in choices.split("|"):
                yield name, option, choice


def test_the_choices_offered_are_those_of_groups_replay_and_edit() -> None:
    assert sorted({(command, option) for command, option, _ in offered_choices()}) == [
        ("edit", "--from"),
        ("groups", "--queue"),
        ("replay", "--from"),
    ]
    assert [choice for command, _, choice in offered_choices() if command == "replay"] == [
        "parking-lot",
        "dlq",
    ]


@pytest.mark.parametrize(("command", "option", "choice"), list(offered_choices()))
def test_every_choice_a_commands_help_offers_is_one_it_accepts(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, command: str, option: str, choice: str
) -> None:
    park(aws, "poison")
    monkeypatch.setenv("EDITOR", "true")  # edit: the document comes back unchanged, nothing is sent

    result = tool(aws, command, *CHOICE_RUNS[command], option, choice)

    assert result.exit_code in (0, 1), result.output  # 1: not found there; never 2, refused
    assert "Invalid value" not in result.output and "takes" not in result.stderr


def test_replay_refuses_from_both_as_its_help_says(aws: Aws) -> None:
    result = tool(aws, "replay", "--from", "both", "--all")

    assert result.exit_code == 2
    said = " ".join(result.stderr.replace("│", " ").split())  # rich's box, wrapped
    assert "Invalid value for '--from'" in said and "'both' is not one of 'parking-lot', 'dlq'." in said
