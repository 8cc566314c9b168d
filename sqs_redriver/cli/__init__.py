"""``sqs-redriver``: the on-call engineer's command-line tool for the smart DLQ re-driver.

Each command is a verb; ``--json`` prints data for scripts; nothing moves messages without a
preview (``--dry-run`` prints it and stops). Exit codes: 0 done and all well, 1 a problem was found
or something could not be done, 2 the command line was wrong.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Annotated, NoReturn

import typer
from rich.console import Console, RenderableType
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from redriver.act.ratelimit import TokenBucket
from redriver.adapters import AwsCallError
from redriver.decide.breaker import Breaker
from redriver.model.groups import GroupAction, GroupMark
from redriver.model.pause import Pause
from redriver.settings import breaker_key, pause_key
from sqs_redriver.aws import Connection
from sqs_redriver.cli import render
from sqs_redriver.cli.tool import Target, Tool, UsageError
from sqs_redriver.deployment import DeploymentNotFound
from sqs_redriver.inventory import (
    Inspected,
    Selection,
    Where,
    group,
    parse_attribute_filters,
    parse_duration,
)
from sqs_redriver.moves import MoveReport, purge, replay
from sqs_redriver.status import Status, read_status

app = typer.Typer(
    name="sqs-redriver",
    help="See and steer the smart SQS DLQ re-driver: status, groups, show, replay, pause, breaker.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
breaker_app = typer.Typer(
    help="Open or close a source queue's circuit breaker by hand.", no_args_is_help=True
)
app.add_typer(breaker_app, name="breaker")

out = Console()
err = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
ReasonOption = Annotated[str, typer.Option("--reason", "-r", help="Why (recorded, and logged by every run).")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DEFAULT_RATE = 10.0


class QueueChoice(StrEnum):
    DLQ = "dlq"
    PARKING_LOT = "parking-lot"
    BOTH = "both"


@app.callback()
def options(
    ctx: typer.Context,
    stack: Annotated[
        str | None, typer.Option(envvar="SQS_REDRIVER_STACK", help="CloudFormation stack of the re-driver.")
    ] = None,
    redriver: Annotated[
        str | None, typer.Option(help="Which re-driver of the stack (its construct id), if it has several.")
    ] = None,
    dlq_url: Annotated[str | None, typer.Option(help="Without --stack: the DLQ's URL.")] = None,
    source_url: Annotated[list[str] | None, typer.Option(help="Without --stack: a source queue URL.")] = None,
    parking_lot_url: Annotated[
        str | None, typer.Option(help="Without --stack: the parking lot's URL.")
    ] = None,
    table: Annotated[str | None, typer.Option(help="Without --stack: the state table's name.")] = None,
    profile: Annotated[str | None, typer.Option(envvar="AWS_PROFILE", help="AWS profile.")] = None,
    region: Annotated[str | None, typer.Option(envvar="AWS_REGION", help="AWS region.")] = None,
    endpoint_url: Annotated[
        str | None, typer.Option(envvar="AWS_ENDPOINT_URL", help="Another endpoint (e.g. the local demo's).")
    ] = None,
) -> None:
    ctx.obj = Tool(
        Connection(profile=profile, region=region, endpoint_url=endpoint_url),
        Target(
            stack=stack,
            redriver=redriver,
            dlq_url=dlq_url,
            source_urls=tuple(source_url or ()),
            parking_lot_url=parking_lot_url,
            table=table,
        ),
    )


def main() -> None:
    """The console script's entry point."""
    app()


@contextmanager
def failures_reported() -> Iterator[None]:
    """Known failures become a message and an exit code, not a traceback."""
    try:
        yield
    except UsageError as exc:
        _fail(str(exc), code=2)
    except (AwsCallError, DeploymentNotFound) as exc:
        _fail(str(exc), code=1)


def _fail(message: str, *, code: int) -> NoReturn:
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code)


# -- looking ---------------------------------------------------------------------------------------


@app.command()
def status(
    ctx: typer.Context,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Refresh until Ctrl-C.")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between refreshes with --watch.", min=1)] = 5,
    json: JsonOption = False,
) -> None:
    """Breakers, pause, queue depths, the DLQ's time to expiry and the last runs."""
    tool: Tool = ctx.obj
    with failures_reported():

        def look() -> Status:
            return read_status(
                tool.deployment,
                sqs=tool.client("sqs"),
                cloudwatch=tool.client("cloudwatch"),
                table=tool.table,
                now=tool.now(),
            )

        if watch and not json:
            _watch(lambda: render.status_view(look()), interval)
            return
        current = look()
        if json:
            out.print_json(render.as_json(current.to_dict()))
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
    with failures_reported():
        items = [item for where in wheres for item in _read_all(tool, where)]
    found = group(items)
    if json:
        out.print_json(render.as_json([g.to_dict() for g in found]))
    else:
        out.print(
            render.groups_table(found, tool.now(), title=f"{len(items)} message(s) in {len(found)} group(s)")
        )


