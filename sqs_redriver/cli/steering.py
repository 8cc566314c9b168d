"""Steering: group records, the pause and the breakers, as the runs read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from redriver.decide.breaker import Breaker
from redriver.model.groups import GroupAction, GroupMark
from redriver.model.pause import Pause
from redriver.settings import breaker_key, pause_key
from sqs_redriver.cli.app import ReasonOption, app, breaker_app, fail, failures_reported, out
from sqs_redriver.cli.tool import Tool, UsageError
from sqs_redriver.inventory import is_fingerprint


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
    out.print(f"group {fingerprint}: no operator record", markup=False)


def _mark_group(tool: Tool, fingerprint: str, action: GroupAction, reason: str) -> None:
    with failures_reported():
        if not is_fingerprint(fingerprint):
            raise UsageError(
                f"{fingerprint} is not an error fingerprint: only groups of consumer failures (the "
                "consumer kit's fingerprints in `groups`) can be retried or parked; replay or purge others"
            )
        tool.table.save_group_mark(GroupMark(fingerprint, action, reason, tool.who, tool.now()))
    out.print(f"group {fingerprint}: {action.value} (by {tool.who}: {reason})", markup=False)


@app.command()
def pause(ctx: typer.Context, reason: ReasonOption) -> None:
    """Stop every run from re-driving until `resume` (the retention sweep still runs)."""
    tool: Tool = ctx.obj
    with failures_reported():
        tool.table.save_pause(pause_key(tool.deployment.dlq_url), Pause(reason, tool.who, tool.now()))
    out.print(f"paused by {tool.who}: {reason}", markup=False)


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
                fail(f"a run changed the breaker of {url} just now: look at `status` and try again", code=1)
            out.print(
                f"{url}: {current.state.value} -> {moved.state.value} (by {tool.who}: {reason})", markup=False
            )
