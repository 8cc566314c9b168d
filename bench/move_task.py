"""`python -m bench.move_task`: SQS's own redrive, StartMessageMoveTask (the console's "Start DLQ
redrive"), in the situations where it and this re-driver part ways, in the simulated world of the
recovery scenarios (local_aws.simulation: the default stack, the plain consumer taking 10 messages
a second, 180 s visibility, maxReceiveCount 5). Nothing is on the schedule: the operator starts
the task (bench.recovery_baselines.move_task: every message in the DLQ moved to the source queue at
``MaxNumberOfMessagesPerSecond``, with its attributes, no delay, no health check, no count).

    python -m bench.move_task [--scenarios at-recovery early poison] [--rate 500] [--json]

- ``at-recovery``: 300 orders into a 60-minute outage, the task started at its end (its best case);
- ``early``: the same, the task started half-way through the outage, then again at its end;
- ``poison``: 10 poison orders among 40 good, a healthy downstream; the task started at 30 minutes,
  when the poison has been in the DLQ for a quarter of an hour.

This re-driver's figures for the same scenarios are those of ``python -m bench --recovery``
(outage-60, poison).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, cast

from bench.recovery_baselines import MOVE_TASK_MAX_RATE, Idle, move_task
from local_aws.consumers import order_body, plain_order_consumer
from local_aws.queues import queue_counts
from local_aws.recovery import Settled
from local_aws.recovery_figures import MINUTE
from local_aws.simulated_time import SIM_EPOCH
from local_aws.simulation import World, default_stack, open_world


@dataclass(frozen=True)
class Scenario:
    """Orders sent at t=0, a downstream down from 0 to ``outage_minutes``, the task started at each
    of ``starts_minutes``; the world runs to ``until_minutes`` (or until drained, for an outage)."""

    description: str
    good: int
    poison: int
    outage_minutes: float
    starts_minutes: tuple[float, ...]
    until_minutes: float


SCENARIOS = {
    "at-recovery": Scenario("300 orders, 60-min outage, started at its end", 300, 0, 60, (60,), 180),
    "early": Scenario("300 orders, 60-min outage, started at 30 min and at 60", 300, 0, 60, (30, 60), 180),
    "poison": Scenario("10 poison among 40 good, started at 30 min", 40, 10, 0, (30,), 120),
}


@dataclass(frozen=True)
class MoveTaskFigures:
    scenario: str
    rate: int  # MaxNumberOfMessagesPerSecond
    tasks: int  # StartMessageMoveTask requests: the caller's only request per task
    moved: int  # messages the tasks moved back to the source queue
    moved_deliveries_while_down: int  # deliveries of moved messages before the outage's end
    most_deliveries_while_down: int  # ... of the message that had the most
    recovery_to_drained_min: float | None  # every good order fulfilled and the DLQ empty
    poison_deliveries_after_move: int
    poison_parked: int  # the task parks nothing: always 0
    in_dlq_at_end: int
    simulated_min: float
    wall_seconds: float


def measure(name: str, rate: int = MOVE_TASK_MAX_RATE, *, seed: int = 7) -> MoveTaskFigures:
    """The scenario ``name`` with the task moving ``rate`` messages a second."""
    scenario = SCENARIOS[name]
    rng = random.Random(seed)
    good = [order_body(f"o-{i:05d}", rng=rng) for i in range(scenario.good)]
    poison = [order_body(f"p-{i:05d}", rng=rng, poison=True) for i in range(scenario.poison)]
    recovery = scenario.outage_minutes * MINUTE
    started = time.perf_counter()  # outside the world: freezegun stops perf_counter too
    consumer = plain_order_consumer([(SIM_EPOCH, SIM_EPOCH + recovery)] if recovery else [])
    with open_world(consumer) as world:
        world.redriver = cast(Any, Idle())  # the schedule starts nothing: the operator does
        world.send(good + poison)
        settled = Settled.of(world, {world.key_of(b) for b in good})
        sent: set[str] = set()
        for start in scenario.starts_minutes:
            world.run(for_seconds=start * MINUTE - world.clock.elapsed)
            sent |= move_task(world, rate=rate)
        until = settled.check if recovery else (lambda: False)
        world.run(until=until, for_seconds=scenario.until_minutes * MINUTE - world.clock.elapsed)
        poison_keys = {world.key_of(b) for b in poison}
        figures = _figures(
            name,
            world,
            rate=rate,
            sent=sent,
            recovery=recovery,
            settled_at=settled.at if recovery else None,
            poison_keys=poison_keys,
        )
    return replace(figures, wall_seconds=round(time.perf_counter() - started, 1))


def _figures(
    name: str,
    world: World,
    *,
    rate: int,
    sent: set[str],
    recovery: float,
    settled_at: float | None,
    poison_keys: set[str],
) -> MoveTaskFigures:
    moved = [d for d in world.journal.deliveries if d.message_id in sent]
    while_down = [d for d in moved if d.at < recovery]
    per_message: dict[str, int] = {}
    for delivery in while_down:
        per_message[delivery.key] = per_message.get(delivery.key, 0) + 1
    return MoveTaskFigures(
        scenario=name,
        rate=rate,
        tasks=len(SCENARIOS[name].starts_minutes),
        moved=len(sent),
        moved_deliveries_while_down=len(while_down),
        most_deliveries_while_down=max(per_message.values(), default=0),
        recovery_to_drained_min=None if settled_at is None else round((settled_at - recovery) / MINUTE, 1),
        poison_deliveries_after_move=sum(1 for d in moved if d.key in poison_keys),
        poison_parked=len(world.journal.parked()),
        in_dlq_at_end=_dlq_depth(world),
        simulated_min=round(world.clock.elapsed / MINUTE, 1),
        wall_seconds=0.0,
    )


def _dlq_depth(world: World) -> int:
    return queue_counts(world.sqs, world.deployment.dlq_url).total


COLUMNS: list[tuple[str, Callable[[MoveTaskFigures], Any]]] = [
    ("scenario", lambda f: SCENARIOS[f.scenario].description),
    ("rate (/s)", lambda f: f.rate),
    ("tasks (requests)", lambda f: f.tasks),
    ("moved", lambda f: f"{f.moved:,}"),
    (
        "moved deliveries while down (most for one)",
        lambda f: f"{f.moved_deliveries_while_down:,} ({f.most_deliveries_while_down})",
    ),
    (
        "recovery -> drained (min)",
        lambda f: "-" if f.recovery_to_drained_min is None else f.recovery_to_drained_min,
    ),
    ("poison deliveries after the move", lambda f: f.poison_deliveries_after_move),
    ("poison parked", lambda f: f.poison_parked),
    ("in the DLQ at the end", lambda f: f.in_dlq_at_end),
    ("simulated (min)", lambda f: f.simulated_min),
    ("wall (s)", lambda f: f.wall_seconds),
]


def render(rows: Sequence[MoveTaskFigures], *, as_json: bool) -> str:
    if as_json:
        return json.dumps([asdict(r) for r in rows], indent=2)
    lines = ["| " + " | ".join(c for c, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(cell(r)) for _, cell in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.move_task", description=__doc__)
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--rate", type=int, default=MOVE_TASK_MAX_RATE, help="MaxNumberOfMessagesPerSecond")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not 1 <= args.rate <= MOVE_TASK_MAX_RATE:
        parser.error(f"--rate: MaxNumberOfMessagesPerSecond is 1 to {MOVE_TASK_MAX_RATE}, not {args.rate}")
    logging.getLogger("moto").setLevel(logging.ERROR)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default_stack()
        for name in args.scenarios:
            rows.append(measure(name, args.rate))
            print(f"{name}: {rows[-1].wall_seconds} s wall", file=sys.stderr)
    print(render(rows, as_json=args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
