"""The source queues' metrics, read once per run for every part and batch of it.

They are the breaker's evidence where the consumer does not report its own verdicts (the kit's):
a kit consumer's queue counts what the kit dead-letters among its deletes. A failure that came
back without the kit's words is judged by them in any case.

One ``GetMetricData`` call covers every source (adapters/cloudwatch_activity.py), made the first
time a run needs it: a run that touches neither the DLQ nor a HALF_OPEN breaker reads nothing.
Minutes that ended less than ``METRICS_LAG_SECONDS`` ago are not read: CloudWatch may not have
published them. A failed or unusable reading is logged and leaves the run without metrics: the
breaker then goes by what returns to the DLQ, as it does for a consumer nobody can read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import ActivitySource, Queue, RedriveWindow
from sqs_redriver.runtime.decide.breaker import Breaker
from sqs_redriver.runtime.decide.canary import expects_verdicts
from sqs_redriver.runtime.decide.consumer_health import METRICS_LOOKBACK_SECONDS
from sqs_redriver.runtime.decide.suspicion import ConsumerSignal
from sqs_redriver.runtime.model.activity import SECONDS_PER_MINUTE, WatchedQueue
from sqs_redriver.runtime.model.tracked import Tracked


class ConsumerWatch:
    """What a run knows of its consumers from CloudWatch; ``begin_run`` forgets the last run's."""

    def __init__(
        self,
        activity: ActivitySource | None,
        *,
        sources: Mapping[str, Queue],
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
        self._lock = threading.Lock()  # parallel workers of a run share one reading
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
        its parallel workers start; the lock is never held across an AWS call."""
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
        """The reading that judges a batch's failures (decide/suspicion.py): a failure in the
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
