"""The consumer's health, judged from its source queue's CloudWatch minutes: the values read
(``QueueActivity``), the pure rules over them, and the run's one reading of them (``ConsumerWatch``),
as docs/design.md explains ("The consumer's health from its queue's metrics").

Two questions, two rules:

- **How is the consumer now?** (``health``, for the breaker while it is not CLOSED.) The latest
  complete minute with activity decides: deletes in it, the consumer works (HEALTHY); receives
  without a delete, and a quiet complete minute after it, the consumer fails what it receives
  (DOWN). A minute with receives whose next minute is not complete yet could still be followed by
  its deletes (UNSETTLED); nothing at all is IDLE. Only DOWN and HEALTHY move the breaker.
- **Why did this message fail?** (``failure_context``, for every message that comes back without
  the consumer kit's own classification; ``judge`` applies it to the message's mark.) Over the span
  it was in its source queue: the consumer deleted others, and the failures were a small share of
  what it handled, so the message is a SUSPECT (likely poison); it deleted nothing, or failed a
  large share, so the message met an OUTAGE; no datapoints, UNKNOWN (the re-driver falls back to
  what returns to the DLQ).

Every receive of a failing message counts in ``NumberOfMessagesReceived`` (up to maxReceiveCount
per message), so failed messages are estimated as failed receives over maxReceiveCount. Sends are
not read: the re-driver's own re-drives show there, and delays make them arrive minutes later.

``ConsumerWatch`` reads the minutes once per run, the first time the run needs them, through the
``ActivitySource`` port (consumer_metrics.py); a failed or unusable reading leaves the run without
metrics, and the breaker then goes by what returns to the DLQ."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from sqs_redriver.core.breaker import State, expects_verdicts
from sqs_redriver.core.errors import AwsCallError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from sqs_redriver.core.breaker import Breaker
    from sqs_redriver.core.message import Tracked
    from sqs_redriver.core.sqs import RedriveWindow
    from sqs_redriver.protocol.mark import Mark
    from sqs_redriver.protocol.sources import DeadLetterSource
    from sqs_redriver.runtime.ports import ActivitySource, Target


# What CloudWatch says a source queue's consumer did, minute by minute.


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
    construct knows it (its AWS/Lambda metrics are read too); or a source of another kind, whose
    minutes say what its target took and what failed (consumer_metrics.py)."""

    queue_url: str
    function_name: str | None = None
    # A DLQ of another kind: the source (queue_url is its address), judged by its own metrics.
    source: DeadLetterSource | None = None

    @property
    def queue_name(self) -> str:
        return self.queue_url.rstrip("/").rsplit("/", 1)[-1]


# One CloudWatch datapoint, checked: a per-minute count and the minute it counts, or a named
# rejection.


class Rejection(StrEnum):
    """Why a datapoint is not used; the text goes into the log line."""

    NOT_A_NUMBER = "not a number"
    NOT_FINITE = "not finite"
    NEGATIVE = "negative"
    NOT_WHOLE = "not a whole number"
    TOO_LARGE = f"more than {MAX_MINUTE_COUNT:,} in a minute"
    NOT_A_TIME = "not a timestamp"
    OFF_MINUTE = "not the start of a whole minute"
    OUTSIDE = "outside the minutes read"


def minute_count(value: object) -> int | Rejection:
    """``value`` as a count of one minute, or why it cannot be one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Rejection.NOT_A_NUMBER
    if isinstance(value, float) and not math.isfinite(value):
        return Rejection.NOT_FINITE
    if value < 0:
        return Rejection.NEGATIVE
    if value > MAX_MINUTE_COUNT:
        return Rejection.TOO_LARGE
    if isinstance(value, float) and not value.is_integer():
        return Rejection.NOT_WHOLE
    return int(value)


def minute_start(value: object, *, start: int, end: int) -> int | Rejection:
    """``value``, a timestamp, as the epoch second of a minute's start in ``[start, end)``, or why
    it is not one. A timestamp without a timezone is UTC, as CloudWatch's are."""
    if not isinstance(value, datetime):
        return Rejection.NOT_A_TIME
    moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    try:
        seconds = moment.timestamp()
    except (OverflowError, ValueError, OSError):  # a date or offset no epoch second can hold
        return Rejection.NOT_A_TIME
    if not seconds.is_integer() or int(seconds) % SECONDS_PER_MINUTE:
        return Rejection.OFF_MINUTE
    if not start <= int(seconds) < end:
        return Rejection.OUTSIDE
    return int(seconds)


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


# Poison told apart from an outage without the consumer kit: what the source queue's metrics say
# about each message that came back (``failure_context``, above).


@dataclass(frozen=True)
class ConsumerSignal:
    """What a run read about one source's consumer: its queue's minutes, and how its queue
    retries (a failing message is received ``max_receive_count`` times, a visibility timeout
    apart)."""

    activity: QueueActivity
    max_receive_count: int
    visibility_timeout_seconds: int


@dataclass(frozen=True)
class Judged:
    """A message with its mark updated by the judgment, and whether it counts against the breaker
    because the metrics place its failure in an outage."""

    tracked: Tracked
    outage: bool = False


def sent_at(tracked: Tracked) -> int | None:
    """When the message last went to its source: its last re-drive or replay; for a first
    failure, when its producer sent it."""
    last = tracked.mark.last_sent_at
    if last is not None:
        return last
    sent_ms = tracked.message.system_attributes.get("SentTimestamp", "")
    return int(sent_ms) // 1000 if sent_ms.isdigit() else None


