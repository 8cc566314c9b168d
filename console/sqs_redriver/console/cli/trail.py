"""``audit``: the operator actions the trail recorded, newest first."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from sqs_redriver.console.audit import AuditedAction, Outcome
from sqs_redriver.console.cli import render
from sqs_redriver.console.cli.app import JsonOption, app, err, out
from sqs_redriver.console.cli.inert import inert
from sqs_redriver.console.inventory import parse_duration
from sqs_redriver.console.shown import when
from sqs_redriver.console.tool import Tool, UsageError

OUTCOME_STYLE = {
    Outcome.DONE: "green",
    Outcome.FAILED: "red",
    Outcome.INTERRUPTED: "yellow",
    Outcome.UNFINISHED: "bold red",
}


@app.command()
def audit(
    ctx: typer.Context,
    since: Annotated[str, typer.Option(help="How far back (30m, 12h, 7d).")] = "7d",
    limit: Annotated[int, typer.Option(help="At most this many actions.", min=1)] = 50,
    json: JsonOption = False,
) -> None:
    """Who did what to this re-driver, when, and how many: pauses, breakers, group records,
    replays, purges and edits, from the deployment's audit log group."""
    tool: Tool = ctx.obj
    try:
        window = parse_duration(since)
    except ValueError as exc:
        raise UsageError(f"--since: {exc}") from exc
    if tool.audit_log is None:
        raise UsageError(
            "this re-driver has no audit log group (a construct older than the audit trail): deploy "
            "a newer one, or name the group with --audit-log-group"
        )
    now = tool.now()
    actions, unreadable = tool.audit_log.read(max(0, now - window), now + 60, limit)
    if unreadable:
        err.print(f"warning: {unreadable} event(s) of the log group are not audit events (skipped)")
    if json:
        render.print_json(out, [action.to_dict() for action in actions])
    else:
        out.print(audit_table(actions, now, since))


def audit_table(actions: list[AuditedAction], now: int, since: str) -> Table:
    """One row per action: when, who, what (with its details), how it ended, how many."""
    table = Table(title=f"{len(actions)} operator action(s) in the last {since}")
    table.add_column("when", no_wrap=True)
    table.add_column("who")
    table.add_column("action", no_wrap=True)
    table.add_column("details", min_width=16)
    table.add_column("outcome", no_wrap=True)
    table.add_column("count", justify="right")
    for action in actions:
        details = "; ".join(f"{name}: {value}" for name, value in sorted(action.details.items()))
        outcome = action.outcome.value + (f": {action.error}" if action.error else "")
        table.add_row(
            when(action.at, now),
            inert(action.who),
            inert(action.action),
            inert(details),
            inert(outcome, style=OUTCOME_STYLE[action.outcome]),
            "" if action.count is None else str(action.count),
        )
    return table
