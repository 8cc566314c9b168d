"""What a source queue's CloudWatch minutes say about its consumer: pure rules over the values of
model/activity.py, mapped to the breaker and to poison suspicion in docs/design.md ("The
consumer's health from its queue's metrics").

Two questions, two rules:

- **How is the consumer now?** (``health``, for the breaker while it is not CLOSED.) The latest
  complete minute with activity decides: deletes in it, the consumer works (HEALTHY); receives
  without a delete, and a quiet complete minute after it, the consumer fails what it receives
  (DOWN). A minute with receives whose next minute is not complete yet could still be followed by
  its deletes (UNSETTLED); nothing at all is IDLE. Only DOWN and HEALTHY move the breaker.
- **Why did this message fail?** (``failure_context``, for every message that comes back without
  the consumer kit's own classification.) Over the span it was in its source queue: the consumer
  deleted others, and the failures were a small share of what it handled, so the message is a
  SUSPECT (likely poison); it deleted nothing, or failed a large share, so the message met an
  OUTAGE; no datapoints, UNKNOWN (the re-driver falls back to what returns to the DLQ).

Every receive of a failing message counts in ``NumberOfMessagesReceived`` (up to maxReceiveCount
per message), so failed messages are estimated as failed receives over maxReceiveCount. Sends are
not read: the re-driver's own re-drives show there, and delays make them arrive minutes later.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from sqs_redriver.runtime.model.activity import SECONDS_PER_MINUTE, Minute, QueueActivity

# Messages older than this are judged without metrics: one GetMetricData reads this far back.
METRICS_LOOKBACK_SECONDS = 3 * 3600


class Health(StrEnum):
    HEALTHY = "healthy"  # the latest active minute deleted messages
    DOWN = "down"  # it received and deleted nothing, and the minute after was quiet
    UNSETTLED = "unsettled"  # it received and deleted nothing; the next minute is not published yet
    IDLE = "idle"  # no activity in the complete minutes (or no datapoints at all)


@dataclass(frozen=True)
class HealthReading:
    """The verdict, the minute that decided it, and what that minute held (for logs)."""

    health: Health
    minute: Minute | None = None
    judged_until: int = 0  # minutes before this were judged (the reading's complete span)

    def describe(self) -> str:
        if self.minute is None:
            return f"{self.health.value}: no activity in the published minutes"
        m = self.minute
        return f"{self.health.value}: {m.received} received, {m.deleted} deleted in the minute at {m.at}"


def working(minute: Minute) -> bool:
    """The consumer deleted messages in this minute."""
    return minute.deleted > 0


def failing(minute: Minute) -> bool:
    """It deleted nothing while it received, its function failed every invocation, or was throttled."""
    if working(minute):
        return False
    every_invocation_failed = minute.invocations > 0 and minute.errors >= minute.invocations
    return minute.received > 0 or every_invocation_failed or minute.throttles > 0


def health(activity: QueueActivity, *, since: int) -> HealthReading:
    """The consumer's health from the complete minutes from the one ``since`` falls in."""
    start = since - since % SECONDS_PER_MINUTE
    judged = [m for m in activity.between(start, activity.complete_until) if working(m) or failing(m)]
    until = activity.complete_until
    if not judged:
        return HealthReading(Health.IDLE, judged_until=until)
    latest = judged[-1]
    if working(latest):
        return HealthReading(Health.HEALTHY, latest, judged_until=until)
    if latest.at + 2 * SECONDS_PER_MINUTE <= until:
        return HealthReading(Health.DOWN, latest, judged_until=until)
    return HealthReading(Health.UNSETTLED, latest, judged_until=until)


class Context(StrEnum):
    SUSPECT = "suspect"  # the consumer processed others while it failed: likely poison
    OUTAGE = "outage"  # it failed with the consumer failing (nearly) everything
    UNKNOWN = "unknown"  # the metrics say nothing about its span


@dataclass(frozen=True)
class FailureContext:
    context: Context
    processed: int = 0  # messages the consumer deleted in the span
    span_end: int = 0  # when the span ended: the earliest it could be back in the DLQ


def failure_span_end(sent_at: int, *, visibility_timeout_seconds: int, max_receive_count: int) -> int:
    """The earliest a message sent to its source at ``sent_at`` can be back in the DLQ after
    failing: maxReceiveCount receives a visibility timeout apart. What happened after it may be
    after its return (deletes of a recovery), so its span ends there."""
    return sent_at + visibility_timeout_seconds * max_receive_count


def failure_context(
    activity: QueueActivity,
    *,
    sent_at: int,
    span_end: int,
    max_receive_count: int,
    failure_ratio: float,
) -> FailureContext:
    """Why a message sent to its source at ``sent_at`` and back by ``span_end`` failed."""
    start = sent_at - sent_at % SECONDS_PER_MINUTE
    if not activity.covers(start):
        return FailureContext(Context.UNKNOWN, span_end=span_end)
    minutes = list(activity.between(start, span_end + SECONDS_PER_MINUTE))
    received = sum(m.received for m in minutes)
    deleted = sum(m.deleted for m in minutes)
    if not received and not deleted:
        return FailureContext(Context.UNKNOWN, span_end=span_end)
    if not deleted:
        return FailureContext(Context.OUTAGE, span_end=span_end)
    failed = Fraction(max(received - deleted, 0), max(max_receive_count, 1))
    if failed >= Fraction(str(failure_ratio)) * (failed + deleted):
        return FailureContext(Context.OUTAGE, processed=deleted, span_end=span_end)
    return FailureContext(Context.SUSPECT, processed=deleted, span_end=span_end)
