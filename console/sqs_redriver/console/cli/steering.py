"""Steering: group records, the pause and the breakers, as the runs read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from sqs_redriver.console.cli import render
from sqs_redriver.console.cli.app import JsonOption, ReasonOption, app, breaker_app, err, fail, out
from sqs_redriver.console.cli.inert import inert, inert_str, some
from sqs_redriver.console.cli.looking import first_in_queues
from sqs_redriver.console.cli.tool import NotFound, Tool, UsageError
from sqs_redriver.console.inventory import is_fingerprint
from sqs_redriver.protocol.keys import breaker_key, pause_key
from sqs_redriver.runtime.decide.breaker import Breaker
from sqs_redriver.runtime.model.evidence import Evidence
from sqs_redriver.runtime.model.groups import GroupAction, GroupMark
from sqs_redriver.runtime.model.pause import Pause

ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Even if no message in the queues and no record has this fingerprint (a rule for "
        "messages still to come; a record the tool cannot read).",
    ),
]
FingerprintArgument = Annotated[str, typer.Argument(metavar="FINGERPRINT", help="A group of `groups`.")]


@app.command("retry-group")
def retry_group(
    ctx: typer.Context, fingerprint: FingerprintArgument, reason: ReasonOption, force: ForceOption = False
) -> None:
    """Re-drive a group's terminal failures instead of parking them (e.g. after a fix)."""
    _mark_group(ctx.obj, fingerprint, GroupAction.RETRY, reason, force=force)


@app.command("park-group")
def park_group(
    ctx: typer.Context, fingerprint: FingerprintArgument, reason: ReasonOption, force: ForceOption = False
) -> None:
    """Park a group's messages on sight, transient failures too (e.g. a known bad release)."""
    _mark_group(ctx.obj, fingerprint, GroupAction.PARK, reason, force=force)


@app.command("clear-group")
def clear_group(ctx: typer.Context, fingerprint: FingerprintArgument, force: ForceOption = False) -> None:
    """Drop a group's retry or park record: the re-driver decides for it again."""
    tool: Tool = ctx.obj
    if not force and fingerprint not in tool.table.load_group_marks([fingerprint]):
        recorded = tool.group_index.load()
        raise NotFound(
            f"group {inert_str(fingerprint)} has no retry or park record; records: "
            + (some(recorded) if recorded else "none")
            + " (see `rules`; --force deletes its records all the same)"
        )
    tool.table.clear_group_mark(fingerprint)
    tool.group_index.remove(fingerprint)
    out.print(inert(f"group {fingerprint}: no operator record"))


def _mark_group(tool: Tool, fingerprint: str, action: GroupAction, reason: str, *, force: bool) -> None:
    if not is_fingerprint(fingerprint):
        raise UsageError(
            f"{inert_str(fingerprint)} is not an error fingerprint: only groups of consumer failures (the "
            "consumer kit's fingerprints in `groups`) can be retried or parked; replay or purge others"
        )
    if not force:
        _check_known(tool, fingerprint)
    tool.group_index.add(fingerprint)  # first: every record the tool writes is listed
    tool.table.save_group_mark(GroupMark(fingerprint, action, reason, tool.who, tool.now()))
    out.print(inert(f"group {fingerprint}: {action.value} (by {tool.who}: {reason})"))


def _check_known(tool: Tool, fingerprint: str) -> None:
    """Raise NotFound, naming the fingerprints there are, when no record and no message of the
    DLQ or the parking lot has ``fingerprint`` (most likely a typo)."""
    if fingerprint in tool.table.load_group_marks([fingerprint]):
        return
    found, seen = first_in_queues(tool, lambda item: item.group == fingerprint)
    if found is not None:
        return
    present = sorted({item.group for item in seen if is_fingerprint(item.group)})
    recorded = tool.group_index.load()
    raise NotFound(
        f"no message in the DLQ or the parking lot has fingerprint {inert_str(fingerprint)}, and no "
        f"record names it. Fingerprints there: {some(present) if present else 'none'}; with a record: "
        f"{some(recorded) if recorded else 'none'}. To record it for messages still to come, add --force"
    )


@app.command()
def rules(
    ctx: typer.Context,
    fingerprints: Annotated[
        list[str] | None,
        typer.Argument(metavar="[FINGERPRINT]...", help="Only these (default: every record the tool wrote)."),
    ] = None,
    json: JsonOption = False,
) -> None:
    """The operator's retry and park records: fingerprint, action, who, when and why."""
    tool: Tool = ctx.obj
    marks = tool.table.load_group_marks(fingerprints or tool.group_index.load())
    if not fingerprints and tool.group_index.corrupt:
        err.print(
            inert(
                f"warning: {tool.group_index.corrupt}; listed what is valid (the next retry-group, "
                "park-group or clear-group rewrites it)"
            )
        )
    found = sorted(marks.values(), key=lambda mark: (-mark.at, mark.fingerprint))
    if json:
        render.print_json(out, [render.group_mark_dict(mark) for mark in found])
    else:
        out.print(render.rules_table(found, tool.now()))
    missing = [fingerprint for fingerprint in fingerprints or () if fingerprint not in marks]
    if missing:
        raise NotFound(f"no retry or park record for {some(missing)}")


@app.command()
def pause(ctx: typer.Context, reason: ReasonOption) -> None:
    """Stop every run from re-driving until `resume` (the retention sweep still runs)."""
    tool: Tool = ctx.obj
    tool.table.save_pause(pause_key(tool.deployment.dlq_url), Pause(reason, tool.who, tool.now()))
    out.print(inert(f"paused by {tool.who}: {reason}"))


@app.command()
def resume(ctx: typer.Context) -> None:
    """Let the next run re-drive again."""
    tool: Tool = ctx.obj
    tool.table.clear_pause(pause_key(tool.deployment.dlq_url))
    out.print("resumed: the next run re-drives")


SourceOption = Annotated[
    str | None, typer.Option("--source", help="One source queue URL (default: every source).")
]


@breaker_app.command("open")
def breaker_open(ctx: typer.Context, reason: ReasonOption, source: SourceOption = None) -> None:
    """Open the breaker: runs send only canaries after the cooldown, as when re-drives return."""
    _move_breakers(ctx.obj, source, lambda breaker, now: breaker.opened(now, Evidence.OPERATOR), reason)


@breaker_app.command("close")
def breaker_close(ctx: typer.Context, reason: ReasonOption, source: SourceOption = None) -> None:
    """Close the breaker: the next run re-drives (with its slow start)."""
    _move_breakers(ctx.obj, source, lambda breaker, now: breaker.closed(now, Evidence.OPERATOR), reason)


def _move_breakers(
    tool: Tool, source: str | None, move: Callable[[Breaker, int], Breaker], reason: str
) -> None:
    urls = tool.deployment.source_queue_urls
    if source is not None and source not in urls:
        raise UsageError(f"--source must be one of this re-driver's source queues: {', '.join(urls)}")
    for url in [source] if source else urls:
        key = breaker_key(url)
        current = tool.table.load_breaker(key)
        moved = move(current, tool.now())
        if not tool.table.save_breaker(key, moved, expected_version=current.version):
            fail(f"a run changed the breaker of {url} just now: look at `status` and try again", code=1)
        out.print(inert(f"{url}: {current.state.value} -> {moved.state.value} (by {tool.who}: {reason})"))
