"""The options that name the re-driver and the connection, after the command as before it
(``sqs-redriver status --region x``), on moto: the same answer either way; given after, a value
replaces the one before (a list option's values add up); a mistake in one ends in one line and
exit code 2, never a traceback."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from local_aws import REGION
from sqs_redriver.console.cli import app
from sqs_redriver.console.cli.app import GlobalOptions
from tests.support.aws import Aws
from tests.support.operator import park_groups


def resources(aws: Aws) -> list[str]:
    return [
        "--dlq-url", aws.dlq_url, "--source-url", aws.source_url,
        "--parking-lot-url", aws.parking_lot_url, "--table", aws.table_name,
    ]  # fmt: skip


def sqs_redriver(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def assert_usage_error(result: Any, line: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert line in result.stderr


def test_the_re_driver_named_after_the_command_is_the_one_named_before_it(aws: Aws) -> None:
    park_groups(aws)

    before = sqs_redriver(*resources(aws), "groups", "--json")
    after = sqs_redriver("groups", "--json", *resources(aws), "--region", REGION)
    split = sqs_redriver("--dlq-url", aws.dlq_url, "groups", *resources(aws)[2:], "--json")

    assert before.exit_code == after.exit_code == split.exit_code == 0, after.output
    assert json.loads(after.stdout) == json.loads(before.stdout) == json.loads(split.stdout)
    assert {group["group"] for group in json.loads(after.stdout)} >= {"fp-bad", "unclassified"}


def test_a_value_after_the_command_replaces_the_one_before_it(aws: Aws) -> None:
    bad_after = sqs_redriver("--region", REGION, *resources(aws), "status", "--region", "not a region")
    good_after = sqs_redriver("--region", "not a region", *resources(aws), "rules", "--region", REGION)

    assert_usage_error(bad_after, "error: --region (or AWS_REGION) 'not a region' is not a region name")
    assert good_after.exit_code == 0, good_after.output


def test_a_subcommand_of_breaker_takes_them_after_it(aws: Aws) -> None:
    result = sqs_redriver("breaker", "open", "--reason", "deploying", *resources(aws))

    assert result.exit_code == 0, result.output
    assert f"{aws.source_url}: CLOSED -> OPEN" in " ".join(result.stdout.split())


def test_a_stack_after_the_command_is_looked_up(aws: Aws) -> None:
    result = sqs_redriver("show", "some-id", "--stack", "Nowhere")

    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: cannot read stack Nowhere")


def test_an_option_after_the_command_without_its_value_is_one_usage_line() -> None:
    missing = sqs_redriver("status", "--region")
    unknown = sqs_redriver("status", "--regoin", "eu-west-1")

    assert_usage_error(missing, "Option '--region' requires an argument")
    assert_usage_error(unknown, "No such option: --regoin")


def test_a_list_option_given_before_and_after_adds_up() -> None:
    options = GlobalOptions({"source_url": ["a"], "region": "eu-west-1"})

    options.given_after("source_url", ["b", "c"])
    options.given_after("region", "us-east-1")

    assert options.values == {"source_url": ["a", "b", "c"], "region": "us-east-1"}
