"""What the simulated world (local_aws.simulation) records as it runs: what users live through.

Times are simulated seconds since the world started.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Delivery:
    """One message handed to the consumer, and what the consumer said about it."""

    at: float
    key: str  # the business key (order id); the MessageId changes on every re-drive
    message_id: str
    redrives: int  # ``n`` of the re-driver's mark; 0 for a message never re-driven
    ok: bool  # the consumer fulfilled it (a record the kit dead-lettered is handled, not ok)

    @property
    def redriven(self) -> bool:
        return self.redrives >= 1


@dataclass(frozen=True)
class Parking:
    at: float  # when the world found it in the parking lot (after the run that parked it)
    key: str
    redrives: int  # re-drives before it was parked
    why: str
    error: dict[str, Any] | None = None  # the consumer kit's failure in the mark (``err``), if any


@dataclass(frozen=True)
class Run:
    """One scheduled run of the re-driver, and the breaker record read back after it."""

    at: float
    seconds: float  # simulated time the run took (its waits let the world move)
    mode: str
    received: int
    redriven: int
    parked: int
    returned: int
    errors: int
    stopped_because: str
    breaker_state: str  # the state table's BREAKER# item after the run


@dataclass
class Journal:
    deliveries: list[Delivery] = field(default_factory=list)
    parkings: list[Parking] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    sent: dict[str, float] = field(default_factory=dict)  # key -> when it was first sent

    def first_success(self) -> dict[str, float]:
        """Key -> when the consumer first succeeded with it."""
        found: dict[str, float] = {}
        for delivery in self.deliveries:
            if delivery.ok and delivery.key not in found:
                found[delivery.key] = delivery.at
        return found

    def successes(self) -> Counter[str]:
        return Counter(d.key for d in self.deliveries if d.ok)

    def parked(self) -> dict[str, Parking]:
        return {p.key: p for p in self.parkings}

    def breaker_changes(self) -> list[tuple[float, str]]:
        """(when, state) each time the state read after a run differs from the one before."""
        changes: list[tuple[float, str]] = []
        for run in self.runs:
            if not changes or changes[-1][1] != run.breaker_state:
                changes.append((run.at + run.seconds, run.breaker_state))
        return changes
