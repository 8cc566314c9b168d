"""The demo's second act: a consumer without the consumer kit, in simulated time.

Without the kit the re-driver judges a consumer from its source queue's CloudWatch metrics
(decide/consumer_health.py, decide/suspicion.py): a message that keeps failing while the consumer
processes others is a suspect, parked at the suspect limit with the metric-based reason. Those
metrics arrive minutes late and the default schedule is ``rate(5 minutes)``, so this takes about an
hour: more than a real-time act can show. The act plays it in local_aws.simulation's world: the
default stack (not the demo profile) deployed into in-process moto, the real re-driver composed
from the deployed function's settings with consumer verdicts off (no kit), the plain order
consumer, the queues' metrics published into moto's CloudWatch with a 2-minute lag, and a clock
that jumps from event to event. Poison orders among good ones are sent at minute 0, nothing else;
the world runs until every good order is fulfilled, every poison one parked and the queues are
empty, or the cap.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from local_aws.clients import ClientProxy
from local_aws.queues import mark_data

if TYPE_CHECKING:
    from local_aws.simulation import World


@dataclass(frozen=True)
class NoKitOptions:
    good: int = 20
    poison: int = 5
    cap_minutes: float = 120.0
    seed: int = 7


@dataclass(frozen=True)
class ParkedOrder:
    """One order as the parking lot held it: its parked mark's cause and reason."""

    order_id: str
    poison: bool
    cause: str  # "suspect": parked on its queue's metrics
    why: str
    redrives: int
    parked_at_minutes: float  # found in the parking lot after the run that parked it


@dataclass(frozen=True)
class BreakerReading:
    """The breaker record (BREAKER#<source queue URL>) read after a run."""

    at_minutes: float
    state: str = "CLOSED"
    evidence: str = "none"  # what moved it last (sqs_redriver.core.breaker); "none": never moved
    version: int = 0


@dataclass
class NoKitProgress:
    """A snapshot for the live view."""

    minutes: float = 0.0
    runs: int = 0
    fulfilled: int = 0
    parked: int = 0
    in_source: int = 0
    in_dlq: int = 0
    breaker: BreakerReading = field(default_factory=lambda: BreakerReading(0.0))


@dataclass
class NoKitAct:
    good_orders: int
    poison_orders: int
    schedule: str
    suspect_limit: int
    metrics_lag_seconds: float  # the world's CloudWatch publishes each minute this late
    simulated_minutes: float
    wall_seconds: float  # deployment into moto and synthesis of the default stack included
    runs: int
    redrives: int
    deliveries: int
    fates: dict[str, str]  # order id -> fulfilled | parked | in a queue | lost
    fulfilled_more_than_once: list[str]
    parked: list[ParkedOrder]
    breaker: BreakerReading  # after the last run
    breaker_changes: list[BreakerReading]  # each reading whose state or evidence differs
    settled: bool  # every good order fulfilled, every poison one parked, the queues empty
    problems: list[str] = field(default_factory=list)


class ParkedMarks(ClientProxy):
    """The world's queue client, keeping the parked mark of each message the world takes out of
    the parking lot (its journal keeps the reason, not the cause)."""

    def __init__(self, client: Any, parking_lot_url: str, key: Callable[[str], str]) -> None:
        super().__init__(client)
        self._url = parking_lot_url
        self._key = key
        self.marks: dict[str, dict[str, Any]] = {}

    def receive_message(self, **kwargs: Any) -> Any:
        response = self._client.receive_message(**kwargs)
        if kwargs.get("QueueUrl") == self._url:
            for message in response.get("Messages", []):
                self.marks[self._key(message["Body"])] = dict(mark_data(message).get("parked", {}))
        return response


def run_no_kit_act(
    options: NoKitOptions, on_progress: Callable[[NoKitProgress], None] = lambda _: None
) -> NoKitAct:
    """Play the act in a fresh world and account for every order."""
    # Imported here, after the first act: its handlers import lambdas/ anew under their functions'
    # environments (demo/emulators.py), and the world must use those modules, not older copies.
    from local_aws.consumers import order_body, plain_order_consumer
    from local_aws.simulation import open_world, without_consumer_verdicts

    rng = random.Random(options.seed)
    good = [order_body(f"o-{i:05d}", rng=rng) for i in range(options.good)]
    poison = [order_body(f"p-{i:05d}", rng=rng, poison=True) for i in range(options.poison)]
    bodies = good + poison
    rng.shuffle(bodies)
    started = time.perf_counter()  # outside the world: freezegun stops perf_counter too
    with open_world(plain_order_consumer(), adjust_settings=without_consumer_verdicts) as world:
        marks = ParkedMarks(world.sqs, world.deployment.parking_lot_url, world.key_of)
        world.sqs = marks
        world.send(bodies)
        watch = _Watch(world, {world.key_of(b) for b in good}, {world.key_of(b) for b in poison}, on_progress)
        world.run(until=watch.check, for_seconds=options.cap_minutes * 60)
        act = watch.account(marks.marks)
    act.wall_seconds = round(time.perf_counter() - started, 1)
    return act


