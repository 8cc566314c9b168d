"""`python -m bench --backlog-drains`: a DLQ already holding a backlog, a healthy consumer as fast as
the rate limit, drained by the default stack's re-driver in simulated time (local_aws.backlog);
measured at sizes moto handles, side by side with the model (bench.recovery_model), then the
model at 40,000 against the target (1.1 x backlog / rate plus the slow start). This is the drain
continuation makes fast: before it, 1,200 messages took 990 s and three runs.
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Any

from bench.recovery_compare import BEFORE_CONTINUATION_PER_RUN, MODELLED_BACKLOG, REDRIVER, SCHEDULE_SECONDS
from bench.recovery_model import Drainer, drain_seconds, redrive_seconds, runs_needed
from local_aws.backlog import BacklogDrain, drain_backlog
from local_aws.simulation import default_stack
from sqs_redriver.protocol.settings import default

# A backlog of fresh messages: their first re-drive's step, and the rate limit.
FRESH = replace(REDRIVER, delay_step_seconds=default("base_delay_seconds"))
RATE: float = default("max_redrives_per_second")


@dataclass(frozen=True)
class DrainRow:
    messages: int
    dlq_empty_seconds: float | None  # from the first run's start
    model_empty_seconds: float
    target_seconds: float  # 1.1 x backlog / rate + the slow start
    drained_seconds: float | None  # every order fulfilled as well
    model_drained_seconds: float
    runs: int
    model_runs: int
    stops: str
    fulfilled: int
    duplicates: int
    requests_per_message: float
    wall_seconds: float


def run(sizes: list[int], *, progress: bool = True) -> dict[str, Any]:
    """Each backlog of ``sizes`` drained and predicted; then the model at MODELLED_BACKLOG, with
    continuation and as before it (500 a run, a run a tick)."""
    logging.getLogger("moto").setLevel(logging.ERROR)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default_stack()
        for size in sizes:
            figures = drain_backlog(size)
            rows.append(_row(figures))
            if progress:
                print(f"backlog drain {size:,}: {figures.wall_seconds} s wall", file=sys.stderr)
    before = replace(FRESH, schedule_seconds=SCHEDULE_SECONDS, per_run=BEFORE_CONTINUATION_PER_RUN)
    predicted = [
        {
            "messages": MODELLED_BACKLOG,
            "runs": label,
            "runs_needed": runs_needed(MODELLED_BACKLOG, drainer),
            "dlq_empty_minutes": round(redrive_seconds(MODELLED_BACKLOG, drainer) / 60, 1),
            "target_minutes": round(_target(MODELLED_BACKLOG) / 60, 1),
            "drained_minutes": round(drain_seconds(MODELLED_BACKLOG, drainer, consumer_rate=RATE) / 60, 1),
        }
        for label, drainer in (("back to back (continuation)", FRESH), ("every 5 min, 500 a run", before))
    ]
    return {"measured": rows, "predicted": predicted}


def _target(messages: int) -> float:
    """The issue's bound on the re-driver's drain: 1.1 x backlog / rate, plus the slow start."""
    return 1.1 * messages / RATE + float(default("slow_start_seconds"))


def _row(figures: BacklogDrain) -> DrainRow:
    drainer: Drainer = FRESH
    return DrainRow(
        messages=figures.messages,
        dlq_empty_seconds=figures.dlq_empty_seconds,
        model_empty_seconds=round(redrive_seconds(figures.messages, drainer), 1),
        target_seconds=round(_target(figures.messages), 1),
        drained_seconds=figures.drained_seconds,
        model_drained_seconds=round(
            drain_seconds(figures.messages, drainer, consumer_rate=figures.consumer_rate), 1
        ),
        runs=figures.runs,
        model_runs=runs_needed(figures.messages, drainer),
        stops=", ".join(figures.stops),
        fulfilled=figures.fulfilled,
        duplicates=figures.duplicates,
        requests_per_message=figures.requests_per_message,
        wall_seconds=figures.wall_seconds,
    )


def render(report: dict[str, Any], *, as_json: bool) -> str:
    if as_json:
        return json.dumps(
            {"measured": [asdict(r) for r in report["measured"]], "predicted": report["predicted"]}, indent=2
        )
    measured: list[DrainRow] = report["measured"]
    lines = [
        "| messages | DLQ empty (s): measured / model / target | all fulfilled (s): measured / model | "
        "runs: measured / model | stops | fulfilled | duplicates | requests per message | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in measured:
        lines.append(
            f"| {r.messages:,} | {_maybe(r.dlq_empty_seconds)} / {r.model_empty_seconds:g} / "
            f"{r.target_seconds:g} | {_maybe(r.drained_seconds)} / {r.model_drained_seconds:g} | "
            f"{r.runs} / {r.model_runs} | {r.stops} | {r.fulfilled:,} | {r.duplicates} | "
            f"{r.requests_per_message:g} | {r.wall_seconds:g} |"
        )
    lines += [
        "",
        "| messages | runs | runs needed | DLQ empty (min) | target (min) | all fulfilled (min) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {p['messages']:,} | {p['runs']} | {p['runs_needed']} | {p['dlq_empty_minutes']:g} | "
        f"{p['target_minutes']:g} | {p['drained_minutes']:g} |"
        for p in report["predicted"]
    ]
    return "\n".join(lines)


def _maybe(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
