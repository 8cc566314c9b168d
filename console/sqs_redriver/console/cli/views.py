"""The commands that look: ``status`` (``--watch``), ``groups`` and ``show``, none of which consumes
a message; ``audit``, the operator actions the trail recorded, newest first; and ``fleet``, every
dead-letter queue of the account, how full and how old, what dead-letters into it, and who guards
it (account-wide: it needs no ``--stack``, and reads every queue, function, rule, subscription and
stack of the regions asked)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Annotated

import typer
from rich.console import Group as Stack
from rich.console import RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sqs_redriver.console import outcomes
from sqs_redriver.console.audit import AuditedAction, Outcome
from sqs_redriver.console.cli import render
from sqs_redriver.console.cli.app import JsonOption, QueueChoice, app, err, out
from sqs_redriver.console.errors import UsageError
from sqs_redriver.console.fleet import (
    Fleet,
    FleetRow,
    Guard,
    OtherDestination,
    read_connection_fleet,
    regions_to_read,
)
from sqs_redriver.console.inventory import Inspected, Where, group, parse_duration
from sqs_redriver.console.safe_text import duration, inert, some, when
from sqs_redriver.console.status import EXPIRY_WARNING_SECONDS
from sqs_redriver.console.tool import Tool, find_message, read_all


@app.command()
def status(
    ctx: typer.Context,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Refresh until Ctrl-C.")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between refreshes with --watch.", min=1)] = 5,
    json: JsonOption = False,
) -> None:
    """Breakers, pause, queue depths, the DLQ's time to expiry and the last runs."""
    tool: Tool = ctx.obj
    if watch and json:
        raise UsageError("--watch redraws a view for a person: drop --json (or --watch)")

    if watch:
        _watch(lambda: render.status_view(outcomes.status_with_latest_replay(tool)), interval)
        return
    current = outcomes.status_with_latest_replay(tool)
    if json:
        render.print_json(out, current.to_dict())
    else:
        out.print(render.status_view(current))
    if current.problems:
        raise typer.Exit(1)


def _watch(view: Callable[[], RenderableType], interval: float) -> None:
    try:
        with Live(view(), console=out, auto_refresh=False, screen=False) as live:
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
    tool: Tool = ctx.obj
    wheres = [Where.DLQ, Where.PARKING_LOT] if queue is QueueChoice.BOTH else [Where(queue.value)]
    items = [item for where in wheres for item in _read_saying_gaps(tool, where)]
    found = group(items)
    if json:
        render.print_json(out, [g.to_dict() for g in found])
    else:
        out.print(
            render.groups_table(found, tool.now(), title=f"{len(items)} message(s) in {len(found)} group(s)")
        )


def _read_saying_gaps(tool: Tool, where: Where) -> list[Inspected]:
    """Every message of a queue, given back at once; what the scan could not read is said on stderr."""
    read = read_all(tool, where)
    if read.gaps:
        err.print(read.gaps, markup=False)
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
    tool: Tool = ctx.obj
    found = find_message(tool, message_id)
    recorded = tool.table.load_marks([found.counted_under]).get(found.counted_under)
    if json:
        data = render.message_dict(found)
        data["table_record"] = None if recorded is None else {"count": recorded.count}
        render.print_json(out, data)
    else:
        out.print(render.message_view(found, tool.now()))
        if recorded is not None and found.mark is None:
            out.print(f"re-drive count (state table, the message has no room for a mark): {recorded.count}")


# ``audit``: the operator actions the trail recorded, newest first.
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


# ``fleet``: every dead-letter queue of the account, how full and how old, and who guards it.
SOURCES_SHOWN = 3


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
    tool: Tool = ctx.obj
    regions = regions_to_read(region or [], tool.connection.region_name)
    with err.status(
        f"reading the queues, functions, rules, subscriptions and stacks of {', '.join(regions)}"
    ):
        found = read_connection_fleet(tool.connection, regions, now=tool.now())
    if json:
        render.print_json(out, found.to_dict())
    else:
        out.print(fleet_view(found))
    if found.problems:
        raise typer.Exit(1)


def fleet_view(found: Fleet) -> RenderableType:
    """The dead-letter queues as a table, the destinations that are not queues, the calls made,
    then the problems."""
    holding = sum(1 for row in found.rows if row.depth is not None and row.depth.total)
    several = len(found.regions) > 1
    table = Table(
        title=f"{len(found.rows)} dead-letter queue(s) in {', '.join(found.regions)}; {holding} hold messages"
    )
    table.add_column("queue", overflow="fold")  # a name cut short names another queue
    if several:
        table.add_column("region", no_wrap=True)
    table.add_column("kind")
    for name in ("visible", "in flight", "delayed"):
        table.add_column(name, justify="right")
    table.add_column("oldest", justify="right", no_wrap=True)
    table.add_column("expires in", justify="right", no_wrap=True)
    table.add_column("sources", overflow="fold")
    table.add_column("guarded by", overflow="fold")
    for row in found.rows:
        region = [row.queue.region] if several else []
        kinds = ", ".join(row.kinds) or "-"
        table.add_row(inert(row.queue.name), *region, kinds, *_cells(row))
    parts: list[RenderableType] = [table]
    if found.elsewhere:
        parts.append(_elsewhere_table(found.elsewhere, several=several))
    if found.calls:
        parts.append(Text(found.calls_summary(), style="dim"))
    parts.append(
        inert("\n".join(f"! {problem}" for problem in found.problems), multiline=True, style="red")
        if found.problems
        else Text("ok", style="green")
    )
    return Stack(*parts)


def _cells(row: FleetRow) -> list[RenderableType]:
    depth = row.depth
    counts = ["?"] * 3 if depth is None else [str(depth.visible), str(depth.in_flight), str(depth.delayed)]
    empty = depth is not None and depth.total == 0
    oldest = "-" if empty else _known(row.oldest_age_seconds)
    expiry = row.time_to_expiry_seconds
    expires = Text(
        "-" if empty else _known(expiry),
        style="bold red" if expiry is not None and expiry < EXPIRY_WARNING_SECONDS else "",
    )
    sources = inert(some([source.label for source in row.sources], shown=SOURCES_SHOWN) or "-")
    return [*counts, oldest, expires, sources, _guard_cell(row.guards, holds_messages=not empty)]


def _elsewhere_table(elsewhere: Sequence[OtherDestination], *, several: bool) -> RenderableType:
    """The dead-letter destinations that are not SQS queues, each with the source sending to it
    (under a heading of its own: a title would wrap to the table's width)."""
    heading = Text(
        f"{len(elsewhere)} dead-letter destination(s) that are not SQS queues: not re-drivable by this tool"
    )
    table = Table()
    table.add_column("destination", overflow="fold")
    if several:
        table.add_column("region", no_wrap=True)
    table.add_column("kind")
    table.add_column("source", overflow="fold")
    for other in elsewhere:
        region = [other.region] if several else []
        table.add_row(inert(other.destination), *region, other.source.kind.value, inert(other.source.label))
    return Stack(heading, table)


def _known(seconds: int | None) -> str:
    return "unknown" if seconds is None else duration(seconds)


def _guard_cell(guards: tuple[Guard, ...] | None, *, holds_messages: bool) -> Text:
    if guards is None:
        return Text("unknown", style="yellow")
    if not guards:
        return Text("unguarded", style="yellow" if holds_messages else "")
    return inert(", ".join(guard.label for guard in guards))
