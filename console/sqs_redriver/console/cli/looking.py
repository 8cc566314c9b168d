"""Looking: ``status`` (``--watch``), ``groups`` and ``show``; none of them consumes a message."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import RenderableType
from rich.live import Live

from sqs_redriver.console import finding, outcomes
from sqs_redriver.console.cli import render
from sqs_redriver.console.cli.app import JsonOption, QueueChoice, app, err, out
from sqs_redriver.console.inventory import Inspected, Where, group
from sqs_redriver.console.tool import Tool, UsageError


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
    items = [item for where in wheres for item in read_all(tool, where)]
    found = group(items)
    if json:
        render.print_json(out, [g.to_dict() for g in found])
    else:
        out.print(
            render.groups_table(found, tool.now(), title=f"{len(items)} message(s) in {len(found)} group(s)")
        )


def read_all(tool: Tool, where: Where) -> list[Inspected]:
    """Every message of a queue, given back at once; what the scan could not read is said on stderr."""
    read = finding.read_all(tool, where)
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
    found = finding.find_message(tool, message_id)
    recorded = tool.table.load_marks([found.identity]).get(found.identity)
    if json:
        data = render.message_dict(found)
        data["table_record"] = None if recorded is None else {"count": recorded.count}
        render.print_json(out, data)
    else:
        out.print(render.message_view(found, tool.now()))
        if recorded is not None and found.mark is None:
            out.print(f"re-drive count (state table, the message has no room for a mark): {recorded.count}")
