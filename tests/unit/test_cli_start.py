"""``sqs-redriver`` starts at once: ``--version`` and ``--help`` (the tool's and a command's) import
typer and the tool's command modules, never boto3, botocore, Powertools, Flask or rich (typer's rich
help imports rich whole). Read from ``python -X importtime`` in a fresh interpreter, which lists
every module imported: deterministic, nothing timed (the times are in BENCHMARKS.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer.main

from sqs_redriver.console.cli import app, moves
from sqs_redriver.console.replay import DEFAULT_RATE

TIMEOUT_SECONDS = 120  # a guard against a hang, not a synchronisation
NEVER_AT_START = ("boto3", "botocore", "aws_lambda_powertools", "flask", "werkzeug", "rich")
RUN_THE_CONSOLE_SCRIPT = (
    "import sys; from sqs_redriver.console.cli import main; sys.argv[0] = 'sqs-redriver'; main()"
)


def imported_by(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The console script's entry point run with ``args``, and the top-level packages it imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", RUN_THE_CONSOLE_SCRIPT, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
        env={**os.environ, "COLUMNS": "100"},
    )
    modules = {
        line.rsplit("|", 1)[-1].strip().split(".", 1)[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return done, modules


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("--help",),
        (),
        ("status", "--help"),
        ("replay", "--help"),
        ("breaker", "open", "--help"),
    ],
    ids=["version", "help", "no-command", "status-help", "replay-help", "breaker-open-help"],
)
def test_version_and_help_import_none_of_aws_powertools_flask_or_rich(args: tuple[str, ...]) -> None:
    done, modules = imported_by(*args)

    assert done.returncode in (0, 2), done.stderr[-2000:]  # no command: the help, exit 2 (click's)
    assert "typer" in modules and "sqs_redriver" in modules  # the listing is read right
    assert "Usage: sqs-redriver" in done.stdout + done.stderr or done.stdout.startswith("sqs-redriver ")
    assert sorted(modules.intersection(NEVER_AT_START)) == []


def test_a_command_imports_what_it_uses() -> None:
    done, modules = imported_by("--dlq-url", "x", "status")

    assert done.returncode == 2, done.stderr[-2000:]  # the resources are not all named
    assert {"boto3", "botocore", "rich"} <= modules


def test_help_says_the_replay_rate_the_library_uses() -> None:
    assert moves.RATE_SHOWN == f"{DEFAULT_RATE:g}/s"


def test_every_command_takes_every_global_option_after_it_but_one_it_names_itself() -> None:
    tool = typer.main.get_command(app)
    global_options = {opt for param in tool.params if not param.is_eager for opt in param.opts} - {"--help"}
    commands = {name: tool.commands[name] for name in tool.commands if name != "breaker"}
    breaker = tool.commands["breaker"]
    commands |= {f"breaker {name}": command for name, command in breaker.commands.items()}  # type: ignore[attr-defined]

    for name, command in commands.items():
        hidden = {opt for param in command.params if getattr(param, "hidden", False) for opt in param.opts}
        own = {opt for param in command.params if not getattr(param, "hidden", False) for opt in param.opts}
        assert hidden == global_options - own, name
    assert "--region" in {opt for param in tool.commands["fleet"].params for opt in param.opts}
