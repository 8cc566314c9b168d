"""The bench's output: a line per measurement while it runs, then a Markdown table or JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from bench.measurements import Result

T = TypeVar("T")

COLUMNS = [
    "design",
    "messages",
    "latency/call",
    "wall time",
    "msg/s",
    "API calls/msg",
    "billable/msg",
    "$/1M msgs",
]


def progress_line(r: Result) -> str:
    return (
        f"{r.design:9} n={r.messages:5} latency={r.latency_ms:3} ms: {r.seconds:7.2f} s, "
        f"{r.per_second:7.1f} msg/s, {r.calls_per_message:.3f} calls/msg, "
        f"{r.billable_per_message:.3f} billable/msg, ${r.cost_per_million_usd:.2f} per million"
    )


def render(report: dict[str, Any], *, as_json: bool) -> str:
    """``report``: {"results": [...], "cold_start_ms": {...}, "limiter_achieved_per_second": {...}}."""
    if as_json:
        return json.dumps(report, indent=2)
    return table(report["results"], report["cold_start_ms"], report["limiter_achieved_per_second"])


def table(rows: list[dict[str, Any]], cold_start: dict[str, float], limiter: dict[str, float]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append(
            f"| {r['design']} | {r['messages']} | {r['latency_ms']} ms | {r['seconds']} s "
            f"| {r['per_second']} | {r['calls_per_message']} | {r['billable_per_message']} "
            f"| {r['cost_per_million_usd']} |"
        )
    lines += [
        "",
        f"cold start in the Lambda environment (median, minus an empty interpreter), ms: {cold_start}",
        f"rate limiter, setting -> achieved messages/s (at least 200 messages and 4 s): {limiter}",
    ]
    return "\n".join(lines)


def scenario_table(
    names: Sequence[str],
    rows: Sequence[tuple[str, Callable[[T], Any]]],
    figures: Sequence[T],
    text: Callable[[Any], str] = str,
) -> list[str]:
    """A Markdown table with a column per scenario (``names``, one per figure) and a row per
    ``(label, cell)``: the simulated-time benchmarks' tables."""
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(figures)]
    lines += [f"| {label} | " + " | ".join(text(cell(f)) for f in figures) + " |" for label, cell in rows]
    return lines