class _Watch:
    """Follows the world after each consumer invocation and each run; accounts at the end."""

    def __init__(
        self,
        world: World,
        good: set[str],
        poison: set[str],
        on_progress: Callable[[NoKitProgress], None],
    ) -> None:
        self.world = world
        self.good = good
        self.poison = poison
        self.on_progress = on_progress
        self.progress = NoKitProgress()
        self.changes: list[BreakerReading] = []
        self._minute = -1

    def check(self) -> bool:
        """Refresh the progress (and the view, once per simulated minute or run); True once settled."""
        world, progress = self.world, self.progress
        journal = world.journal
        ran = len(journal.runs) != progress.runs
        if ran:
            progress.runs = len(journal.runs)
            self._read_breaker()
        progress.fulfilled = len(self.good & journal.first_success().keys())
        progress.parked = len(journal.parked())
        queues = world.keys_in_queues()
        progress.in_source, progress.in_dlq = len(queues["source"]), len(queues["dlq"])
        progress.minutes = world.clock.elapsed / 60
        if ran or int(progress.minutes) != self._minute:
            self._minute = int(progress.minutes)
            self.on_progress(progress)
        return self._settled(queues)

    def _settled(self, queues: dict[str, list[str]]) -> bool:
        journal = self.world.journal
        return (
            self.good <= journal.first_success().keys()
            and self.poison <= journal.parked().keys()
            and not any(queues.values())
        )

    def _read_breaker(self) -> None:
        settings = self.world.settings
        item = self.world.dynamodb.get_item(
            TableName=settings.table_name, Key={"pk": {"S": settings.breaker_key}}, ConsistentRead=True
        ).get("Item", {})
        reading = BreakerReading(
            at_minutes=round(self.world.clock.elapsed / 60, 1),
            state=item.get("state", {}).get("S", "CLOSED"),
            evidence=item.get("evidence", {}).get("S", "none"),
            version=int(item.get("version", {}).get("N", 0)),
        )
        last = self.changes[-1] if self.changes else BreakerReading(0.0)
        if (reading.state, reading.evidence) != (last.state, last.evidence):
            self.changes.append(reading)
        self.progress.breaker = reading

    def account(self, marks: dict[str, dict[str, Any]]) -> NoKitAct:
        """Where every order ended up, and what does not balance."""
        world, journal = self.world, self.world.journal
        successes = journal.successes()
        in_queues = {key for keys in world.keys_in_queues().values() for key in keys}
        places = (
            ("parked", journal.parked().keys()),
            ("fulfilled", successes.keys()),
            ("in a queue", in_queues),
        )
        fates = {
            key: next((fate for fate, keys in places if key in keys), "lost")
            for key in sorted(self.good | self.poison)
        }
        act = NoKitAct(
            good_orders=len(self.good),
            poison_orders=len(self.poison),
            schedule=world.deployment.schedule_expression,
            suspect_limit=world.settings.suspect_limit,
            metrics_lag_seconds=world.metrics.options.lag_seconds,
            simulated_minutes=round(world.clock.elapsed / 60, 1),
            wall_seconds=0.0,
            runs=len(journal.runs),
            redrives=sum(run.redriven for run in journal.runs),
            deliveries=len(journal.deliveries),
            fates=fates,
            fulfilled_more_than_once=sorted(key for key, count in successes.items() if count > 1),
            parked=[
                ParkedOrder(
                    order_id=p.key,
                    poison=p.key in self.poison,
                    cause=str(marks.get(p.key, {}).get("cause", "")),
                    why=p.why,
                    redrives=p.redrives,
                    parked_at_minutes=round(p.at / 60, 1),
                )
                for p in sorted(journal.parkings, key=lambda p: (p.at, p.key))
            ],
            breaker=self.progress.breaker,
            breaker_changes=self.changes,
            settled=self._settled(world.keys_in_queues()),
        )
        act.problems = problems(act, self.good, self.poison)
        return act


def problems(act: NoKitAct, good: set[str], poison: set[str]) -> list[str]:
    """What does not balance: an order lost, a good one parked or not fulfilled exactly once, a
    poison one fulfilled or not parked by the cap."""
    found = []
    lost = sorted(key for key, fate in act.fates.items() if fate == "lost")
    if lost:
        found.append(f"{len(lost)} order(s) lost: {lost[:10]}")
    good_parked = sorted(p.order_id for p in act.parked if p.order_id in good)
    if good_parked:
        found.append(f"good orders parked: {good_parked[:10]}")
    if act.fulfilled_more_than_once:
        found.append(f"fulfilled more than once: {act.fulfilled_more_than_once[:10]}")
    poison_fulfilled = sorted(key for key in poison if act.fates[key] == "fulfilled")
    if poison_fulfilled:
        found.append(f"poison orders fulfilled: {poison_fulfilled[:10]}")
    if not act.settled:
        waiting = sorted(key for key, fate in act.fates.items() if fate == "in a queue")
        found.append(f"not settled after {act.simulated_minutes:g} simulated minutes: {waiting[:10]} waiting")
    return found
