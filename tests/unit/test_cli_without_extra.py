"""The installed ``sqs-redriver`` without its ``[cli]`` extra: one line naming the extra and exit 2,
never a traceback. The console script runs in a subprocess whose interpreter cannot import one
library of the extra (a ``sitecustomize`` blocks it, as if it were not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqs_redriver.console.cli import MISSING_EXTRA

CONSOLE_SCRIPT = Path(sys.executable).parent / "sqs-redriver"
TIMEOUT_SECONDS = 120  # a guard against a hang, not a synchronisation


def run_without(module: str, tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in an interpreter where importing ``module`` fails as if it were missing."""
    (tmp_path / "sitecustomize.py").write_text(f"import sys\nsys.modules[{module!r}] = None\n")
    inherited = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), inherited]))}
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
    )


# jmespath: what boto3 needs, met only once a command imports boto3 (the tool starts without it).
@pytest.mark.parametrize(
    "module", ["typer", "click", "rich", "flask", "boto3", "botocore", "aws_lambda_powertools", "jmespath"]
)
def test_the_console_script_names_its_extra_when_a_library_of_it_is_missing(
    module: str, tmp_path: Path
) -> None:
    result = run_without(module, tmp_path, str(CONSOLE_SCRIPT), "status")

    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.splitlines() == [f"error: {MISSING_EXTRA} (cannot import {module})"]


def test_python_m_says_the_same(tmp_path: Path) -> None:
    result = run_without("typer", tmp_path, sys.executable, "-m", "sqs_redriver.console.cli", "--help")

    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: {MISSING_EXTRA} (cannot import typer)"]


def test_with_its_extra_the_script_runs(tmp_path: Path) -> None:
    result = run_without("nothing_blocked", tmp_path, str(CONSOLE_SCRIPT), "--help")

    assert result.returncode == 0, result.stderr
    assert "See and steer the smart SQS DLQ re-driver" in result.stdout
