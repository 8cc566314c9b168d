"""`python -m bench --baselines`: one outage and backlog, re-driven by each design in the simulated
world (the published design, the console's "Start DLQ redrive", this re-driver without and with
the consumer kit), measured at sizes moto handles, side by side with the model's prediction
(bench.recovery_model); then the model's prediction for a backlog too large for moto (40,000),
with run continuation (runs back to back, as deployed) and as before it (500 a run, one run a
schedule tick).
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from bench import baseline
from bench.recovery_baselines import MOVE_TASK_MAX_RATE, console_outage, published_outage
from bench.recovery_model import Drainer, drain_seconds, runs_needed
from local_aws.recovery import KitUse, outage
from local_aws.recovery_figures import MINUTE, RecoveryFigures
from local_aws.simulation import default_stack
from sqs_redriver.protocol.settings import default

SCHEDULE_SECONDS = 300  # the default stack's and the published stack's rate(5 minutes)
CONSUMER_RATE = 10.0  # the world's consumer: one poller, 10 messages a call, 1 s a call
MODELLED_BACKLOG = 40_000
# Lambda retries the throttled continuation a second after the run returns (local_aws.simulation).
CONTINUATION_SECONDS = 1.0
BEFORE_CONTINUATION_PER_RUN = 500

_BUDGET_SECONDS = default("redriver_timeout_seconds") - default("time_margin_seconds")
REDRIVER = Drainer(
    per_run=default("max_messages_per_run"),
    rate=default("max_redrives_per_second"),
    schedule_seconds=None,
    continuation_seconds=CONTINUATION_SECONDS,
    # Without the kit, the backlog's first re-drives went into the outage: recovery re-drives it a
    # second time, with the second backoff step.
    delay_step_seconds=2 * default("base_delay_seconds"),
    slow_start_seconds=default("slow_start_seconds"),
    budget_seconds=_BUDGET_SECONDS,
)
# Assumption: the trial's verdicts are heard about 2 s after it is sent (a 1 s consumer call,
# the re-driver's 1 s verdict poll).
_REDRIVER_KIT = Drainer(
    per_run=default("max_messages_per_run"),
    rate=default("max_redrives_per_second"),
    schedule_seconds=None,
    continuation_seconds=CONTINUATION_SECONDS,
    delay_step_seconds=default("base_delay_seconds"),
    trial_seconds=2.0,
    budget_seconds=_BUDGET_SECONDS,
)


@dataclass(frozen=True)
class Design:
    name: str
    measure: Callable[[int, float], RecoveryFigures]
    drainer: Drainer


DESIGNS: dict[str, Design] = {
    "published": Design(
        "published design",
        lambda n, minutes: published_outage(n, minutes, cap_hours=minutes / 60 + n / 50 + 2),
        Drainer(
            per_run=baseline.MAX_MESSAGES_PER_RUN,
            rate=math.inf,
            schedule_seconds=SCHEDULE_SECONDS,
            delay_step_seconds=baseline.BASE_DELAY_SECONDS,  # its count never passes 0
            jitter=False,
        ),
    ),
    "console": Design(
        "console redrive",
        lambda n, minutes: console_outage(n, minutes),
        Drainer(per_run=math.inf, rate=MOVE_TASK_MAX_RATE, schedule_seconds=None, delay_step_seconds=0),
    ),
    "redriver": Design(
        "this re-driver, no kit",
        lambda n, minutes: outage(n, minutes, kit=KitUse.OFF, cap_hours=minutes / 60 + 8),
        REDRIVER,
    ),
    "redriver-kit": Design(
        "this re-driver, kit",
        lambda n, minutes: outage(n, minutes, kit=KitUse.ON, cap_hours=minutes / 60 + 8),
        _REDRIVER_KIT,
    ),
}


@dataclass(frozen=True)
class Row:
    design: str
    messages: int
    outage_minutes: float
    recovery_to_closed_min: float | None  # this re-driver's breaker; the baselines re-drive at once
    recovery_to_drained_min: float | None
    predicted_min: float
    closed_to_drained_min: float | None
    predicted_closed_to_drained_min: float
    redrives_in_outage: int  # re-drives sent before recovery
    redriven_deliveries_in_outage: int
    good_parked: int
    duplicates: int
    lost: int
    requests: int
    requests_per_message: float
    requests_per_redrive: float | None
    wall_seconds: float


@dataclass(frozen=True)
class Prediction:
    design: str
    messages: int
    runs: str  # "every 5 min" or "back to back"
    consumer: str
    runs_needed: int
    recovery_to_closed_min: float
    closed_to_drained_min: float
    recovery_to_drained_min: float


def run(
    sizes: list[int], outage_minutes: float, names: list[str], *, progress: bool = True
) -> dict[str, Any]:
    """Each design of ``names`` at each backlog of ``sizes``, measured and predicted; then the
    model's predictions at MODELLED_BACKLOG."""
    logging.getLogger("moto").setLevel(logging.ERROR)  # no CloudFormation support for QueuePolicy
    rows: list[Row] = []
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default_stack()
        for size in sizes:
            for name in names:
                figures = DESIGNS[name].measure(size, outage_minutes)
                rows.append(_row(DESIGNS[name], figures, size, outage_minutes))
                if progress:
                    print(f"{figures.scenario}: {figures.wall_seconds} s wall", file=sys.stderr)
    if progress:
        print(f"recovery baselines: {time.perf_counter() - started:.0f} s wall", file=sys.stderr)
    return {"measured": rows, "predicted": predictions(rows, names, outage_minutes)}


