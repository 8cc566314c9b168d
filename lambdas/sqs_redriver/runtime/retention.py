"""The retention guard: a message SQS is about to delete for its age is parked first.

Age counts from the DLQ message's SentTimestamp: SQS keeps a standard queue's original enqueue
time when it dead-letters a message, so the DLQ's retention runs from it; a FIFO DLQ restarts the
clock, and counting from SentTimestamp is then conservative."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqs_redriver.core.table import ParkCause, ParkReason
from sqs_redriver.runtime.parking import park_reason

if TYPE_CHECKING:
    from sqs_redriver.core.message import Tracked
    from sqs_redriver.runtime.routing import Routes


@dataclass(frozen=True)
class Retention:
    """The DLQ's MessageRetentionPeriod and how long before its end a message is parked."""

    seconds: int
    margin_seconds: int


def guarded(retention_seconds: int, margin_seconds: int) -> Retention:
    """The guard for a DLQ: a margin not shorter than the retention would park every message on
    sight (an imported DLQ's retention is only known at run time), so it falls back to a quarter."""
    if margin_seconds >= retention_seconds:
        return Retention(retention_seconds, retention_seconds // 4)
    return Retention(retention_seconds, margin_seconds)


def sweep_interval(margin_seconds: int) -> int:
    """A message spends ``margin_seconds`` in the expiring window; a sweep every half of that sees
    it there at least once, with half the margin left to park it."""
    return max(1, margin_seconds // 2)


def sent_at(tracked: Tracked) -> int | None:
    """When the message entered its first queue (epoch seconds); None when SQS did not say."""
    sent_ms = tracked.message.system_attributes.get("SentTimestamp")
    return int(sent_ms) // 1000 if sent_ms else None


def expires_at(tracked: Tracked, retention: Retention) -> int | None:
    """When SQS may delete it for its age."""
    sent = sent_at(tracked)
    return None if sent is None else sent + retention.seconds


def expiring(tracked: Tracked, retention: Retention, *, now: int) -> bool:
    """Its age is within the margin of the DLQ's retention (or past it)."""
    expiry = expires_at(tracked, retention)
    return expiry is not None and now >= expiry - retention.margin_seconds


def expiring_reason(tracked: Tracked, retention: Retention, *, now: int, routes: Routes) -> ParkReason:
    expiry = expires_at(tracked, retention)
    why = f"the DLQ's retention ({retention.seconds} s) ends at {expiry}, within {retention.margin_seconds} s"
    return park_reason(tracked, ParkCause.EXPIRING, why, now=now, routes=routes)


def capped_hold(tracked: Tracked, seconds: int, retention: Retention, *, now: int) -> int:
    """A hold in the DLQ ends before the message enters the expiring window, so that the guard
    sees it while there is time to park it (never below 0: an expiring message is parked, not held)."""
    expiry = expires_at(tracked, retention)
    if expiry is None:
        return seconds
    return max(0, min(seconds, expiry - retention.margin_seconds - now))