def judge(
    tracked: Tracked, signal: ConsumerSignal | None, breaker: Breaker, *, failure_ratio: float
) -> Judged:
    """The message's failure in the light of its consumer's metrics (see the module's docstring)."""
    mark = tracked.mark
    sent = sent_at(tracked)
    if signal is None or mark.failure is not None or sent is None:
        return Judged(tracked)
    if tracked.message.dead_letter is not None and mark.last_sent_at is None:
        # A dead letter of another service is written after its source's last try: its failure
        # began its source's whole window earlier (a function's async retries).
        sent -= signal.visibility_timeout_seconds * signal.max_receive_count
    span_end = failure_span_end(
        sent,
        visibility_timeout_seconds=signal.visibility_timeout_seconds,
        max_receive_count=signal.max_receive_count,
    )
    found = failure_context(
        signal.activity,
        sent_at=sent,
        span_end=span_end,
        max_receive_count=signal.max_receive_count,
        failure_ratio=failure_ratio,
    )
    if found.context is Context.SUSPECT:
        return Judged(_with(tracked, mark.after_suspect_failure(found.processed)))
    if found.context is Context.UNKNOWN:
        return Judged(tracked)
    if mark.suspect:
        undisturbed = breaker.state is State.CLOSED and breaker.changed_at <= sent
        return Judged(_with(tracked, mark.after_suspect_failure(0)) if undisturbed else tracked)
    # Counted once: a failure back before the breaker's last change was evidence for that change.
    return Judged(tracked, outage=span_end >= breaker.changed_at)


def _with(tracked: Tracked, mark: Mark) -> Tracked:
    return replace(tracked, mark=mark, read_mark=tracked.mark_as_read)


def suspect_reason_text(tracked: Tracked) -> str:
    """The parking reason of a suspect: how often it failed, and what the consumer did meanwhile."""
    mark = tracked.mark
    times = "once" if mark.suspected == 1 else f"{mark.suspected} times"
    return f"failed {times} while the consumer processed {mark.processed_meanwhile:,} others"


# The source queues' metrics, read once per run for every part and batch of it.


class ConsumerWatch:
    """What a run knows of its consumers from CloudWatch; ``begin_run`` forgets the last run's."""

    def __init__(
        self,
        activity: ActivitySource | None,
        *,
        sources: Mapping[str, Target],
        watched: Sequence[WatchedQueue],
        lag_seconds: int,
        consumer_verdicts: bool,
        clock: Callable[[], float],
        logger: Any,
    ) -> None:
        self._activity = activity
        self._consumer_verdicts = consumer_verdicts
        self._sources = sources
        self._watched = tuple(watched)
        self._lag_seconds = lag_seconds
        self._clock = clock
        self._log = logger
        self._lock = threading.Lock()  # a run's parallel batches share one reading
        self._signals: dict[str, ConsumerSignal] | None = None
        self._windows: dict[str, RedriveWindow] = {}  # per execution environment, like the retention

    @property
    def enabled(self) -> bool:
        return self._activity is not None

    def begin_run(self) -> None:
        with self._lock:
            self._signals = None

    def signals(self) -> dict[str, ConsumerSignal]:
        """This run's reading, by source URL (empty: no metrics this run). The run reads it before
        its parallel batches start; the lock is never held across an AWS call."""
        with self._lock:
            if self._signals is not None:
                return self._signals
        read = self._read()
        with self._lock:
            if self._signals is None:
                self._signals = read
            return self._signals

    def heard_for(self, breaker: Breaker) -> dict[str, ConsumerSignal]:
        """The reading, unless the breaker's consumer reports its own verdicts: the kit deletes
        what it dead-letters, so its queue's deletes are not successes (its verdicts are)."""
        return {} if expects_verdicts(breaker, self._consumer_verdicts) else self.signals()

    def for_failures(self, breaker: Breaker, batch: Sequence[Tracked]) -> dict[str, ConsumerSignal]:
        """The reading that judges a batch's failures (consumer_health.py): a failure in the
        consumer kit's words is judged by the kit, one without them by its queue's metrics, even
        while the kit is expected to report: it went past the kit. A batch of the kit's words
        alone reads nothing."""
        if expects_verdicts(breaker, self._consumer_verdicts) and all(t.mark.failure for t in batch):
            return {}
        return self.signals()

    def _read(self) -> dict[str, ConsumerSignal]:
        if self._activity is None:
            return {}
        now = int(self._clock())
        end = (now - self._lag_seconds) // SECONDS_PER_MINUTE * SECONDS_PER_MINUTE
        start = end - METRICS_LOOKBACK_SECONDS
        try:
            read = self._activity.read(self._watched, start=start, end=end)
            windows = {url: self._window(url) for url in read}
        except AwsCallError as exc:
            self._log.warning("queue metrics not read: judging by the DLQ alone", extra={"error": str(exc)})
            return {}
        return {
            url: ConsumerSignal(
                activity, windows[url].max_receive_count, windows[url].visibility_timeout_seconds
            )
            for url, activity in read.items()
        }

    def _window(self, url: str) -> RedriveWindow:
        if url not in self._windows:
            self._windows[url] = self._sources[url].redrive_window()
        return self._windows[url]