def _read_all(tool: Tool, where: Where) -> list[Inspected]:
    with tool.scan(where) as scan:
        return scan.everything()


@app.command()
def show(
    ctx: typer.Context,
    message_id: Annotated[str, typer.Argument(metavar="ID", help="A MessageId, or a re-drive identity.")],
    json: JsonOption = False,
) -> None:
    """One message: body, attributes, mark and history, failure, parking reason."""
    tool: Tool = ctx.obj
    with failures_reported():
        found = _find(tool, message_id)
        if found is None:
            _fail(f"no message {message_id} in the parking lot or the DLQ", code=1)
        recorded = tool.table.load_marks([found.identity]).get(found.identity)
    if json:
        data = render.message_dict(found)
        data["table_record"] = None if recorded is None else {"count": recorded.count}
        out.print_json(render.as_json(data))
    else:
        out.print(render.message_view(found, tool.now()))
        if recorded is not None and found.mark is None:
            out.print(f"re-drive count (state table, the message has no room for a mark): {recorded.count}")


def _find(tool: Tool, wanted: str) -> Inspected | None:
    for where in (Where.PARKING_LOT, Where.DLQ):
        with tool.scan(where) as scan:
            for batch in scan.batches():
                for item in batch:
                    if item.named(wanted):
                        return item
    return None


# -- moving ----------------------------------------------------------------------------------------


def _selection(
    group_keys: list[str] | None,
    attribute: list[str] | None,
    older_than: str | None,
    newer_than: str | None,
    ids: list[str] | None,
    everything: bool,
) -> Selection:
    try:
        selection = Selection(
            groups=frozenset(group_keys or ()),
            attributes=parse_attribute_filters(attribute or ()),
            older_than_seconds=parse_duration(older_than) if older_than else None,
            newer_than_seconds=parse_duration(newer_than) if newer_than else None,
            ids=frozenset(ids or ()),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if selection.everything and not everything:
        raise UsageError(
            "choose messages with --group, --attribute, --older-than, --newer-than or --id, or --all"
        )
    return selection


GroupOption = Annotated[list[str] | None, typer.Option("--group", "-g", help="A group (see `groups`).")]
AttributeOption = Annotated[list[str] | None, typer.Option(help="name=value of a message attribute.")]
OlderOption = Annotated[str | None, typer.Option(help="First failed at least this long ago (30m, 2h, 3d).")]
NewerOption = Annotated[str | None, typer.Option(help="First failed at most this long ago.")]
IdOption = Annotated[list[str] | None, typer.Option("--id", help="A MessageId or re-drive identity.")]
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
        QueueChoice, typer.Option("--from", help="Replay from the parking lot or from the DLQ.")
    ] = QueueChoice.PARKING_LOT,
    to: Annotated[str | None, typer.Option(help="Send to this queue URL instead of each source.")] = None,
    rate: Annotated[float, typer.Option(help="Messages per second at most.", min=0.1)] = DEFAULT_RATE,
    limit: LimitOption = None,
    dry_run: DryRunOption = False,
    yes: YesOption = False,
    json: JsonOption = False,
) -> None:
    """Send chosen messages back to their source queue, re-drive count reset, replay recorded.

    A message is deleted only after it arrived; Ctrl-C at any point loses nothing."""
    tool: Tool = ctx.obj
    with failures_reported():
        if source is QueueChoice.BOTH:
            raise UsageError("--from takes dlq or parking-lot")
        where = Where(source.value)
        selection = _selection(group_keys, attribute, older_than, newer_than, ids, everything)
        chosen = _preview(tool, where, selection, limit, "replay", dry_run=dry_run, yes=yes, json=json)
        if chosen is None:
            return
        report = MoveReport()
        bucket = TokenBucket(rate, burst=10)
        with _progress(chosen, json) as advance:
            try:
                replay(
                    tool.scan(where),
                    selection,
                    lambda item: tool.source_for(item, to),
                    table=tool.table,
                    now=tool.now(),
                    limit=limit,
                    bucket=bucket,
                    is_fifo=tool.fifo,
                    report=report,
                    on_moved=advance,
                )
            except KeyboardInterrupt:
                report.interrupted = True
    _finish("replayed", report, json)


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
    tool: Tool = ctx.obj
    with failures_reported():
        selection = _selection(group_keys, attribute, older_than, newer_than, ids, everything)
        chosen = _preview(
            tool, Where.PARKING_LOT, selection, limit, "purge", dry_run=dry_run, yes=yes, json=json
        )
        if chosen is None:
            return
        report = MoveReport()
        with _progress(chosen, json) as advance:
            try:
                purge(
                    tool.scan(Where.PARKING_LOT),
                    selection,
                    now=tool.now(),
                    limit=limit,
                    report=report,
                    on_moved=advance,
                )
            except KeyboardInterrupt:
                report.interrupted = True
    _finish("purged", report, json)


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
    """Print the histogram of what would move; the count to move, or None to stop here."""
    if json and not (dry_run or yes):
        raise UsageError(f"{verb} --json needs --yes (or --dry-run): there is no one to ask")
    now = tool.now()
    chosen = [item for item in _read_all(tool, where) if selection.matches(item, now)][:limit]
    histogram = group(chosen)
    if json:
        if dry_run:
            out.print_json(
                render.as_json({"would_" + verb: len(chosen), "groups": [g.to_dict() for g in histogram]})
            )
    else:
        title = f"{verb}{' (dry run)' if dry_run else ''}: {len(chosen)} message(s) from the {where.value}"
        out.print(render.groups_table(histogram, now, title=title))
    if dry_run or not chosen:
        return None
    if not yes:
        typer.confirm(f"{verb} {len(chosen)} message(s)?", abort=True)
    return len(chosen)


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
        out.print_json(render.as_json(report.to_dict()))
    else:
        out.print(render.move_summary(verb, report))
    if not report.clean:
        raise typer.Exit(1)


