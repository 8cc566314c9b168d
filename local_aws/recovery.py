"""Recovery scenarios in simulated time (local_aws.simulation), each returning its figures.

- ``outage``: good orders sent at t=0 while the downstream is down from t=0 to the outage's end;
  run until every order is fulfilled and the DLQ is empty, or a cap;
- ``poison``: poison orders among good ones, a healthy downstream, a fixed span;
- ``poison_then_fresh``: the same, then fresh orders sent into a short outage (what poison costs them);
- ``lone_poison``: one poison order alone, a fixed span;
- ``partial_outage``: live traffic while the downstream refuses one customer domain in five for an
  hour, and takes every other order (issue 40: a partial outage is held, not parked).

Each with one of three consumers (``kit``, a ``KitUse``): ``ON``, the kit consumer
(``kit_order_consumer``) and the re-driver's deployed settings (consumer verdicts on, as the
default stack sets them); ``OFF``, the plain consumer and the same settings with
``consumer_verdicts=False``; ``SILENT``, the plain consumer behind the deployed settings: a consumer
granted the kit (``grant_consumer``) whose handler does not use it yet, where every adopter starts.
Everything else is the default stack's.

"Settled" (the DLQ is drained) means: every good order fulfilled at least once AND the DLQ holds
nothing (ApproximateNumberOfMessages + NotVisible + Delayed = 0), checked after every consumer
invocation and every run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from enum import StrEnum

from local_aws.consumers import ConsumerFactory, kit_order_consumer, order_body, plain_order_consumer
from local_aws.queues import queue_counts
from local_aws.recovery_figures import MINUTE, RecoveryFigures, figures
from local_aws.simulated_time import SIM_EPOCH, SimulatedClock
from local_aws.simulation import World, open_world, without_consumer_verdicts


class KitUse(StrEnum):
    """The consumer behind the source queue, and whether the re-driver expects its verdicts."""

    OFF = "off"  # the plain consumer; consumer verdicts off
    ON = "on"  # the kit consumer; consumer verdicts on (the default stack's)
    SILENT = "silent"  # the plain consumer; consumer verdicts on: granted the kit, not using it

    @property
    def expects_verdicts(self) -> bool:
        return self is not KitUse.OFF

    @property
    def suffix(self) -> str:
        """What a scenario's name says of the consumer."""
        return {KitUse.ON: ", kit", KitUse.OFF: ", no kit", KitUse.SILENT: ", silent kit"}[self]


def outage(
    n_messages: int = 300,
    outage_minutes: float = 60,
    *,
    kit: KitUse = KitUse.OFF,
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
    n_poison: int = 10, n_good: int = 40, *, kit: KitUse = KitUse.OFF, hours: float = 6, seed: int = 7
) -> RecoveryFigures:
    """Poison orders among good ones, sent at t=0 in a shuffled order; a healthy downstream."""
    rng = random.Random(seed)
    good, bad = _good_and_poison(n_good, n_poison, rng)
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
    kit: KitUse = KitUse.OFF,
    hours: float = 3,
    seed: int = 7,
) -> RecoveryFigures:
    """The poison scenario; then, at 90 minutes, ``n_fresh`` good orders sent into a 15-minute
    outage of the downstream: they fail and reach the DLQ with the poison's history behind them.
    How long after the outage they wait is what poison can cost them."""
    rng = random.Random(seed)
    good, bad = _good_and_poison(n_good, n_poison, rng)
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


# A notifier's mail provider refuses one recipient domain in five for an hour (issue 40).
DOMAINS = ("alpha.example", "bravo.example", "charlie.example", "delta.example", "echo.example")
REFUSED_DOMAIN = DOMAINS[0]
PARTIAL_POISON_EVERY = 40  # every 40th order of the live traffic is poison (another domain's)


