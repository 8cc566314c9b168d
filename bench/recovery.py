"""`python -m bench --recovery`: outages, poison and recovery over hours of simulated time
(local_aws.recovery), the real re-driver and the default stack on in-process moto; a table of what
users live through. Each scenario runs without the consumer kit (the plain consumer, the
re-driver's consumer verdicts off), with it (the kit consumer, verdicts on: the default stack's),
and with the kit granted but silent (the plain consumer, verdicts on: where every adopter starts).
"""

from __future__ import annotations

import json
import logging
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from bench.report import scenario_table
from local_aws.recovery import KitUse, lone_poison, outage, partial_outage, poison, poison_then_fresh
from local_aws.recovery_figures import RecoveryFigures
from local_aws.simulation import default_stack

SCENARIOS: dict[str, Callable[[KitUse], RecoveryFigures]] = {
    "outage-60": lambda kit: outage(300, 60, kit=kit),
    "outage-120": lambda kit: outage(300, 120, kit=kit),
    "poison": lambda kit: poison(10, 40, kit=kit),
    "poison-then-fresh": lambda kit: poison_then_fresh(10, 40, 20, kit=kit),
    "lone-poison": lambda kit: lone_poison(kit=kit),
    "partial-outage": lambda kit: partial_outage(60, kit=kit),
}
KITS = {use.value: use for use in KitUse}
KIT_LABELS = {"off": "no", "on": "yes", "silent": "granted, silent"}

ROWS: list[tuple[str, Callable[[RecoveryFigures], Any]]] = [
    ("consumer kit (consumer verdicts)", lambda f: KIT_LABELS[f.kit]),
    ("good / poison messages", lambda f: f"{f.good} / {f.poison}"),
    ("outage (min)", lambda f: f"{f.outage_minutes:g}"),
    ("simulated (min)", lambda f: f.simulated_minutes),
    ("re-driver runs", lambda f: f.runs),
    ("re-drives (messages sent back)", lambda f: f"{f.redrives:,}"),
    ("deliveries, all", lambda f: f"{f.deliveries:,}"),
    ("deliveries of re-driven messages", lambda f: f"{f.redriven_deliveries:,}"),
    ("... while the downstream was down", lambda f: f"{f.redriven_deliveries_in_outage:,}"),
    ("... most for one message, while down", lambda f: f.most_redriven_deliveries_in_outage),
    ("good orders fulfilled", lambda f: f.fulfilled),
    ("fulfilled more than once", lambda f: f.duplicates),
    ("good parked", lambda f: f.good_parked),
    ("poison parked", lambda f: f"{f.poison_parked} of {f.poison}"),
    ("poison parked at (min)", lambda f: _listed(f.poison_parked_at_minutes)),
    ("poison re-drives before parking", lambda f: _listed(f.poison_redrives_before_parking)),
    ("poison: last delivery -> parked (min)", lambda f: _range(f.poison_parked_after_last_delivery_minutes)),
    (
        "poison error class in the mark",
        lambda f: _listed_names(tuple(str(e.get("class", "")) for e in f.poison_parked_errors)),
    ),
    ("breaker first OPEN at (min)", lambda f: _maybe(f.breaker_opened_at_minutes)),
    ("breaker changes (min: state)", lambda f: _timeline(f.breaker_timeline)),
    ("breaker at the end", lambda f: f.breaker_final),
    ("recovery -> breaker CLOSED (min)", lambda f: _maybe(f.closed_minutes_after_recovery)),
    ("recovery -> all fulfilled, DLQ empty (min)", lambda f: _maybe(f.settled_minutes_after_recovery)),
    (
        "fresh failures: outage's end -> all fulfilled (min)",
        lambda f: _maybe(f.fresh_consumed_minutes_after_recovery),
    ),
    ("lost / parked and fulfilled", lambda f: f"{len(f.lost)} / {len(f.parked_and_fulfilled)}"),
    ("re-driver AWS requests", lambda f: f"{f.redriver_requests:,}"),
    (
        "... of them GetMetricData (one per run that read)",
        lambda f: dict(f.requests_by_operation).get("get_metric_data", 0),
    ),
    ("... per re-drive", lambda f: _maybe(f.redriver_requests_per_redrive)),
    ("consumer kit AWS requests", lambda f: f"{f.kit_requests:,}"),
    ("... per re-drive", lambda f: _maybe(f.kit_requests_per_redrive)),
    ("wall time (s, deployment included)", lambda f: f.wall_seconds),
]


def run(
    names: list[str] | None = None, kits: list[str] | None = None, *, progress: bool = True
) -> list[RecoveryFigures]:
    """Each scenario of ``names``, once per consumer of ``kits`` ("off", "on", "silent"; all by default)."""
    figures = []
    # moto's "no CloudFormation support for QueuePolicy", as a warning and a log line per deployment
    logging.getLogger("moto").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        default_stack()  # synthesized once, deployed into a fresh moto per scenario
        if progress:
            print(f"default stack synthesized: {time.perf_counter() - started:.1f} s", file=sys.stderr)
        for name in names or list(SCENARIOS):
            for kit in kits or list(KITS):
                result = SCENARIOS[name](KITS[kit])
                if progress:
                    print(f"{result.scenario}: {result.wall_seconds} s", file=sys.stderr)
                figures.append(result)
    return figures


def render(figures: list[RecoveryFigures], *, as_json: bool) -> str:
    if as_json:
        return json.dumps([_as_json(f) for f in figures], indent=2)
    lines = scenario_table([f.scenario for f in figures], ROWS, figures)
    lines.append("")
    lines += [
        f"requests by operation, {f.scenario}: re-driver "
        + ", ".join(f"{op} {n}" for op, n in f.requests_by_operation)
        + "; kit "
        + (", ".join(f"{op} {n}" for op, n in f.kit_requests_by_operation) or "-")
        for f in figures
    ]
    return "\n".join(lines)


def _as_json(figures: RecoveryFigures) -> dict[str, Any]:
    return {
        **asdict(figures),
        "redriver_requests_per_redrive": figures.redriver_requests_per_redrive,
        "kit_requests_per_redrive": figures.kit_requests_per_redrive,
    }


def _maybe(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _listed(values: tuple[float, ...] | tuple[int, ...]) -> str:
    return ", ".join(f"{v:g}" for v in values) or "-"


def _range(values: tuple[float, ...]) -> str:
    return (
        "-"
        if not values
        else f"{min(values):g}"
        if min(values) == max(values)
        else f"{min(values):g} to {max(values):g}"
    )


def _listed_names(values: tuple[str, ...]) -> str:
    counts = {name or "(none)": values.count(name) for name in values}
    return ", ".join(f"{name} x{n}" for name, n in counts.items()) or "-"


def _timeline(changes: tuple[tuple[float, str], ...]) -> str:
    return "; ".join(f"{at:g}: {state}" for at, state in changes) or "-"
