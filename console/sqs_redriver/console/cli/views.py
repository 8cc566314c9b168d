"""The commands that look: ``status`` (``--watch``), ``groups`` and ``show``, none of which consumes
a message; ``audit``, the operator actions the trail recorded, newest first; and ``fleet``, every
dead-letter queue of the account, how full and how old, what dead-letters into it, and who guards
it (account-wide: it needs no ``--stack``, and reads every queue, function, rule, subscription and
stack of the regions asked). Each imports what it uses when it runs (render.py draws)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from sqs_redriver.console.cli.app import JsonOption, QueueChoice, app, err, out, tool_of
from sqs_redriver.console.errors import UsageError

if TYPE_CHECKING:
    from rich.console import RenderableType

    from sqs_redriver.console.inventory import Inspected, Where
    from sqs_redriver.console.tool import Tool


@app.command()
def status(
    ctx: typer.Context,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Refresh until Ctrl-C.")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between refreshes with --watch.", min=1)] = 5,
    json: JsonOption = False,
) -> None:
    """Breakers, pause, queue depths, the DLQ's time to expiry and the last runs."""
    if watch and json:
        raise UsageError("--watch redraws a view for a person: drop --json (or --watch)")
    from sqs_redriver.console import outcomes
    from sqs_redriver.console.cli import render

    tool = tool_of(ctx)
    if watch:
        _watch(lambda: render.status_view(outcomes.status_with_latest_replay(tool)), interval)
        return
    current = outcomes.status_with_latest_replay(tool)
    if json:
        render.print_json(out(), current.to_dict())
    else:
        out().print(render.status_view(current))
    if current.problems:
        raise typer.Exit(1)


def _watch(view: Callable[[], RenderableType], interval: float) -> None:
    from rich.live import Live

    try:
        with Live(view(), console=out(), auto_refresh=False, screen=False) as live:
            while True:
                time.sleep(interval)
                live.update(view(), refresh=True)
    except KeyboardInterrupt:
        return


@app.command()
def groups(
    ctx: typer.Context,
    queue: Annotated[QueueChoice, typer.Option(help="Which queue to read.")] = QueueChoice.BOTH,
    json: JsonOption = False,
) -> None:
    """What sits in the DLQ and the parking lot, grouped by error fingerprint or park reason.

    Reads every message and gives each back at once: nothing is consumed."""
    from sqs_redriver.console.cli import render
    from sqs_redriver.console.inventory import Where, group

    tool = tool_of(ctx)
    wheres = [Where.DLQ, Where.PARKING_LOT] if queue is QueueChoice.BOTH else [Where(queue.value)]
    items = [item for where in wheres for item in _read_saying_gaps(tool, where)]
    found = group(items)
    if json:
        render.print_json(out(), [g.to_dict() for g in found])
    else:
        out().print(
            render.groups_table(found, tool.now(), title=f"{len(items)} message(s) in {len(found)} group(s)")
        )


def _read_saying_gaps(tool: Tool, where: Where) -> list[Inspected]:
    """Every message of a queue, given back at once; what the scan could not read is said on stderr."""
    from sqs_redriver.console.tool import read_all

    read = read_all(tool, where)
    if read.gaps:
        err().print(read.gaps, markup=False)
    return read.items


@app.command()
def show(
    ctx: typer.Context,
    message_id: Annotated[
        str,
        typer.Argument(metavar="ID", help="A MessageId (or its first 8+ characters) or re-drive identity."),
    ],
    json: JsonOption = False,
) -> None:
    """One message: body, attributes, mark and history, failure, parking reason."""
    from sqs_redriver.console.cli import render
    from sqs_redriver.console.tool import find_message

    tool = tool_of(ctx)
    found = find_message(tool, message_id)
    recorded = tool.table.load_marks([found.counted_under]).get(found.counted_under)
    if json:
        data = render.message_dict(found)
        data["table_record"] = None if recorded is None else {"count": recorded.count}
        render.print_json(out(), data)
    else:
        out().print(render.message_view(found, tool.now()))
        if recorded is not None and found.mark is None:
            out().print(f"re-drive count (state table, the message has no room for a mark): {recorded.count}")


@app.command()
def audit(
    ctx: typer.Context,
    since: Annotated[str, typer.Option(help="How far back (30m, 12h, 7d).")] = "7d",
    limit: Annotated[int, typer.Option(help="At most this many actions.", min=1)] = 50,
    json: JsonOption = False,
) -> None:
    """Who did what to this re-driver, when, and how many: pauses, breakers, group records,
    replays, purges and edits, from the deployment's audit log group."""
    from sqs_redriver.console.cli import render
    from sqs_redriver.console.inventory import parse_duration

    try:
        window = parse_duration(since)
    except ValueError as exc:
        raise UsageError(f"--since: {exc}") from exc
    tool = tool_of(ctx)
    if tool.audit_log is None:
        raise UsageError(
            "this re-driver has no audit log group (a construct older than the audit trail): deploy "
            "a newer one, or name the group with --audit-log-group"
        )
    now = tool.now()
    actions, unreadable = tool.audit_log.read(max(0, now - window), now + 60, limit)
    if unreadable:
        err().print(f"warning: {unreadable} event(s) of the log group are not audit events (skipped)")
    if json:
        render.print_json(out(), [action.to_dict() for action in actions])
    else:
        out().print(render.audit_table(actions, now, since))


@app.command()
def fleet(
    ctx: typer.Context,
    region: Annotated[
        list[str] | None,
        typer.Option(
            "--region", help="A region to read; repeat for more (default: the connection's region)."
        ),
    ] = None,
    json: JsonOption = False,
) -> None:
    """Every queue of the account that something dead-letters into (a queue's redrive policy, a
    Lambda function's on-failure destination or DLQ, an EventBridge rule target's DLQ, an SNS
    subscription's redrive policy): depth, oldest message, time until SQS deletes it, its sources,
    and the re-driver guarding it (or "unguarded"); then the dead-letter destinations that are not
    queues, which this tool cannot re-drive.

    A queue, function, rule, subscription, stack, service or region that cannot be read is listed as
    a problem (exit 1); the rest is shown."""
    from sqs_redriver.console.cli import render
    from sqs_redriver.console.fleet import read_connection_fleet, regions_to_read

    tool = tool_of(ctx)
    regions = regions_to_read(region or [], tool.connection.region_name)
    with err().status(
        f"reading the queues, functions, rules, subscriptions and stacks of {', '.join(regions)}"
    ):
        found = read_connection_fleet(tool.connection, regions, now=tool.now())
    if json:
        render.print_json(out(), found.to_dict())
    else:
        out().print(render.fleet_view(found))
    if found.problems:
        raise typer.Exit(1)
