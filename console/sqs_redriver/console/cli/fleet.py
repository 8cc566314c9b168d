"""``fleet``: every dead-letter queue of the account, how full and how old, and who guards it.

Account-wide: it needs no ``--stack``, and reads every queue and stack of the regions asked."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Group as Stack
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from sqs_redriver.console.cli import render
from sqs_redriver.console.cli.app import JsonOption, app, err, out
from sqs_redriver.console.cli.inert import inert
from sqs_redriver.console.fleet import read_connection_fleet, regions_to_read
from sqs_redriver.console.fleet_model import Fleet, FleetRow, Guard
from sqs_redriver.console.shown import duration, some
from sqs_redriver.console.status import EXPIRY_WARNING_SECONDS
from sqs_redriver.console.tool import Tool

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
    """Every queue of the account that is some queue's DLQ: depth, oldest message, time until SQS
    deletes it, its sources, and the re-driver guarding it (or "unguarded").

    A queue, stack or region that cannot be read is listed as a problem (exit 1); the rest is shown."""
    tool: Tool = ctx.obj
    regions = regions_to_read(region or [], tool.connection.region_name)
    with err.status(f"reading the queues and stacks of {', '.join(regions)}"):
        found = read_connection_fleet(tool.connection, regions, now=tool.now())
    if json:
        render.print_json(out, found.to_dict())
    else:
        out.print(fleet_view(found))
    if found.problems:
        raise typer.Exit(1)


def fleet_view(found: Fleet) -> RenderableType:
    """The dead-letter queues as a table, then the problems."""
    holding = sum(1 for row in found.rows if row.depth is not None and row.depth.total)
    table = Table(
        title=f"{len(found.rows)} dead-letter queue(s) in {', '.join(found.regions)}; {holding} hold messages"
    )
    table.add_column("queue", overflow="fold")  # a name cut short names another queue
    if len(found.regions) > 1:
        table.add_column("region", no_wrap=True)
    for name in ("visible", "in flight", "delayed"):
        table.add_column(name, justify="right")
    table.add_column("oldest", justify="right", no_wrap=True)
    table.add_column("expires in", justify="right", no_wrap=True)
    table.add_column("sources", overflow="fold")
    table.add_column("guarded by", overflow="fold")
    for row in found.rows:
        region = [row.queue.region] if len(found.regions) > 1 else []
        table.add_row(inert(row.queue.name), *region, *_cells(row))
    problems = (
        inert("\n".join(f"! {problem}" for problem in found.problems), multiline=True, style="red")
        if found.problems
        else Text("ok", style="green")
    )
    return Stack(table, problems)


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
    sources = inert(some([source.ref.name for source in row.sources], shown=SOURCES_SHOWN) or "-")
    return [*counts, oldest, expires, sources, _guard_cell(row.guards, holds_messages=not empty)]


def _known(seconds: int | None) -> str:
    return "unknown" if seconds is None else duration(seconds)


def _guard_cell(guards: tuple[Guard, ...] | None, *, holds_messages: bool) -> Text:
    if guards is None:
        return Text("unknown", style="yellow")
    if not guards:
        return Text("unguarded", style="yellow" if holds_messages else "")
    return inert(", ".join(guard.label for guard in guards))
