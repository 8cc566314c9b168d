"""`python -m bench.dead_letters`: the re-driver on the dead letters of a Lambda function (its
on-failure destination) and of an EventBridge rule's target (a function), in simulated time
(local_aws.dead_letter_recovery, local_aws.dead_letter_world): the real re-driver with the default
stack's settings, Lambda, EventBridge and the function played. A table per target.

    python -m bench.dead_letters [--scenarios outage outage-breaker poison partial-outage]
        [--targets lambda eventbridge] [--json]

- ``outage``: 300 orders failed into the DLQ by the target down from t=0 for 60 minutes; run until
  every order was fulfilled once and the DLQ is empty (at most 8 hours);
- ``outage-breaker`` (a function only): the same, the function guarding its downstream with a
  Powertools circuit breaker the source names (``DeadLetterSource.breaker``);
- ``poison``: 10 poison orders among 40 good, all failed into the DLQ in a 5-minute blip at t=0,
  then a healthy target for 6 hours;
- ``partial-outage`` (a function only): an order every 30 s for 75 minutes, the function's
  downstream refusing one customer domain in five (``Connection refused``) for the first 60.

Targets (issue 33): deliveries into the outage at most 30, recovery to an empty DLQ within 10
minutes, every poison parked within 90 minutes, no good order parked.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from bench.report import scenario_table
from local_aws.dead_letter_recovery import DeadLetterFigures, outage, partial_outage, poison
from sqs_redriver.protocol.sources import SourceKind

SCENARIOS: dict[str, Callable[[SourceKind], DeadLetterFigures]] = {
    "outage": lambda kind: outage(kind, 300, 60),
    "outage-breaker": lambda kind: outage(kind, 300, 60, circuit=True),
    "poison": lambda kind: poison(kind, 10, 40),
    "partial-outage": lambda kind: partial_outage(kind, 60),
}
TARGETS = {kind.value: kind for kind in (SourceKind.FUNCTION, SourceKind.RULE_TARGET)}
# the function's own breaker, one domain refused by its downstream: a function source's
FUNCTION_ONLY = {"outage-breaker", "partial-outage"}

ROWS: list[tuple[str, Callable[[DeadLetterFigures], Any]]] = [
    ("good / poison orders", lambda f: f"{f.good} / {f.poison}"),
    ("target down (min)", lambda f: f"{f.outage_minutes:g}"),
    ("simulated (min)", lambda f: f.simulated_minutes),
    ("re-driver runs", lambda f: f.runs),
    ("re-driver Invoke calls", lambda f: f"{f.redriver_invocations:,}"),
    ("... while the target was down (target <= 30)", lambda f: f"{f.redriver_invocations_in_outage:,}"),
    ("... of them refused by Invoke", lambda f: f"{f.refused_in_outage:,}"),
    ("function runs of re-driven events while down", lambda f: f"{f.function_runs_in_outage:,}"),
    ("dead letters the source wrote (the first failures' included)", lambda f: f"{f.dead_letters_written:,}"),
    ("good orders fulfilled", lambda f: f.fulfilled),
    ("fulfilled more than once", lambda f: f.duplicates),
    ("good parked (target 0)", lambda f: f.good_parked),
    ("poison parked", lambda f: f"{f.poison_parked} of {f.poison}"),
    ("poison parked at (min; target <= 90)", lambda f: _spread(f.poison_parked_at_minutes)),
    ("poison re-drives before parking", lambda f: _spread(f.poison_redriven)),
    ("parking reason", lambda f: _reasons(f.parking_reasons)),
    ("re-driver's breaker (min: state)", lambda f: _timeline(f.breaker_timeline)),
    ("the function's own breaker (min: state)", lambda f: _timeline(f.circuit_timeline)),
    (
        "recovery -> all fulfilled, DLQ empty (min; target <= 10)",
        lambda f: _maybe(f.settled_minutes_after_recovery),
    ),
    ("lost", lambda f: len(f.lost)),
    ("re-driver AWS requests", lambda f: f"{f.redriver_requests:,}"),
    ("wall time (s)", lambda f: f.wall_seconds),
]


def run(names: Sequence[str], targets: Sequence[str], *, progress: bool = True) -> list[DeadLetterFigures]:
    """Each scenario of ``names`` on each target of ``targets`` (a function's own breaker: on a
    function only)."""
    figures = []
    logging.getLogger("moto").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for target in targets:
            kind = TARGETS[target]
            for name in names:
                if name in FUNCTION_ONLY and kind is not SourceKind.FUNCTION:
                    continue
                result = SCENARIOS[name](kind)
                if progress:
                    print(
                        f"{result.target_name}, {result.scenario}: {result.wall_seconds} s", file=sys.stderr
                    )
                figures.append(result)
    return figures


def render(figures: Sequence[DeadLetterFigures], *, as_json: bool) -> str:
    if as_json:
        return json.dumps([{**asdict(f), "target_name": f.target_name} for f in figures], indent=2)
    sections = []
    for target in dict.fromkeys(f.target for f in figures):
        own = [f for f in figures if f.target == target]
        table = scenario_table([f.scenario for f in own], ROWS, own, _cell)
        lines = [f"### {own[0].target_name}", "", *table, ""]
        lines += [
            f"requests by API, {f.scenario}: " + ", ".join(f"{op} {n:,}" for op, n in f.requests_by_operation)
            for f in own
        ]
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def _cell(value: object) -> str:
    """A table cell: a reason may hold a rule target's address (``rule|target``)."""
    return str(value).replace("|", "\\|")


def _maybe(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _spread(values: Sequence[float]) -> str:
    """The values, or their range when they are many."""
    if not values:
        return "-"
    if len(set(values)) <= 3:
        return ", ".join(f"{v:g}" for v in sorted(set(values)))
    return f"{min(values):g} to {max(values):g}"


def _reasons(reasons: Sequence[str]) -> str:
    """The distinct parking reasons, each once, with how many had it."""
    counts = {reason: reasons.count(reason) for reason in reasons}
    return "; ".join(f"{n} x {reason!r}" for reason, n in counts.items()) or "-"


def _timeline(changes: Sequence[tuple[float, str]]) -> str:
    return ", ".join(f"{at:g}: {state}" for at, state in changes) or "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dead_letters", description=__doc__)
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--targets", nargs="+", choices=list(TARGETS), default=list(TARGETS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    print(render(run(args.scenarios, args.targets), as_json=args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