def partial_outage(
    outage_minutes: float = 60,
    *,
    kit: KitUse = KitUse.OFF,
    traffic_minutes: float = 75,
    every_seconds: float = 30,
    cap_hours: float = 4,
    seed: int = 7,
) -> RecoveryFigures:
    """Live traffic: an order every ``every_seconds`` for ``traffic_minutes``, its customers spread
    over five domains; from t=0 the downstream refuses one of them (``DownstreamUnavailable: ...
    Connection refused``) for ``outage_minutes`` while it takes every other order; every 40th order
    is poison. Run until every good order is fulfilled and the DLQ is empty after the domain
    recovered, and every poison order is parked, or a cap."""
    refusal = [(float(SIM_EPOCH), SIM_EPOCH + outage_minutes * MINUTE, REFUSED_DOMAIN)]
    make_consumer = kit_order_consumer if kit is KitUse.ON else plain_order_consumer
    consumer = make_consumer(partial_outages=refusal)
    started = time.perf_counter()  # outside the world: freezegun stops perf_counter too
    recovery = outage_minutes * MINUTE
    adjust = None if kit.expects_verdicts else without_consumer_verdicts
    with open_world(consumer, adjust_settings=adjust) as world:
        good_keys: set[str] = set()
        poison_keys: set[str] = set()
        settled = Settled.of(world, good_keys)

        def drained() -> bool:  # noted once the domain recovered; the traffic goes on regardless
            return world.clock.elapsed >= recovery and settled.check()

        for i in range(int(traffic_minutes * MINUTE // every_seconds)):
            poison = i % PARTIAL_POISON_EVERY == PARTIAL_POISON_EVERY // 2
            customer = f"c-{i}@{DOMAINS[i % len(DOMAINS)]}"
            body = order_body(f"o-{i:05d}", rng=random.Random(seed + i), poison=poison, customer=customer)
            world.send([body])
            (poison_keys if poison else good_keys).add(world.key_of(body))
            world.run(until=lambda: drained() and False, for_seconds=every_seconds)  # notes, never stops
        # then until the poison is parked too
        world.run(
            until=lambda: drained() and poison_keys <= world.journal.parked().keys(),
            for_seconds=cap_hours * 3600 - world.clock.elapsed,
        )
        left = {key for keys in world.keys_in_queues().values() for key in keys}
        simulated, journal = world.clock.elapsed, world.journal
        requests, kit_requests = world.requests, world.consumer_requests
    name = f"partial outage: 1 domain in 5, {outage_minutes:g} min, live traffic"
    return figures(
        name + kit.suffix,
        journal,
        kit=kit,
        good_keys=good_keys,
        poison_keys=poison_keys,
        outage_minutes=outage_minutes,
        simulated=simulated,
        wall=time.perf_counter() - started,
        settled_at=settled.at,
        left_in_queues=left,
        requests=requests,
        kit_requests=kit_requests,
    )


def lone_poison(*, kit: KitUse = KitUse.OFF, hours: float = 4) -> RecoveryFigures:
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


def _good_and_poison(n_good: int, n_poison: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """Good orders, then poison ones, their contents drawn from ``rng`` in that order."""
    good = [order_body(f"o-{i:05d}", rng=rng) for i in range(n_good)]
    return good, [order_body(f"p-{i:05d}", rng=rng, poison=True) for i in range(n_poison)]


def _consumer(kit: KitUse, outages: Sequence[tuple[float, float]] = ()) -> ConsumerFactory:
    return kit_order_consumer(outages) if kit is KitUse.ON else plain_order_consumer(outages)


def _scenario(
    name: str,
    consumer: ConsumerFactory,
    *,
    kit: KitUse,
    good: list[str],
    poison: list[str],
    outage_minutes: float,
    hours: float,
    stop_when_settled: bool,
    shuffle: random.Random | None = None,
    fresh: Sequence[str] = (),
) -> RecoveryFigures:
    started = time.perf_counter()  # outside the world: freezegun stops perf_counter too
    adjust = None if kit.expects_verdicts else without_consumer_verdicts
    with open_world(consumer, adjust_settings=adjust) as world:
        bodies = good + poison
        if shuffle:
            shuffle.shuffle(bodies)
        world.send(bodies)
        good_keys = {world.key_of(b) for b in good}
        settled = Settled.of(world, good_keys)
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
        name + kit.suffix,
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
    """Notes the first moment every good order is fulfilled and the DLQ is empty: ``fulfilled``
    gives the orders fulfilled so far, ``dlq_total`` what the DLQ holds (visible, in flight,
    delayed); ``check`` runs after every consumer invocation and every run."""

    def __init__(
        self,
        clock: SimulatedClock,
        good_keys: set[str],
        *,
        fulfilled: Callable[[], Collection[str]],
        dlq_total: Callable[[], int],
    ) -> None:
        self._clock = clock
        self._good = good_keys
        self._fulfilled = fulfilled
        self._dlq_total = dlq_total
        self.at: float | None = None

    @classmethod
    def of(cls, world: World, good_keys: set[str]) -> Settled:
        """In an SQS consumer's world: fulfilled by its journal, the deployment's DLQ."""
        return cls(
            world.clock,
            good_keys,
            fulfilled=lambda: world.journal.first_success().keys(),
            dlq_total=lambda: queue_counts(world.sqs, world.deployment.dlq_url).total,
        )

    def check(self) -> bool:
        if self.at is not None:
            return True
        if not self._good <= set(self._fulfilled()) or self._dlq_total():
            return False
        self.at = self._clock.elapsed
        return True
