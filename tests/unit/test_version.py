"""`sqs-redriver --version`: the installed package's version, which is pyproject.toml's."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from typer.testing import CliRunner

from sqs_redriver.console.cli import app

ROOT = Path(__file__).resolve().parents[2]


def test_version_prints_the_packages_version_and_exits_0_without_a_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    done = CliRunner().invoke(app, ["--version"])

    assert done.exit_code == 0, done.output
    assert done.stdout == f"sqs-redriver {project['version']}\n"
    assert version("sqs-smart-redriver") == project["version"]


def test_version_comes_before_anything_else_the_command_line_asks() -> None:
    done = CliRunner().invoke(app, ["--version", "--stack", "Nowhere", "status"])

    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("sqs-redriver ")
