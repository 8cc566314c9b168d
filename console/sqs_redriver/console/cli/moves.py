"""The commands that move messages, and the one that follows them: ``replay`` and ``purge``, each
previewed (``--dry-run`` stops there), confirmed, and acting on exactly the messages previewed;
``edit``, a message corrected in $EDITOR, shown as a diff, confirmed, and sent back to its source
with its original archived; ``outcome``, what became of each replay, edit and group retry. Each
imports what it uses when it runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sqs_redriver.console.cli.app import (
    JsonOption,
    QueueChoice,
    YesOption,
    app,
    audited,
    err,
    fail,
    out,
    tool_of,
)
from sqs_redriver.console.errors import UsageError

if TYPE_CHECKING:
    from rich.text import Text

    from sqs_redriver.console.aws import QueueDepth
    from sqs_redriver.console.editing import Edited
    from sqs_redriver.console.inventory import Inspected, Selection, Where
    from sqs_redriver.console.outcomes import Outcome, ReplayRecord
    from sqs_redriver.console.replay import Chosen, MoveReport
    from sqs_redriver.console.tool import Tool

# Replay and purge (the library's replay.py).

# replay.DEFAULT_RATE as --help says it (a test holds them equal: the library is not imported
# for --help).
RATE_SHOWN = "10/s"


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
    rate: Annotated[
        float | None, typer.Option(help=f"Messages per second at most [default: {RATE_SHOWN}].", min=0.1)
    ] = None,
    limit: LimitOption = None,
    dry_run: DryRunOption = False,
    yes: YesOption = False,
    json: JsonOption = False,
) -> None:
    """Send chosen messages back to their source queue, re-drive count reset, replay recorded.

    A dead letter of another service (a function's, a rule target's, a subscription's) goes to its
    source's one target; one whose payload its source dropped is left in place, with the reason.
    A message is deleted only after it arrived; Ctrl-C at any point loses nothing."""
    from sqs_redriver.console.inventory import Where
    from sqs_redriver.console.replay import DEFAULT_RATE, check_destination, parse_selection, replay_chosen

    where = Where(source.value)
    selection = parse_selection(
        group_keys or (), attribute or (), older_than, newer_than, ids or (), everything=everything
    )
    check_destination(tool_of(ctx), to)
    tool = audited(ctx) if not dry_run else tool_of(ctx)
    pace = DEFAULT_RATE if rate is None else rate
    _move(
        tool,
        where,
        selection,
        limit,
        ("replay", "replayed"),
        lambda chosen, report, advance: replay_chosen(
            tool, chosen, to=to, rate=pace, report=report, on_moved=advance
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
    from sqs_redriver.console.inventory import Where
    from sqs_redriver.console.replay import parse_selection, purge_chosen

    selection = parse_selection(
        group_keys or (), attribute or (), older_than, newer_than, ids or (), everything=everything
    )
    tool = audited(ctx) if not dry_run else tool_of(ctx)
    _move(
        tool,
        Where.PARKING_LOT,
        selection,
        limit,
        ("purge", "purged"),
        lambda chosen, report, advance: purge_chosen(tool, chosen, report=report, on_moved=advance),
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
    move: Callable[[Chosen, MoveReport, Callable[[int], None]], object],
    *,
    dry_run: bool,
    yes: bool,
    json: bool,
) -> None:
    """What replay and purge share: the preview, then the move of the messages it chose with a
    progress bar, Ctrl-C kept in the report, and the summary (exit 1 unless it is clean)."""
    from sqs_redriver.console.replay import MoveReport

    verb, done = verbs
    chosen = _preview(tool, where, selection, limit, verb, dry_run=dry_run, yes=yes, json=json)
    if chosen is None:
        return
    report = MoveReport()
    if chosen.items:
        with _progress(len(chosen.items), json) as advance:
            try:
                move(chosen, report, advance)
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
) -> Chosen | None:
    """Print the histogram of what would move; what to move (confirmed), or None after a dry
    run."""
    from sqs_redriver.console.cli import render
    from sqs_redriver.console.replay import choose

    if json and not (dry_run or yes):
        raise UsageError(f"{verb} --json needs --yes (or --dry-run): there is no one to ask")
    chosen = choose(tool, where, selection, limit)
    if chosen.gaps:
        err().print(chosen.gaps, markup=False)
    if json:
        if dry_run:
            render.print_json(
                out(), {"would_" + verb: len(chosen.items), "groups": [g.to_dict() for g in chosen.groups]}
            )
    else:
        title = (
            f"{verb}{' (dry run)' if dry_run else ''}: {len(chosen.items)} message(s) from the {where.value}"
        )
        out().print(render.groups_table(chosen.groups, tool.now(), title=title))
    if dry_run:
        return None
    if chosen.items and not yes:
        typer.confirm(f"{verb} {len(chosen.items)} message(s)?", abort=True)
    return chosen


@contextmanager
def _progress(total: int, quiet: bool) -> Iterator[Callable[[int], None]]:
    if quiet:
        yield lambda _done: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err(), transient=False) as progress:
        task = progress.add_task("moving", total=total)
        yield lambda done: progress.update(task, completed=done)


def _finish(verb: str, report: MoveReport, json: bool) -> None:
    from sqs_redriver.console.cli import render

    if json:
        render.print_json(out(), report.to_dict())
    else:
        out().print(render.move_summary(verb, report))
    if report.replay_id:
        err().print(f"what became of it: sqs-redriver outcome {report.replay_id}", markup=False)
    if not report.clean:
        raise typer.Exit(1)


# Edit (the library's editing.py).


DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}


@app.command("edit")
def edit_command(
    ctx: typer.Context,
    message: Annotated[str, typer.Argument(help="A MessageId (or its first 8+ characters) or identity.")],
    source: Annotated[
        QueueChoice, typer.Option("--from", help="Look in the parking lot, the DLQ, or both.")
    ] = QueueChoice.BOTH,
    yes: YesOption = False,
    json: JsonOption = False,
) -> None:
    """Edit a message's body and attributes in $EDITOR, then send it back to its source queue (a
    dead letter of another service: its payload, to its source's one target).

    JSON stays JSON; SQS's limits are checked before anything is sent; the original is archived
    first (its key is printed) and deleted only after the edited message arrived."""
    from sqs_redriver.console.cli import render
    from sqs_redriver.console.editing import diff, document_of, edit_and_retry
    from sqs_redriver.console.editing import render as render_document
    from sqs_redriver.console.inventory import Where
    from sqs_redriver.console.safe_text import inert
    from sqs_redriver.console.tool import BOTH_QUEUES, find_message

    if json and not yes:
        raise UsageError("edit --json needs --yes: there is no one to ask")
    tool = audited(ctx)
    queues = BOTH_QUEUES if source is QueueChoice.BOTH else (Where(source.value),)
    item = find_message(tool, message, queues)
    before = document_of(item)
    edit = _edited(item, before)
    if edit is None:
        out().print("no change: nothing sent", markup=False)
        return
    after, edited = edit
    if not json:
        out().print(_diff_view(diff(before, render_document(edited))))
    if not yes:
        to = "its source's target" if item.dead_letter is not None else "its source queue"
        typer.confirm(f"send the edited message from the {item.where.value} to {to}?", abort=True)
    report = edit_and_retry(tool, item, after)
    if json:
        render.print_json(out(), report.to_dict())
    else:
        out().print(inert(report.summary()), style="green" if report.clean else "yellow", soft_wrap=True)
    if not report.clean:
        raise typer.Exit(1)


def _edited(item: Inspected, before: str) -> tuple[str, Edited] | None:
    """The operator's edit of ``before``, as typed and as checked; re-opened with the error shown
    until it is valid (or the operator gives up: exit 1). None when nothing changed."""
    import click
    from rich.text import Text

    from sqs_redriver.console.editing import changed, original_of
    from sqs_redriver.console.errors import DocumentError, Unchanged
    from sqs_redriver.console.safe_text import inert

    text = before
    while True:
        try:
            edited = click.edit(text, extension=".json", require_save=False)
        except click.ClickException as exc:
            fail(f"cannot open the editor ($EDITOR, $VISUAL): {exc.format_message()}", code=1)
        if edited is None:
            return None
        text = edited
        try:
            return text, changed(text, original_of(item))
        except Unchanged:
            return None
        except DocumentError as exc:
            err().print(Text.assemble(("not sendable: ", "red"), inert(str(exc))), soft_wrap=True)
            if not typer.confirm("edit again?", default=True, err=True):
                raise typer.Exit(1) from None


def _diff_view(lines: str) -> Text:
    """The diff, inert, each line coloured by what it does."""
    from rich.text import Text

    from sqs_redriver.console.safe_text import inert

    view = Text()
    for line in lines.splitlines():
        view.append_text(inert(line, style=DIFF_STYLES.get(line[:1], "")))
        view.append("\n")
    return view


# Outcome: what became of each replay, edit and group retry (the library's outcomes.py).


REPLAY_ID_CHARS = len("20261123-091240-3f9c")


@app.command()
def outcome(
    ctx: typer.Context,
    replay: Annotated[
        str | None,
        typer.Argument(
            metavar="[REPLAY]", help="A replay's id, or its start (default: list the recent ones)."
        ),
    ] = None,
    json: JsonOption = False,
) -> None:
    """What became of a replay, edit or group retry: consumed, back in the DLQ, parked, or not back.

    Each identity sent: consumed (the consumer kit's verdicts, or found nowhere past its return
    window with its source queue empty), back in the DLQ (same cause or new), parked, back since
    (re-driven or parked by the runs, as its state record says), may have been refused (a refusal
    of the kit's, or a record of its function without its payload, not found back: never called
    consumed), may still be waiting in its source queue, or too early to tell. Reads the DLQ and the
    parking lot and gives every message back at once. Exit 1 when some came back, were parked or
    may have been refused."""
    from sqs_redriver.console import outcomes
    from sqs_redriver.console.cli import render
    from sqs_redriver.console.outcomes import FAILED_AGAIN

    tool = tool_of(ctx)
    if replay is None:
        _list_recent(tool, json=json)
        return
    record = outcomes.find(tool, replay)
    seen = outcomes.snapshot(tool)
    if seen.gaps:
        err().print(seen.gaps, markup=False)
    judged = outcomes.judge_replay(tool, record, seen)
    if json:
        render.print_json(out(), {**_record_dict(record), **_outcome_dict(judged)})
    else:
        _print_details(record, judged)
    if any(judged.counts[fate] for fate in FAILED_AGAIN):
        raise typer.Exit(1)


def _list_recent(tool: Tool, *, json: bool) -> None:
    from rich.table import Table

    from sqs_redriver.console import outcomes
    from sqs_redriver.console.cli import render
    from sqs_redriver.console.safe_text import age, inert

    found, _seen = outcomes.recent_outcomes(tool)
    rows: list[dict[str, Any]] = []
    for entry in found:
        if entry.record is None or entry.outcome is None:
            listed = entry.listed
            rows.append(
                {
                    "replay_id": listed.replay_id,
                    "kind": listed.kind.value,
                    "at": listed.at,
                    "error": entry.error,
                }
            )
            continue
        rows.append(
            {**_record_dict(entry.record), "summary": entry.outcome.line(), "counts": _counts(entry.outcome)}
        )
    if json:
        render.print_json(out(), rows)
        return
    if not rows:
        out().print("no replay, edit or group retry recorded in the last 14 days")
        return
    table = Table(title="Recent replays")
    table.add_column("replay", no_wrap=True, min_width=REPLAY_ID_CHARS)  # copied whole into `outcome ID`
    table.add_column("kind", no_wrap=True)
    table.add_column("when", no_wrap=True)
    table.add_column("by", max_width=30)
    table.add_column("what became of it", min_width=24)
    now = tool.now()
    for row in rows:
        table.add_row(
            row["replay_id"],
            row["kind"],
            age(row["at"], now),
            inert(row.get("who", "-")),
            inert(row.get("summary") or row.get("error", "")),
        )
    out().print(table)


def _print_details(record: ReplayRecord, judged: Outcome) -> None:
    from sqs_redriver.console.outcomes import explain
    from sqs_redriver.console.safe_text import inert, when

    out().print(
        inert(
            f"{record.kind.value} {record.replay_id} by {record.who} "
            f"{when(record.at, judged.now)}: {record.detail or '-'}",
            style="bold",
        )
    )
    out().print(inert(judged.line()))
    for _fate, phrase, members in judged.by_fate():
        out().print(inert(f"{len(members)} {phrase}:"))
        for member in members:
            out().print(inert(f"  {member.identity}  {explain(member, judged)}"))


def _record_dict(record: ReplayRecord) -> dict[str, Any]:
    return {
        "replay_id": record.replay_id,
        "kind": record.kind.value,
        "who": record.who,
        "at": record.at,
        "detail": record.detail,
        "sent": len(record.sent),
    }


def _outcome_dict(judged: Outcome) -> dict[str, Any]:
    from sqs_redriver.console.outcomes import explain

    return {
        "now": judged.now,
        "summary": judged.line(),
        "counts": _counts(judged),
        "consumer_kit_ok_verdicts": judged.ok_verdicts,
        "complete": judged.complete,
        "identities": [
            {
                "identity": j.identity,
                "fate": j.fate.value,
                "fingerprint": j.fingerprint,
                "fingerprint_before": j.before,
                "cause": j.cause,
                "back_by": j.back_by,
                "source_queue_holds": None if j.held is None else _held_dict(j.held),
                "why": explain(j, judged),
            }
            for j in judged.judged
        ],
    }


def _held_dict(held: QueueDepth) -> dict[str, int]:
    return {"visible": held.visible, "in_flight": held.in_flight, "delayed": held.delayed}


def _counts(judged: Outcome) -> dict[str, int]:
    return {fate.value: count for fate, count in judged.counts.items()}
