"""What CloudWatch says a source queue's consumer did, minute by minute.

SQS publishes one-minute sums for every queue (``AWS/SQS``), Lambda for every function
(``AWS/Lambda``). They arrive minutes late, and an idle minute publishes nothing. A run reads them
once (``adapters/ports.ActivitySource``) into these values; ``decide/consumer_health.py`` judges
them. Every number here was validated at the boundary (``adapters/cloudwatch_activity.py``):
whole, finite, not negative, within ``MAX_MINUTE_COUNT``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SECONDS_PER_MINUTE = 60
# No queue sees more in a minute (SQS's throughput limits are orders of magnitude below); a
# larger datapoint is absurd, and the reading of its queue is not used.
MAX_MINUTE_COUNT = 1_000_000_000


@dataclass(frozen=True)
class Minute:
    """One minute's sums; ``at`` is its start (epoch seconds, a multiple of 60)."""

    at: int
    received: int = 0  # NumberOfMessagesReceived: every receive, retries included
    deleted: int = 0  # NumberOfMessagesDeleted: the consumer's deletes
    invocations: int = 0  # the consumer function's (AWS/Lambda), when the re-driver knows it
    errors: int = 0
    throttles: int = 0

    @property
    def active(self) -> bool:
        """The consumer received or deleted something, or its function ran or was throttled."""
        return bool(self.received or self.deleted or self.invocations or self.throttles)


@dataclass(frozen=True)
class QueueActivity:
    """A source queue's minutes in ``[start, complete_until)``: those CloudWatch has published
    for certain (older than the publication lag). A minute of that span without a datapoint was
    idle. ``minutes`` is sorted by ``at`` and holds only minutes with a datapoint."""

    queue_url: str
    start: int
    complete_until: int
    minutes: tuple[Minute, ...] = ()

    def between(self, start: int, end: int) -> Iterable[Minute]:
        """The complete minutes starting in ``[start, end)``."""
        end = min(end, self.complete_until)
        return (m for m in self.minutes if start <= m.at and m.at + SECONDS_PER_MINUTE <= end)

    def covers(self, start: int) -> bool:
        """Whether the reading reaches back to ``start`` (earlier minutes were not read)."""
        return self.start <= start


@dataclass(frozen=True)
class WatchedQueue:
    """A source queue whose consumer the re-driver judges, and its consumer function when the
    construct knows it (its AWS/Lambda metrics are read too)."""

    queue_url: str
    function_name: str | None = None

    @property
    def queue_name(self) -> str:
        return self.queue_url.rstrip("/").rsplit("/", 1)[-1]
