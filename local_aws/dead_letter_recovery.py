"""Recovery scenarios for the dead letters of a Lambda function and of an EventBridge rule's target,
in simulated time (local_aws.dead_letter_world), each returning its figures.

- ``outage``: the target down from t=0 for ``outage_minutes``; at t=0 its producers send
  ``n_events`` orders, which fail into the DLQ (a function's after Lambda's three tries, at 3
  minutes; a rule's at once). Run until every order was fulfilled once and the DLQ is empty, or a
  cap. ``circuit``: the function guards its downstream with a Powertools breaker the source names.
- ``poison``: poison orders among good ones, all failed into the DLQ during a 5-minute blip of the
  target at t=0 (a poison order fails for good: the function raises InvalidOrder; the rule's target
  refuses its event); then a healthy target for a fixed span.
- ``partial_outage`` (a function only): live traffic while the function's downstream refuses one
  customer domain in five for an hour, and takes every other order (issue 40).

Default settings, no consumer kit (a function's failures come back as new records: nothing carries
the kit's verdicts), the default stack's 5-minute schedule.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from local_aws.consumers import order_body
from local_aws.dead_letter_world import DeadLetterWorld, TargetLog, open_dead_letter_world, order_key
from local_aws.journal import Journal
from local_aws.recovery import DOMAINS, PARTIAL_POISON_EVERY, REFUSED_DOMAIN, Settled
from local_aws.recovery_figures import MINUTE
from local_aws.simulated_time import SIM_EPOCH
from sqs_redriver.protocol.sources import SourceKind

BLIP_MINUTES = 5  # the poison scenario's: long enough for Lambda's three tries (0, 1 and 3 minutes)
TARGET_NAMES = {SourceKind.FUNCTION: "Lambda function", SourceKind.RULE_TARGET: "EventBridge rule target"}


@dataclass(frozen=True)
class DeadLetterFigures:
    scenario: str
    target: str  # SourceKind's value: lambda (a function's destination), eventbridge (a rule target's DLQ)
    circuit: bool  # the function keeps a Powertools breaker the source names
    good: int
    poison: int
    outage_minutes: float  # the poison scenario: its blip
    simulated_minutes: float
    wall_seconds: float
    runs: int
    redriver_invocations: int  # the re-driver's Invoke calls, taken or refused
    redriver_invocations_in_outage: int  # ... while the target was down ("deliveries into the outage")
    refused_in_outage: int  # ... of them refused by Invoke itself (the rule's target, throttled)
    # the function's runs of re-driven events while down, Lambda's retries included
    function_runs_in_outage: int
    dead_letters_written: int  # records the source wrote into the DLQ, the first failures' included
    fulfilled: int  # good orders the downstream took at least once
    duplicates: int  # orders it took more than once
    good_parked: int
    poison_parked: int
    poison_parked_at_minutes: tuple[float, ...]
    poison_redriven: tuple[int, ...]  # the re-driver's Invoke calls of each, before it was parked
    parking_reasons: tuple[str, ...]  # of the poison parked, in the order it was
    breaker_timeline: tuple[tuple[float, str], ...]  # the re-driver's breaker of the source: (minute, state)
    circuit_timeline: tuple[tuple[float, str], ...]  # the function's own breaker, read after each run
    settled_minutes_after_recovery: float | None  # every good order fulfilled, the DLQ empty
    lost: tuple[str, ...]  # good orders neither fulfilled, parked, in the DLQ nor being tried
    redriver_requests: int
    requests_by_operation: tuple[tuple[str, int], ...]

    @property
    def target_name(self) -> str:
        return TARGET_NAMES[SourceKind(self.target)]


def outage(
    kind: SourceKind,
    n_events: int = 300,
    outage_minutes: float = 60,
    *,
    circuit: bool = False,
    cap_hours: float = 8,
    seed: int = 7,
) -> DeadLetterFigures:
    """``n_events`` orders failed into the DLQ by an outage of the target from t=0."""
    good = [order_body(f"o-{i:05d}", rng=random.Random(seed + i)) for i in range(n_events)]
    name = f"outage {n_events} / {outage_minutes:g} min" + (", the function's breaker" if circuit else "")
    return _scenario(
        name, kind, good=good, poison=[], outage_minutes=outage_minutes, hours=cap_hours, settle=True,
        circuit=circuit, seed=seed,
    )  # fmt: skip


def poison(
    kind: SourceKind, n_poison: int = 10, n_good: int = 40, *, hours: float = 6, seed: int = 7
) -> DeadLetterFigures:
    """Poison orders among good ones, failed into the DLQ in a blip at t=0, in a shuffled order."""
    rng = random.Random(seed)
    good = [order_body(f"o-{i:05d}", rng=rng) for i in range(n_good)]
    bad = [order_body(f"p-{i:05d}", rng=rng, poison=True) for i in range(n_poison)]
    return _scenario(
        f"poison {n_poison} among {n_good} good", kind, good=good, poison=bad, outage_minutes=BLIP_MINUTES,
        hours=hours, settle=False, circuit=False, seed=seed, shuffle=rng,
    )  # fmt: skip


def partial_outage(
    kind: SourceKind,
    outage_minutes: float = 60,
    *,
    traffic_minutes: float = 75,
    every_seconds: float = 30,
    cap_hours: float = 4,
    seed: int = 7,
) -> DeadLetterFigures:
    """Live traffic: the function's producers invoke it with an order every ``every_seconds`` for
    ``traffic_minutes``, its customers spread over five domains; from t=0 its downstream refuses one
    of them for ``outage_minutes`` (``DownstreamUnavailable: ... Connection refused``), the others
    go through; every 40th order is poison. Run until every good order was fulfilled and the DLQ
    is empty after the domain recovered, and every poison order is parked, or a cap. A function's
    only (a rule's target is refused whole by Invoke, not by one domain)."""
    if kind is not SourceKind.FUNCTION:
        raise ValueError("a partial outage is played for a function source only")
    started = time.perf_counter()  # outside the world: freezegun stops perf_counter too
    recovery = outage_minutes * MINUTE
    refusal = [(float(SIM_EPOCH), SIM_EPOCH + recovery, REFUSED_DOMAIN)]
    with open_dead_letter_world(kind, partial_outages=refusal, seed=seed) as world:
        good_keys: set[str] = set()
        poison_keys: set[str] = set()
        fulfilled = lambda: world.downstream.submitted.keys()  # noqa: E731
        settled = Settled(world.clock, good_keys, fulfilled=fulfilled, dlq_total=world.dlq_total)

        def drained() -> bool:  # noted once the domain recovered; the traffic goes on regardless
            return world.clock.elapsed >= recovery and settled.check()

        for i in range(int(traffic_minutes * MINUTE // every_seconds)):
            poison = i % PARTIAL_POISON_EVERY == PARTIAL_POISON_EVERY // 2
            customer = f"c-{i}@{DOMAINS[i % len(DOMAINS)]}"
            order = order_body(f"o-{i:05d}", rng=random.Random(seed + i), poison=poison, customer=customer)
            world.produce([order])
            (poison_keys if poison else good_keys).add(order_key(order))
            world.run(until=lambda: drained() and False, for_seconds=every_seconds)  # notes, never stops
        # then until the poison is parked too
        world.run(
            until=lambda: drained() and poison_keys <= world.journal.parked().keys(),
            for_seconds=cap_hours * 3600 - world.clock.elapsed,
        )
        observed = _observed(world)
    return figures(
        f"partial outage: 1 domain in 5, {outage_minutes:g} min, live traffic",
        kind,
        observed,
        circuit=False,
        good_keys=good_keys,
        poison_keys=poison_keys,
        outage_minutes=outage_minutes,
        settled_at=settled.at,
        wall=time.perf_counter() - started,
    )


def _observed(world: DeadLetterWorld) -> Observed:
    """What the world left, read before it closes."""
    return Observed(
        world.log,
        world.journal,
        submitted=dict(world.downstream.submitted),
        in_dlq=set(world.dlq_keys()),
        being_tried=world.target.pending_keys(),
        reasons=world.parking_reasons(),
        requests=world.requests,
        simulated=world.clock.elapsed,
    )


def _scenario(
    name: str,
    kind: SourceKind,
    *,
    good: list[str],
    poison: list[str],
    outage_minutes: float,
    hours: float,
    settle: bool,
    circuit: bool,
    seed: int,
    shuffle: random.Random | None = None,
) -> DeadLetterFigures:
    started = time.perf_counter()  # outside the world: freezegun stops perf_counter too
    outages = [(float(SIM_EPOCH), SIM_EPOCH + outage_minutes * MINUTE)]
    with open_dead_letter_world(kind, outages=outages, circuit=circuit, seed=seed) as world:
        orders = good + poison
        if shuffle:
            shuffle.shuffle(orders)
        world.produce(orders)
        good_keys = {order_key(order) for order in good}
        fulfilled = lambda: world.downstream.submitted.keys()  # noqa: E731
        settled = Settled(world.clock, good_keys, fulfilled=fulfilled, dlq_total=world.dlq_total)
        world.run(until=settled.check if settle else lambda: False, for_seconds=hours * 3600)
        observed = _observed(world)
    return figures(
        name,
        kind,
        observed,
        circuit=circuit,
        good_keys=good_keys,
        poison_keys={order_key(order) for order in poison},
        outage_minutes=outage_minutes,
        settled_at=settled.at if settle else None,
        wall=time.perf_counter() - started,
    )


@dataclass(frozen=True)
class Observed:
    """What a world left when its scenario ended, read before it closed."""

    log: TargetLog
    journal: Journal
    submitted: dict[str, int]  # what the downstream took, per order
    in_dlq: set[str]
    being_tried: set[str]  # orders whose invocation Lambda is still trying
    reasons: dict[str, str]  # why each parked order was parked
    requests: dict[str, int]
    simulated: float


def figures(
    name: str,
    kind: SourceKind,
    observed: Observed,
    *,
    circuit: bool,
    good_keys: set[str],
    poison_keys: set[str],
    outage_minutes: float,
    settled_at: float | None,
    wall: float,
) -> DeadLetterFigures:
    """A scenario's figures; the outage ends (recovery) at ``outage_minutes``."""
    recovery = outage_minutes * MINUTE
    parked = observed.journal.parked()
    accounted = observed.submitted.keys() | parked.keys() | observed.in_dlq | observed.being_tried
    return DeadLetterFigures(
        scenario=name,
        target=kind.value,
        circuit=circuit,
        good=len(good_keys),
        poison=len(poison_keys),
        outage_minutes=outage_minutes,
        simulated_minutes=round(observed.simulated / MINUTE, 1),
        wall_seconds=round(wall, 1),
        runs=len(observed.journal.runs),
        **_traffic(observed.log, recovery),
        fulfilled=len(good_keys & observed.submitted.keys()),
        duplicates=sum(1 for count in observed.submitted.values() if count > 1),
        good_parked=len(good_keys & parked.keys()),
        **_poison_parkings(observed, poison_keys),
        breaker_timeline=tuple(
            (round(at / MINUTE, 1), state) for at, state in observed.journal.breaker_changes()
        ),
        circuit_timeline=_changes(observed.log.circuit),
        settled_minutes_after_recovery=None
        if settled_at is None
        else round((settled_at - recovery) / MINUTE, 1),
        lost=tuple(sorted(good_keys - accounted)),
        redriver_requests=sum(observed.requests.values()),
        requests_by_operation=tuple(sorted(observed.requests.items())),
    )


class _Traffic(TypedDict):
    redriver_invocations: int
    redriver_invocations_in_outage: int
    refused_in_outage: int
    function_runs_in_outage: int
    dead_letters_written: int


def _traffic(log: TargetLog, recovery: float) -> _Traffic:
    """The re-driver's invocations, in all and before the ``recovery``, and what they cost the
    function while it was down."""
    redriven = [i for i in log.invocations if i.by_redriver]
    in_outage = [i for i in redriven if i.at < recovery]
    return _Traffic(
        redriver_invocations=len(redriven),
        redriver_invocations_in_outage=len(in_outage),
        refused_in_outage=sum(1 for i in in_outage if i.refused),
        function_runs_in_outage=sum(1 for r in log.runs if r.by_redriver and r.at < recovery),
        dead_letters_written=len(log.dead_lettered),
    )


class _PoisonParkings(TypedDict):
    poison_parked: int
    poison_parked_at_minutes: tuple[float, ...]
    poison_redriven: tuple[int, ...]
    parking_reasons: tuple[str, ...]


def _poison_parkings(observed: Observed, poison_keys: set[str]) -> _PoisonParkings:
    """The poison parked, in the order it was: when, after how many re-drives, and why."""
    parked = sorted(
        (p for p in observed.journal.parked().values() if p.key in poison_keys), key=lambda p: p.at
    )
    redriven = [i for i in observed.log.invocations if i.by_redriver]
    return _PoisonParkings(
        poison_parked=len(parked),
        poison_parked_at_minutes=tuple(round(p.at / MINUTE, 1) for p in parked),
        poison_redriven=tuple(sum(1 for i in redriven if i.key == p.key and i.at <= p.at) for p in parked),
        parking_reasons=tuple(observed.reasons.get(p.key, "") for p in parked),
    )


def _changes(readings: Sequence[tuple[float, str]]) -> tuple[tuple[float, str], ...]:
    """(minute, state) each time a reading differs from the one before."""
    changes: list[tuple[float, str]] = []
    for at, state in readings:
        if not changes or changes[-1][1] != state:
            changes.append((round(at / MINUTE, 1), state))
    return tuple(changes)
