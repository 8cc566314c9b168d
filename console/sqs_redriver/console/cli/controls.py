"""The commands of the operator's controls: group records, the pause and the breakers (the library's
controls.py), each importing what it uses when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from sqs_redriver.console.cli.app import (
    JsonOption,
    ReasonOption,
    app,
    audited,
    breaker_app,
    err,
    out,
    tool_of,
)
from sqs_redriver.console.errors import NotFound

if TYPE_CHECKING:
    from sqs_redriver.console import controls
    from sqs_redriver.console.tool import Tool
    from sqs_redriver.core.table import GroupAction

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
    from sqs_redriver.core.table import GroupAction

    _mark_group(ctx, fingerprint, GroupAction.RETRY, reason, force=force)


@app.command("park-group")
def park_group(
    ctx: typer.Context, fingerprint: FingerprintArgument, reason: ReasonOption, force: ForceOption = False
) -> None:
    """Park a group's messages on sight, transient failures too (e.g. a known bad release)."""
    from sqs_redriver.core.table import GroupAction

    _mark_group(ctx, fingerprint, GroupAction.PARK, reason, force=force)


def _mark_group(
    ctx: typer.Context, fingerprint: str, action: GroupAction, reason: str, *, force: bool
) -> None:
    from sqs_redriver.console import controls

    _say(controls.mark_group(audited(ctx), fingerprint, action, reason, force=force))


def _say(done: str) -> None:
    """What a control did, on one line (inert: it quotes what the operator typed)."""
    from sqs_redriver.console.safe_text import inert

    out().print(inert(done))


@app.command("clear-group")
def clear_group(ctx: typer.Context, fingerprint: FingerprintArgument, force: ForceOption = False) -> None:
    """Drop a group's retry or park record: the re-driver decides for it again."""
    from sqs_redriver.console import controls

    _say(controls.clear_group(audited(ctx), fingerprint, force=force))


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
    from sqs_redriver.console.cli import render
    from sqs_redriver.console.safe_text import inert, some

    tool = tool_of(ctx)
    marks = tool.table.load_group_marks(fingerprints or tool.group_index.load())
    if not fingerprints and tool.group_index.corrupt:
        err().print(
            inert(
                f"warning: {tool.group_index.corrupt}; listed what is valid (the next retry-group, "
                "park-group or clear-group rewrites it)"
            )
        )
    found = sorted(marks.values(), key=lambda mark: (-mark.at, mark.fingerprint))
    if json:
        render.print_json(out(), [render.group_mark_dict(mark) for mark in found])
    else:
        out().print(render.rules_table(found, tool.now()))
    missing = [fingerprint for fingerprint in fingerprints or () if fingerprint not in marks]
    if missing:
        raise NotFound(f"no retry or park record for {some(missing)}")


@app.command()
def pause(ctx: typer.Context, reason: ReasonOption) -> None:
    """Stop every run from re-driving until `resume` (the retention sweep still runs)."""
    from sqs_redriver.console import controls

    _say(controls.pause(audited(ctx), reason))


@app.command()
def resume(ctx: typer.Context) -> None:
    """Let the next run re-drive again (says so, and exits 0, when nothing was paused)."""
    from sqs_redriver.console import controls

    _say(controls.resume(audited(ctx)))


SourceOption = Annotated[
    str | None,
    typer.Option("--source", help="One source: a queue URL, or a source's address (default: every source)."),
]


@breaker_app.command("open")
def breaker_open(ctx: typer.Context, reason: ReasonOption, source: SourceOption = None) -> None:
    """Open the breaker: runs send only canaries after the cooldown, as when re-drives return."""
    from sqs_redriver.console import controls

    tool = audited(ctx)
    _print_moves(tool, controls.open_breakers(tool, reason, source), reason)


@breaker_app.command("close")
def breaker_close(ctx: typer.Context, reason: ReasonOption, source: SourceOption = None) -> None:
    """Close the breaker: the next run re-drives (with its slow start)."""
    from sqs_redriver.console import controls

    tool = audited(ctx)
    _print_moves(tool, controls.close_breakers(tool, reason, source), reason)


def _print_moves(tool: Tool, moves: list[controls.BreakerMove], reason: str) -> None:
    for move in moves:
        _say(f"{move.source_url}: {move.before} -> {move.after} (by {tool.who}: {reason})")
