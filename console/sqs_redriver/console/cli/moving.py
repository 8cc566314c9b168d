"""Moving: ``replay`` and ``purge``, each previewed (``--dry-run`` stops there) and confirmed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from sqs_redriver.console.cli import render
from sqs_redriver.console.cli.app import JsonOption, YesOption, app, audited, err, out
from sqs_redriver.console.inventory import Selection, Where
from sqs_redriver.console.moves import MoveReport
from sqs_redriver.console.moving import DEFAULT_RATE, choose, parse_selection, purge_chosen, replay_chosen
from sqs_redriver.console.tool import Tool, UsageError


class ReplayFrom(StrEnum):
    """Where ``replay`` takes messages from: one queue (a replay reads and moves one)."""

    PARKING_LOT = "parking-lot"
    DLQ = "dlq"


GroupOption = Annotated[list[str] | None, typer.Option("--group", "-g", help="A group (see `groups`).")]
AttributeOption = Annotated[list[str] | None, typer.Option(help="name=value of a message attribute.")]
OlderOption = Annotated[str | None, typer.Option(help="First failed at least this long ago (30m, 2h, 3d).")]
NewerOption = Annotated[str | None, typer.Option(help="First failed at most this long ago.")]
IdOption = Annotated[
    list[str] | None,
    typer.Option("--id", help="A MessageId (or its first 8+ characters) or re-drive identity."),
]
AllOption = Annotated[bool, typer.Option("--all", help="Every message of the queue.")]
LimitOption = Annotated[int | None, typer.Option(help="At most this many messages.", min=1)]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Show what would move; move nothing.")]


@app.command("replay")
def replay_command(
    ctx: typer.Context,
    group_keys: GroupOption = None,
    attribute: AttributeOption = None,
    older_than: OlderOption = None,
    newer_than: NewerOption = None,
    ids: IdOption = None,
    everything: AllOption = False,
    source: Annotated[
        ReplayFrom, typer.Option("--from", help="Replay from the parking lot or from the DLQ.")
    ] = ReplayFrom.PARKING_LOT,
    to: Annotated[str | None, typer.Option(help="Send to this queue URL instead of each source.")] = None,
    rate: Annotated[float, typer.Option(help="Messages per second at most.", min=0.1)] = DEFAULT_RATE,
    limit: LimitOption = None,
    dry_run: DryRunOption = False,
    yes: YesOption = False,
    json: JsonOption = False,
) -> None:
    """Send chosen messages back to their source queue, re-drive count reset, replay recorded.

    A message is deleted only after it arrived; Ctrl-C at any point loses nothing."""
    where = Where(source.value)
    selection = parse_selection(
        group_keys or (), attribute or (), older_than, newer_than, ids or (), everything=everything
    )
    tool = audited(ctx) if not dry_run else ctx.obj
    _move(
        tool,
        where,
        selection,
        limit,
        ("replay", "replayed"),
        lambda report, advance: replay_chosen(
            tool, where, selection, to=to, rate=rate, limit=limit, report=report, on_moved=advance
        ),
        dry_run=dry_run,
        yes=yes,
        json=json,
    )


@app.command("purge")
def purge_command(
    ctx: typer.Context,
    group_keys: GroupOption = None,
    attribute: AttributeOption = None,
    older_than: OlderOption = None,
    newer_than: NewerOption = None,
    ids: IdOption = None,
    everything: AllOption = False,
    limit: LimitOption = None,
    dry_run: DryRunOption = False,
    yes: YesOption = False,
    json: JsonOption = False,
) -> None:
    """Delete chosen messages from the parking lot (their archived copies stay)."""
    selection = parse_selection(
        group_keys or (), attribute or (), older_than, newer_than, ids or (), everything=everything
    )
    tool = audited(ctx) if not dry_run else ctx.obj
    _move(
        tool,
        Where.PARKING_LOT,
        selection,
        limit,
        ("purge", "purged"),
        lambda report, advance: purge_chosen(tool, selection, limit=limit, report=report, on_moved=advance),
        dry_run=dry_run,
        yes=yes,
        json=json,
    )


def _move(
    tool: Tool,
    where: Where,
    selection: Selection,
    limit: int | None,
    verbs: tuple[str, str],
    move: Callable[[MoveReport, Callable[[int], None]], object],
    *,
    dry_run: bool,
    yes: bool,
    json: bool,
) -> None:
    """What replay and purge share: the preview, then the move with a progress bar, Ctrl-C kept
    in the report, and the summary (exit 1 unless it is clean)."""
    verb, done = verbs
    chosen = _preview(tool, where, selection, limit, verb, dry_run=dry_run, yes=yes, json=json)
    if chosen is None:
        return
    report = MoveReport()
    if chosen:
        with _progress(chosen, json) as advance:
            try:
                move(report, advance)
            except KeyboardInterrupt:
                report.interrupted = True
    _finish(done, report, json)


def _preview(
    tool: Tool,
    where: Where,
    selection: Selection,
    limit: int | None,
    verb: str,
    *,
    dry_run: bool,
    yes: bool,
    json: bool,
) -> int | None:
    """Print the histogram of what would move; the count to move (0: nothing chosen), or None
    after a dry run."""
    if json and not (dry_run or yes):
        raise UsageError(f"{verb} --json needs --yes (or --dry-run): there is no one to ask")
    chosen = choose(tool, where, selection, limit)
    if chosen.gaps:
        err.print(chosen.gaps, markup=False)
    if json:
        if dry_run:
            render.print_json(
                out, {"would_" + verb: len(chosen.items), "groups": [g.to_dict() for g in chosen.groups]}
            )
    else:
        title = (
            f"{verb}{' (dry run)' if dry_run else ''}: {len(chosen.items)} message(s) from the {where.value}"
        )
        out.print(render.groups_table(chosen.groups, tool.now(), title=title))
    if dry_run:
        return None
    if not chosen.items:
        return 0
    if not yes:
        typer.confirm(f"{verb} {len(chosen.items)} message(s)?", abort=True)
    return len(chosen.items)


@contextmanager
def _progress(total: int, quiet: bool) -> Iterator[Callable[[int], None]]:
    if quiet:
        yield lambda _done: None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task("moving", total=total)
        yield lambda done: progress.update(task, completed=done)


def _finish(verb: str, report: MoveReport, json: bool) -> None:
    if json:
        render.print_json(out, report.to_dict())
    else:
        out.print(render.move_summary(verb, report))
    if report.replay_id:
        err.print(f"what became of it: sqs-redriver outcome {report.replay_id}", markup=False)
    if not report.clean:
        raise typer.Exit(1)
