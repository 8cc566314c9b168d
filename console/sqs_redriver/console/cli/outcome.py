"""``outcome``: what became of each replay, edit and group retry (the library's outcomes.py)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from sqs_redriver.console import outcomes
from sqs_redriver.console.aws import QueueDepth
from sqs_redriver.console.cli import render
from sqs_redriver.console.cli.app import JsonOption, app, err, out
from sqs_redriver.console.cli.inert import inert
from sqs_redriver.console.outcome_rules import BACK, Fate, Outcome, explain
from sqs_redriver.console.replay_records import ReplayRecord
from sqs_redriver.console.shown import age, when
from sqs_redriver.console.tool import Tool

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
    window with its source queue empty), back in the DLQ (same cause or new), parked, may still be
    waiting in its source queue, or too early to tell. Reads the DLQ and the parking lot and gives
    every message back at once. Exit 1 when some came back or were parked."""
    tool: Tool = ctx.obj
    if replay is None:
        _list_recent(tool, json=json)
        return
    record = outcomes.find(tool, replay)
    seen = outcomes.snapshot(tool)
    if seen.gaps:
        err.print(seen.gaps, markup=False)
    judged = outcomes.judge_replay(tool, record, seen)
    if json:
        render.print_json(out, {**_record_dict(record), **_outcome_dict(judged)})
    else:
        _print_details(record, judged)
    counts = judged.counts
    if counts[Fate.PARKED] or any(counts[fate] for fate in BACK):
        raise typer.Exit(1)


def _list_recent(tool: Tool, *, json: bool) -> None:
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
        render.print_json(out, rows)
        return
    if not rows:
        out.print("no replay, edit or group retry recorded in the last 14 days")
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
    out.print(table)


def _print_details(record: ReplayRecord, judged: Outcome) -> None:
    out.print(
        inert(
            f"{record.kind.value} {record.replay_id} by {record.who} "
            f"{when(record.at, judged.now)}: {record.detail or '-'}",
            style="bold",
        )
    )
    out.print(inert(judged.line()))
    for _fate, phrase, members in judged.by_fate():
        out.print(inert(f"{len(members)} {phrase}:"))
        for member in members:
            out.print(inert(f"  {member.identity}  {explain(member, judged)}"))


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
