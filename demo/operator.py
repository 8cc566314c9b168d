"""The operator's tool, run as an on-call engineer runs it: ``sqs-redriver`` in a process of its own,
against the demo's endpoint, with the re-driver named by its stack."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

TOOL = "sqs-redriver"
TOOL_TIMEOUT_SECONDS = 120


@dataclass
class ToolRun:
    """One command: as typed, how it exited, and what it printed (a person's view, or the data)."""

    command: str
    exit_code: int
    ok: bool  # exited as expected
    output: str = ""  # what a person sees (without --json)
    data: Any = None  # the --json output, parsed
    errors: str = ""  # standard error, kept when the command did not exit as expected


class OperatorTool:
    """``sqs-redriver --endpoint-url ENDPOINT --region REGION --stack STACK ...``.

    ``json`` is how the demo reports (the data, or the tables a person reads); ``color`` and
    ``columns`` shape those tables for the terminal the demo prints them on later."""

    def __init__(
        self,
        endpoint: str,
        region: str,
        stack: str,
        *,
        json: bool,
        color: bool = False,
        columns: int | None = None,
    ) -> None:
        self.json = json
        self._options = ["--endpoint-url", endpoint, "--region", region, "--stack", stack]
        self._environment = dict(os.environ)
        # For the tables only: JSON printed in colour would not parse.
        self._tables: dict[str, str] = {"FORCE_COLOR": "1", "TTY_INTERACTIVE": "0"} if color else {}
        if columns:
            self._tables["COLUMNS"] = str(columns)

    def run(self, *args: str, ok_codes: tuple[int, ...] = (0,)) -> ToolRun:
        """Run one command; with ``--json`` among ``args``, parse what it printed."""
        arguments = [*self._options, *args]
        json_wanted = "--json" in args
        completed = subprocess.run(
            [sys.executable, "-m", "sqs_redriver.console.cli", *arguments],
            env=self._environment if json_wanted else {**self._environment, **self._tables},
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_SECONDS,
            check=False,
        )
        run = ToolRun(
            command=shlex.join([TOOL, *arguments]),
            exit_code=completed.returncode,
            ok=completed.returncode in ok_codes,
            output=completed.stdout,
        )
        if not run.ok:
            run.errors = completed.stderr.strip()
        elif json_wanted:
            try:
                run.data, run.output = json.loads(completed.stdout), ""
            except json.JSONDecodeError as exc:
                run.ok, run.errors = False, f"--json printed no JSON: {exc}"
        return run
