"""The operator's part of act 1: the operator's tool, run as an on-call engineer runs it
(``sqs-redriver`` in a process of its own, against the demo's endpoint, with the re-driver named by
its stack), to look, fix one bug and replay its group."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from consumer.orders import DROP_ZERO_QUANTITY_LINES
from demo.orders import ZERO_QUANTITY

TOOL = "sqs-redriver"
TOOL_TIMEOUT_SECONDS = 120
# The bug the operator fixes: its group is the one whose label shows the consumer's error for it.
FIXED_BUG = ZERO_QUANTITY
FIXED_ERROR = re.compile(r"has quantity 0 and price")


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


@dataclass
class OperatorsPart:
    """What the operator does once act 1 has settled: the re-driver's status, the parking lot's
    groups; then the fix of one bug and the replay of its group."""

    tool: OperatorTool
    on_command: Callable[[str], None]  # a command is about to run (the live view shows it)
    runs: list[ToolRun] = field(default_factory=list)
    fix: str = ""  # the fix, as the consumer's configuration has it
    replayed_group: dict[str, Any] = field(default_factory=dict)  # from ``groups --json``

    def play(self, deploy_fix: Callable[[str, str], None]) -> None:
        """Look, then fix and replay; ``deploy_fix(variable, value)`` puts the fix into the
        consumer's configuration."""
        look = ["--json"] if self.tool.json else []
        self._run("status", *look, ok_codes=(0, 1))  # 1: it found messages in the parking lot
        if not self.tool.json:
            self._run("groups", "--queue", "parking-lot")
        groups = self._run("groups", "--queue", "parking-lot", "--json")
        group = _fixed_group(groups.data or [])
        if group is None:
            return
        self.replayed_group = group
        self.fix = f"{DROP_ZERO_QUANTITY_LINES}=true"
        deploy_fix(DROP_ZERO_QUANTITY_LINES, "true")
        self._run("replay", "--group", str(group["group"]), "--yes", *look)

    def _run(self, *args: str, ok_codes: tuple[int, ...] = (0,)) -> ToolRun:
        self.on_command(" ".join(args))
        run = self.tool.run(*args, ok_codes=ok_codes)
        self.runs.append(run)
        return run


def _fixed_group(groups: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The parking lot's group (from ``groups --json``) of the bug the operator fixes."""
    return next(
        (g for g in groups if g["queue"] == "parking-lot" and FIXED_ERROR.search(str(g["label"]))), None
    )
