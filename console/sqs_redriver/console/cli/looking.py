"""Looking: ``status`` (``--watch``), ``groups`` and ``show``; none of them consumes a message."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import RenderableType
from rich.live import Live

from sqs_redriver.console.cli import render
from sqs_redriver.console.cli.app import JsonOption, QueueChoice, app, err, out
from sqs_redriver.console.cli.inert import inert_str, some
from sqs_redriver.console.cli.tool import NotFound, Tool, UsageError
from sqs_redriver.console.inventory import Inspected, Where, group
from sqs_redriver.console.status import Status, read_status


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

    def look() -> Status:
        return read_status(
            tool.deployment,
            sqs=tool.client("sqs"),
            cloudwatch=tool.client("cloudwatch"),
            table=tool.table,
            now=tool.now(),
        )

    if watch:
        _watch(lambda: render.status_view(look()), interval)
        return
    current = look()
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
    with tool.scan(where) as scan:
        items = scan.everything()
    if scan.coverage is not None and not scan.coverage.complete:
        err.print(f"{where.value}: {scan.coverage.describe()}", markup=False)
    return items


@app.command()
def show(
    ctx: typer.Context,
    message_id: Annotated[str, typer.Argument(metavar="ID", help="A MessageId, or a re-drive identity.")],
    json: JsonOption = False,
) -> None:
    """One message: body, attributes, mark and history, failure, parking reason."""
    tool: Tool = ctx.obj
    found = _find(tool, message_id)
    recorded = tool.table.load_marks([found.identity]).get(found.identity)
    if json:
        data = render.message_dict(found)
        data["table_record"] = None if recorded is None else {"count": recorded.count}
        render.print_json(out, data)
    else:
        out.print(render.message_view(found, tool.now()))
        if recorded is not None and found.mark is None:
            out.print(f"re-drive count (state table, the message has no room for a mark): {recorded.count}")


def _find(tool: Tool, wanted: str) -> Inspected:
    """The message ``wanted`` names, first in the parking lot, then in the DLQ; raise NotFound
    naming those there are."""
    found, seen = first_in_queues(tool, lambda item: item.named(wanted))
    if found is not None:
        return found
    held = [item.message.message_id[: render.SAMPLE_ID_CHARS] for item in seen]
    raise NotFound(
        f"no message {inert_str(wanted)} in the parking lot or the DLQ; "
        + (f"they hold {some(held)}" if held else "both are empty")
    )


def first_in_queues(
    tool: Tool, wanted: Callable[[Inspected], bool]
) -> tuple[Inspected | None, list[Inspected]]:
    """The first message of the parking lot, then of the DLQ, that ``wanted`` takes (the scan stops
    there and gives back what it read), and the messages read before it."""
    seen: list[Inspected] = []
    for where in (Where.PARKING_LOT, Where.DLQ):
        with tool.scan(where) as scan:
            for batch in scan.batches():
                for item in batch:
                    if wanted(item):
                        return item, seen
                    seen.append(item)
    return None, seen
