"""Recovery scenarios in simulated time (local_aws.simulation), each returning its figures.

- ``outage``: good orders sent at t=0 while the downstream is down from t=0 to the outage's end;
  run until every order is fulfilled and the DLQ is empty, or a cap;
- ``poison``: poison orders among good ones, a healthy downstream, a fixed span;
- ``lone_poison``: one poison order alone, a fixed span.

Each with or without the consumer kit (``kit``): with it, the kit consumer
(``kit_order_consumer``) and the re-driver's deployed settings (consumer verdicts on, as the
default stack sets them); without it, the plain consumer and the same settings with
``consumer_verdicts=False``. Everything else is the default stack's.

"Settled" (the DLQ is drained) means: every good order fulfilled at least once AND the DLQ holds
nothing (ApproximateNumberOfMessages + NotVisible + Delayed = 0), checked after every consumer
invocation and every run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from local_aws.consumers import ConsumerFactory, kit_order_consumer, order_body, plain_order_consumer
from local_aws.journal import Journal
from local_aws.queues import queue_counts
from local_aws.simulated_time import SIM_EPOCH
from local_aws.simulation import World, open_world, without_consumer_verdicts

MINUTE = 60.0


@dataclass(frozen=True)
class RecoveryFigures:
    scenario: str
    kit: bool  # the consumer kit consumer, consumer verdicts on; else the plain one, verdicts off
    good: int
    poison: int
    outage_minutes: float
    simulated_minutes: float  # how long the world ran
    wall_seconds: float  # deployment into moto included
    runs: int
    redrives: int  # messages the re-driver sent back to the source queue (every re-drive counts)
    redrives_in_outage: int  # ... by runs that started before the outage's end
    deliveries: int  # every message handed to the consumer
    redriven_deliveries: int  # deliveries of messages carrying the re-driver's mark (n >= 1)
    redriven_deliveries_in_outage: int  # ... while the downstream was down
    most_redriven_deliveries_in_outage: int  # ... of the message that had the most
    fulfilled: int  # good orders the consumer succeeded with at least once
    duplicates: int  # orders it succeeded with more than once
    good_parked: int
    poison_parked: int
    poison_redrives_before_parking: tuple[int, ...]
    poison_parked_at_minutes: tuple[float, ...]
    # From the poison's last delivery (after which the kit dead-letters it at once; SQS, without
    # the kit, when its visibility timeout ends) to the run that parked it.
    poison_parked_after_last_delivery_minutes: tuple[float, ...]
    poison_parked_errors: tuple[dict[str, Any], ...]  # the consumer kit's ``err`` in the mark, or {}
    breaker_timeline: tuple[tuple[float, str], ...]  # (minute, state) at each change, read after runs
    breaker_opened_at_minutes: float | None
    breaker_final: str
    # The first CLOSED reading after the breaker first opened, from the recovery (the outage's end;
    # t=0 without an outage). None: it never opened, or never closed again.
    closed_minutes_after_recovery: float | None
    settled_minutes_after_recovery: float | None  # outages: every good order fulfilled, DLQ empty
    lost: tuple[str, ...]  # good orders neither fulfilled, nor parked, nor in a queue
    parked_and_fulfilled: tuple[str, ...]
    redriver_requests: int
    requests_by_operation: tuple[tuple[str, int], ...]
    kit_requests: int  # the consumer kit's AWS calls (0 without the kit)
    kit_requests_by_operation: tuple[tuple[str, int], ...]
    # poison_then_fresh: from the end of the fresh failures' outage to every one of them fulfilled
    fresh: int = 0
    fresh_consumed_minutes_after_recovery: float | None = None

    @property
    def redriver_requests_per_redrive(self) -> float | None:
        return round(self.redriver_requests / self.redrives, 2) if self.redrives else None

    @property
    def kit_requests_per_redrive(self) -> float | None:
        return round(self.kit_requests / self.redrives, 2) if self.redrives else None


def outage(
    n_messages: int = 300,
    outage_minutes: float = 60,
    *,
    kit: bool = False,
    n_poison: int = 0,
    cap_hours: float = 8,
    seed: int = 7,
) -> RecoveryFigures:
    """``n_messages`` good orders (and ``n_poison`` poison ones, shuffled among them) sent at t=0
    into a downstream that is down until the outage ends."""
    windows = [(SIM_EPOCH, SIM_EPOCH + outage_minutes * MINUTE)]
    good = [order_body(f"o-{i:05d}", rng=random.Random(seed + i)) for i in range(n_messages)]
    rng = random.Random(seed)
    bad = [order_body(f"p-{i:05d}", rng=rng, poison=True) for i in range(n_poison)]
    return _scenario(
        f"outage {n_messages} msgs / {outage_minutes:g} min" + (f" + {n_poison} poison" if n_poison else ""),
        _consumer(kit, windows),
        kit=kit,
        good=good,
        poison=bad,
        outage_minutes=outage_minutes,
        hours=cap_hours,
        stop_when_settled=True,
        shuffle=rng if n_poison else None,
    )


def poison(
    n_poison: int = 10, n_good: int = 40, *, kit: bool = False, hours: float = 6, seed: int = 7
) -> RecoveryFigures:
    """Poison orders among good ones, sent at t=0 in a shuffled order; a healthy downstream."""
    rng = random.Random(seed)
    good = [order_body(f"o-{i:05d}", rng=rng) for i in range(n_good)]
    bad = [order_body(f"p-{i:05d}", rng=rng, poison=True) for i in range(n_poison)]
    return _scenario(
        f"poison {n_poison} among {n_good} good",
        _consumer(kit),
        kit=kit,
        good=good,
        poison=bad,
        outage_minutes=0,
        hours=hours,
        stop_when_settled=False,
        shuffle=rng,
    )


FRESH_AT_MINUTES = 90.0
FRESH_OUTAGE_MINUTES = 15.0


def poison_then_fresh(
    n_poison: int = 10,
    n_good: int = 40,
    n_fresh: int = 20,
    *,
    kit: bool = False,
    hours: float = 3,
    seed: int = 7,
) -> RecoveryFigures:
    """The poison scenario; then, at 90 minutes, ``n_fresh`` good orders sent into a 15-minute
    outage of the downstream: they fail and reach the DLQ with the poison's history behind them.
    How long after the outage they wait is what poison can cost them."""
    rng = random.Random(seed)
    good = [order_body(f"o-{i:05d}", rng=rng) for i in range(n_good)]
    bad = [order_body(f"p-{i:05d}", rng=rng, poison=True) for i in range(n_poison)]
    fresh = [order_body(f"f-{i:05d}", rng=rng) for i in range(n_fresh)]
    start = SIM_EPOCH + FRESH_AT_MINUTES * MINUTE
    outage = (start, start + FRESH_OUTAGE_MINUTES * MINUTE)
    return _scenario(
        f"poison {n_poison} among {n_good} good, then {n_fresh} fresh failures",
        _consumer(kit, [outage]),
        kit=kit,
        good=good,
        poison=bad,
        outage_minutes=0,
        hours=hours,
        stop_when_settled=False,
        shuffle=rng,
        fresh=fresh,
    )


def lone_poison(*, kit: bool = False, hours: float = 4) -> RecoveryFigures:
    """One poison order alone, a healthy downstream."""
    bad = [order_body("p-00000", rng=random.Random(0), poison=True)]
    return _scenario(
        "lone poison",
        _consumer(kit),
        kit=kit,
        good=[],
        poison=bad,
        outage_minutes=0,
        hours=hours,
        stop_when_settled=False,
    )


def _consumer(kit: bool, outages: Sequence[tuple[float, float]] = ()) -> ConsumerFactory:
    return kit_order_consumer(outages) if kit else plain_order_consumer(outages)


def _scenario(
    name: str,
    consumer: ConsumerFactory,
    *,
    kit: bool,
    good: list[str],
    poison: list[str],
    outage_minutes: float,
    hours: float,
    stop_when_settled: bool,
    shuffle: random.Random | None = None,
    fresh: Sequence[str] = (),
) -> RecoveryFigures:
    started = time.perf_counter()  # outside the world: freezegun stops perf_counter too
    with open_world(consumer, adjust_settings=None if kit else without_consumer_verdicts) as world:
        bodies = good + poison
        if shuffle:
            shuffle.shuffle(bodies)
        world.send(bodies)
        good_keys = {world.key_of(b) for b in good}
        settled = Settled(world, good_keys)
        if fresh:
            world.run(for_seconds=FRESH_AT_MINUTES * MINUTE)
            world.send(list(fresh))
        remaining = hours * 3600 - world.clock.elapsed
        world.run(until=settled.check if stop_when_settled else lambda: False, for_seconds=remaining)
        left = {key for keys in world.keys_in_queues().values() for key in keys}
        simulated = world.clock.elapsed
        requests = world.requests
        kit_requests = world.consumer_requests
        journal = world.journal
        poison_keys = {world.key_of(b) for b in poison}
        fresh_keys = {world.key_of(b) for b in fresh}
    result = figures(
        name + (", kit" if kit else ", no kit"),
        journal,
        kit=kit,
        good_keys=good_keys,
        poison_keys=poison_keys,
        outage_minutes=outage_minutes,
        simulated=simulated,
        wall=time.perf_counter() - started,
        settled_at=settled.at if stop_when_settled else None,
        left_in_queues=left,
        requests=requests,
        kit_requests=kit_requests,
    )
    if not fresh:
        return result
    consumed = journal.first_success()
    recovered = (FRESH_AT_MINUTES + FRESH_OUTAGE_MINUTES) * MINUTE
    last = max((consumed.get(key) for key in fresh_keys), key=lambda at: at or float("inf"), default=None)
    waited = (
        None if last is None or not fresh_keys <= consumed.keys() else round((last - recovered) / MINUTE, 1)
    )
    return replace(result, fresh=len(fresh_keys), fresh_consumed_minutes_after_recovery=waited)


class Settled:
    """Notes the first moment every good order is fulfilled and the DLQ is empty."""

    def __init__(self, world: World, good_keys: set[str]) -> None:
        self._world = world
        self._good = good_keys
        self.at: float | None = None

    def check(self) -> bool:
        if self.at is not None:
            return True
        fulfilled = self._world.journal.first_success().keys()
        if not self._good <= fulfilled:
            return False
        if queue_counts(self._world.sqs, self._world.deployment.dlq_url).total:
            return False
        self.at = self._world.clock.elapsed
        return True


def figures(
    name: str,
    journal: Journal,
    *,
    kit: bool,
    good_keys: set[str],
    poison_keys: set[str],
    outage_minutes: float,
    simulated: float,
    wall: float,
    settled_at: float | None,
    left_in_queues: set[str],
    requests: dict[str, int],
    kit_requests: dict[str, int],
) -> RecoveryFigures:
    """A scenario's figures from its world's journal; the outage ends (recovery) at ``outage_minutes``."""
    recovery = outage_minutes * MINUTE
    in_outage = [d for d in journal.deliveries if d.redriven and d.at < recovery]
    per_message: dict[str, int] = {}
    for delivery in in_outage:
        per_message[delivery.key] = per_message.get(delivery.key, 0) + 1
    successes = journal.successes()
    parked = journal.parked()
    poison_parked = sorted((p for p in parked.values() if p.key in poison_keys), key=lambda p: p.at)
    last_delivery: dict[str, float] = {}  # a parked poison's last delivery before it was parked
    for delivery in journal.deliveries:
        parking = parked.get(delivery.key)
        if delivery.key in poison_keys and parking is not None and delivery.at <= parking.at:
            last_delivery[delivery.key] = delivery.at
    timeline = journal.breaker_changes()
    opened = next((at for at, state in timeline if state == "OPEN"), None)
    closed_after = next(
        (
            at
            for at, state in timeline
            if state == "CLOSED" and opened is not None and at > opened and at >= recovery
        ),
        None,
    )
    return RecoveryFigures(
        scenario=name,
        kit=kit,
        good=len(good_keys),
        poison=len(poison_keys),
        outage_minutes=outage_minutes,
        simulated_minutes=round(simulated / MINUTE, 1),
        wall_seconds=round(wall, 1),
        runs=len(journal.runs),
        redrives=sum(run.redriven for run in journal.runs),
        redrives_in_outage=sum(run.redriven for run in journal.runs if run.at < recovery),
        deliveries=len(journal.deliveries),
        redriven_deliveries=sum(1 for d in journal.deliveries if d.redriven),
        redriven_deliveries_in_outage=len(in_outage),
        most_redriven_deliveries_in_outage=max(per_message.values(), default=0),
        fulfilled=len(good_keys & successes.keys()),
        duplicates=sum(1 for count in successes.values() if count > 1),
        good_parked=len(good_keys & parked.keys()),
        poison_parked=len(poison_parked),
        poison_redrives_before_parking=tuple(p.redrives for p in poison_parked),
        poison_parked_at_minutes=tuple(round(p.at / MINUTE, 1) for p in poison_parked),
        poison_parked_after_last_delivery_minutes=tuple(
            round((p.at - last_delivery.get(p.key, 0.0)) / MINUTE, 1) for p in poison_parked
        ),
        poison_parked_errors=tuple(dict(p.error or {}) for p in poison_parked),
        breaker_timeline=tuple((round(at / MINUTE, 1), state) for at, state in timeline),
        breaker_opened_at_minutes=None if opened is None else round(opened / MINUTE, 1),
        breaker_final=journal.runs[-1].breaker_state if journal.runs else "CLOSED",
        closed_minutes_after_recovery=_minutes_after(closed_after, recovery),
        settled_minutes_after_recovery=_minutes_after(settled_at, recovery),
        lost=tuple(sorted(good_keys - successes.keys() - parked.keys() - left_in_queues)),
        parked_and_fulfilled=tuple(sorted(parked.keys() & successes.keys())),
        redriver_requests=sum(requests.values()),
        requests_by_operation=tuple(sorted(requests.items())),
        kit_requests=sum(kit_requests.values()),
        kit_requests_by_operation=tuple(sorted(kit_requests.items())),
    )


def _minutes_after(at: float | None, recovery: float) -> float | None:
    return None if at is None else round((at - recovery) / MINUTE, 1)