def predictions(rows: list[Row], names: list[str], outage_minutes: float) -> list[Prediction]:
    """The model at MODELLED_BACKLOG, each design's breaker closing as at the largest measured size
    where it closed after recovery."""
    found = []
    for name in names:
        design = DESIGNS[name]
        # Without the kit, the breaker may close before the outage's end (1,000 messages: a canary
        # passed because it was not back within its window): the largest size where it closed after.
        closed_after = [r for r in rows if r.design == design.name and r.recovery_to_closed_min is not None]
        closed = max(closed_after, key=lambda r: r.messages).recovery_to_closed_min if closed_after else None
        variants = [(_runs_label(design.drainer), design.drainer)]
        if name.startswith("redriver"):
            before = replace(
                design.drainer, schedule_seconds=SCHEDULE_SECONDS, per_run=BEFORE_CONTINUATION_PER_RUN
            )
            variants.append(("every 5 min, 500 a run (before continuation)", before))
        for runs, drainer in variants:
            for consumer, rate in (("10/s (the world's)", CONSUMER_RATE), ("keeps up", math.inf)):
                first = _first_run_min(closed, outage_minutes)
                drained = drain_seconds(MODELLED_BACKLOG, drainer, consumer_rate=rate) / MINUTE
                found.append(
                    Prediction(
                        design.name,
                        MODELLED_BACKLOG,
                        runs,
                        consumer,
                        runs_needed(MODELLED_BACKLOG, drainer),
                        round(closed or 0.0, 1),
                        round(first - (closed or 0.0) + drained, 1),
                        round(first + drained, 1),
                    )
                )
    return found


def _runs_label(drainer: Drainer) -> str:
    if math.isinf(drainer.per_run):
        return "one"
    return (
        "back to back" if drainer.schedule_seconds is None else f"every {drainer.schedule_seconds / 60:g} min"
    )


def _first_run_min(closed_min: float | None, outage_minutes: float) -> float:
    """Minutes from recovery to the start of the first run that re-drives at full speed: the
    schedule tick of the run that closed the breaker (it goes on re-driving), or recovery."""
    if closed_min is None:
        return 0.0
    at = (outage_minutes + closed_min) * MINUTE
    return (math.floor(at / SCHEDULE_SECONDS) * SCHEDULE_SECONDS) / MINUTE - outage_minutes


def _row(design: Design, f: RecoveryFigures, size: int, outage_minutes: float) -> Row:
    first = _first_run_min(f.closed_minutes_after_recovery, outage_minutes)
    predicted = first + drain_seconds(size, design.drainer, consumer_rate=CONSUMER_RATE) / MINUTE
    closed = f.closed_minutes_after_recovery or 0.0
    drained = f.settled_minutes_after_recovery
    return Row(
        design=design.name,
        messages=size,
        outage_minutes=outage_minutes,
        recovery_to_closed_min=f.closed_minutes_after_recovery,
        recovery_to_drained_min=drained,
        predicted_min=round(predicted, 1),
        closed_to_drained_min=None if drained is None else round(drained - closed, 1),
        predicted_closed_to_drained_min=round(predicted - closed, 1),
        redrives_in_outage=f.redrives_in_outage,
        redriven_deliveries_in_outage=f.redriven_deliveries_in_outage,
        good_parked=f.good_parked,
        duplicates=f.duplicates,
        lost=len(f.lost),
        requests=f.redriver_requests,
        requests_per_message=round(f.redriver_requests / size, 3),
        requests_per_redrive=f.redriver_requests_per_redrive,
        wall_seconds=f.wall_seconds,
    )


MEASURED_COLUMNS: list[tuple[str, Callable[[Row], Any]]] = [
    ("design", lambda r: r.design),
    ("messages", lambda r: f"{r.messages:,}"),
    ("recovery -> breaker CLOSED (min)", lambda r: _maybe(r.recovery_to_closed_min)),
    (
        "recovery -> drained (min): measured / model",
        lambda r: f"{_maybe(r.recovery_to_drained_min)} / {r.predicted_min:g}",
    ),
    (
        "CLOSED -> drained (min): measured / model",
        lambda r: f"{_maybe(r.closed_to_drained_min)} / {r.predicted_closed_to_drained_min:g}",
    ),
    ("re-drives sent into the outage", lambda r: f"{r.redrives_in_outage:,}"),
    ("re-driven deliveries in the outage", lambda r: f"{r.redriven_deliveries_in_outage:,}"),
    ("good parked", lambda r: r.good_parked),
    ("duplicates", lambda r: r.duplicates),
    ("lost", lambda r: r.lost),
    (
        "requests per message (per re-drive)",
        lambda r: f"{r.requests_per_message:g} ({_maybe(r.requests_per_redrive)})",
    ),
    ("wall (s)", lambda r: r.wall_seconds),
]
PREDICTED_COLUMNS = [
    "design",
    "messages",
    "runs",
    "consumer",
    "runs needed",
    "recovery -> CLOSED (min)",
    "CLOSED -> drained (min)",
    "recovery -> drained (min)",
]


def render(report: dict[str, Any], *, as_json: bool) -> str:
    if as_json:
        return json.dumps({key: [asdict(r) for r in rows] for key, rows in report.items()}, indent=2)
    lines = ["| " + " | ".join(c for c, _ in MEASURED_COLUMNS) + " |", "|" + "---|" * len(MEASURED_COLUMNS)]
    lines += [
        "| " + " | ".join(str(cell(r)) for _, cell in MEASURED_COLUMNS) + " |" for r in report["measured"]
    ]
    lines += ["", "| " + " | ".join(PREDICTED_COLUMNS) + " |", "|" + "---|" * len(PREDICTED_COLUMNS)]
    lines += ["| " + " | ".join(str(v) for v in asdict(p).values()) + " |" for p in report["predicted"]]
    return "\n".join(lines)


def _maybe(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
