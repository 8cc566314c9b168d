"""What a recovery scenario (local_aws.recovery) measured, from its world's journal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from local_aws.journal import Journal

MINUTE = 60.0


@dataclass(frozen=True)
class RecoveryFigures:
    scenario: str
    kit: str  # local_aws.recovery.KitUse: off (plain, no verdicts), on (the kit), silent (plain, verdicts on)
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


def figures(
    name: str,
    journal: Journal,
    *,
    kit: str,
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
    successes = journal.successes()
    parked = journal.parked()
    timeline = journal.breaker_changes()
    opened, closed_after = _opened_and_closed_after(timeline, recovery)
    return RecoveryFigures(
        scenario=name,
        kit=kit,
        good=len(good_keys),
        poison=len(poison_keys),
        outage_minutes=outage_minutes,
        simulated_minutes=round(simulated / MINUTE, 1),
        wall_seconds=round(wall, 1),
        **_traffic(journal, recovery),
        fulfilled=len(good_keys & successes.keys()),
        duplicates=sum(1 for count in successes.values() if count > 1),
        good_parked=len(good_keys & parked.keys()),
        **_poison_parkings(journal, poison_keys),
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


class _Traffic(TypedDict):
    runs: int
    redrives: int
    redrives_in_outage: int
    deliveries: int
    redriven_deliveries: int
    redriven_deliveries_in_outage: int
    most_redriven_deliveries_in_outage: int


def _traffic(journal: Journal, recovery: float) -> _Traffic:
    """The runs, their re-drives and the deliveries, in all and before the ``recovery``."""
    in_outage = [d for d in journal.deliveries if d.redriven and d.at < recovery]
    per_message: dict[str, int] = {}
    for delivery in in_outage:
        per_message[delivery.key] = per_message.get(delivery.key, 0) + 1
    return _Traffic(
        runs=len(journal.runs),
        redrives=sum(run.redriven for run in journal.runs),
        redrives_in_outage=sum(run.redriven for run in journal.runs if run.at < recovery),
        deliveries=len(journal.deliveries),
        redriven_deliveries=sum(1 for d in journal.deliveries if d.redriven),
        redriven_deliveries_in_outage=len(in_outage),
        most_redriven_deliveries_in_outage=max(per_message.values(), default=0),
    )


class _PoisonParkings(TypedDict):
    poison_parked: int
    poison_redrives_before_parking: tuple[int, ...]
    poison_parked_at_minutes: tuple[float, ...]
    poison_parked_after_last_delivery_minutes: tuple[float, ...]
    poison_parked_errors: tuple[dict[str, Any], ...]


def _poison_parkings(journal: Journal, poison_keys: set[str]) -> _PoisonParkings:
    """The poison parked, in the order it was: its re-drives, when, and its error."""
    parked = journal.parked()
    poison_parked = sorted((p for p in parked.values() if p.key in poison_keys), key=lambda p: p.at)
    last_delivery: dict[str, float] = {}  # a parked poison's last delivery before it was parked
    for delivery in journal.deliveries:
        parking = parked.get(delivery.key)
        if delivery.key in poison_keys and parking is not None and delivery.at <= parking.at:
            last_delivery[delivery.key] = delivery.at
    return _PoisonParkings(
        poison_parked=len(poison_parked),
        poison_redrives_before_parking=tuple(p.redrives for p in poison_parked),
        poison_parked_at_minutes=tuple(round(p.at / MINUTE, 1) for p in poison_parked),
        poison_parked_after_last_delivery_minutes=tuple(
            round((p.at - last_delivery.get(p.key, 0.0)) / MINUTE, 1) for p in poison_parked
        ),
        poison_parked_errors=tuple(dict(p.error or {}) for p in poison_parked),
    )


def _opened_and_closed_after(
    timeline: list[tuple[float, str]], recovery: float
) -> tuple[float | None, float | None]:
    """When the breaker first opened, and its first CLOSED reading after that, from the recovery."""
    opened = next((at for at, state in timeline if state == "OPEN"), None)
    closed_after = next(
        (
            at
            for at, state in timeline
            if state == "CLOSED" and opened is not None and at > opened and at >= recovery
        ),
        None,
    )
    return opened, closed_after


def _minutes_after(at: float | None, recovery: float) -> float | None:
    return None if at is None else round((at - recovery) / MINUTE, 1)