# -- steering --------------------------------------------------------------------------------------


@app.command("retry-group")
def retry_group(ctx: typer.Context, fingerprint: str, reason: ReasonOption) -> None:
    """Re-drive a group's terminal failures instead of parking them (e.g. after a fix)."""
    _mark_group(ctx.obj, fingerprint, GroupAction.RETRY, reason)


@app.command("park-group")
def park_group(ctx: typer.Context, fingerprint: str, reason: ReasonOption) -> None:
    """Park a group's messages on sight, transient failures too (e.g. a known bad release)."""
    _mark_group(ctx.obj, fingerprint, GroupAction.PARK, reason)


@app.command("clear-group")
def clear_group(ctx: typer.Context, fingerprint: str) -> None:
    """Drop a group's retry or park record: the re-driver decides for it again."""
    tool: Tool = ctx.obj
    with failures_reported():
        tool.table.clear_group_mark(fingerprint)
    out.print(f"group {fingerprint}: no operator record")


def _mark_group(tool: Tool, fingerprint: str, action: GroupAction, reason: str) -> None:
    with failures_reported():
        tool.table.save_group_mark(GroupMark(fingerprint, action, reason, tool.who, tool.now()))
    out.print(f"group {fingerprint}: {action.value} (by {tool.who}: {reason})")


@app.command()
def pause(ctx: typer.Context, reason: ReasonOption) -> None:
    """Stop every run from re-driving until `resume` (the retention sweep still runs)."""
    tool: Tool = ctx.obj
    with failures_reported():
        tool.table.save_pause(pause_key(tool.deployment.dlq_url), Pause(reason, tool.who, tool.now()))
    out.print(f"paused by {tool.who}: {reason}")


@app.command()
def resume(ctx: typer.Context) -> None:
    """Let the next run re-drive again."""
    tool: Tool = ctx.obj
    with failures_reported():
        tool.table.clear_pause(pause_key(tool.deployment.dlq_url))
    out.print("resumed: the next run re-drives")


SourceOption = Annotated[
    str | None, typer.Option("--source", help="One source queue URL (default: every source).")
]


@breaker_app.command("open")
def breaker_open(ctx: typer.Context, reason: ReasonOption, source: SourceOption = None) -> None:
    """Open the breaker: runs send only canaries after the cooldown, as after a failed wave."""
    _move_breakers(ctx.obj, source, lambda breaker, now: breaker.opened(now), reason)


@breaker_app.command("close")
def breaker_close(ctx: typer.Context, reason: ReasonOption, source: SourceOption = None) -> None:
    """Close the breaker: the next run re-drives (with its slow start)."""
    _move_breakers(ctx.obj, source, lambda breaker, now: breaker.closed(now), reason)


def _move_breakers(
    tool: Tool, source: str | None, move: Callable[[Breaker, int], Breaker], reason: str
) -> None:
    with failures_reported():
        urls = tool.deployment.source_queue_urls
        if source is not None and source not in urls:
            raise UsageError(f"--source must be one of this re-driver's source queues: {', '.join(urls)}")
        for url in [source] if source else urls:
            key = breaker_key(url)
            current = tool.table.load_breaker(key)
            moved = move(current, tool.now())
            if not tool.table.save_breaker(key, moved, expected_version=current.version):
                _fail(f"a run changed the breaker of {url} just now: look at `status` and try again", code=1)
            out.print(f"{url}: {current.state.value} -> {moved.state.value} (by {tool.who}: {reason})")


if __name__ == "__main__":  # pragma: no cover
    main()
