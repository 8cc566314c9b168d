"""Back-pressure for a chain that re-drives a large backlog to a consumer without the kit: it stops
when the source queue grew by more than SOURCE_BACKLOG_LIMIT over its baseline (the rule and the
record: core/source_growth.py), and its re-drives are delayed only by what is left of their backoff
step, as a drain's are (a backlog's messages waited their step out in the DLQ; a full first step
would have thousands of re-drives waiting for a consumer that may break meanwhile).

Only for one SQS source queue whose consumer reports no verdicts (no drain fans out,
``protocol.settings.fans_out``, and no failure is heard for a redrive window), and only over
``FAN_OUT_BACKLOG``: a run reads the DLQ's depth at its first look, and a smaller DLQ re-drives as
before. The breaker is left alone: nothing has failed
that the re-driver knows of."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Protocol

from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.source_growth import Baseline, judge_growth
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime.budget import BACKLOG_CHECK_EVERY

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqs_redriver.core.sqs import RedriveWindow
    from sqs_redriver.runtime.ports import Queue
    from sqs_redriver.runtime.settings import Settings


LOOK_EVERY_BATCHES = BACKLOG_CHECK_EVERY // SQS_MAX_BATCH_SIZE


class BaselineStore(Protocol):
    """The source's baseline record (core/source_growth.BaselineTable)."""

    def load_baseline(self, key: str) -> Baseline | None: ...

    def save_baseline(self, key: str, baseline: Baseline) -> None: ...


class SourceDepth(Protocol):
    """The source queue, as this back-pressure reads it (core/sqs.SqsQueue)."""

    url: str

    def undeleted(self) -> int: ...

    def redrive_window(self) -> RedriveWindow: ...


def watches_growth(settings: Settings) -> bool:
    """Whether this re-driver's chains watch their source's growth: one SQS source whose consumer
    reports no verdicts (with them the kit hears a failure at once), and a backlog limit."""
    return (
        bool(settings.source_backlog_limit)
        and not settings.consumer_verdicts
        and not settings.dead_letter_sources
        and len(settings.source_queue_urls) == 1
    )


class GrowthWatch:
    """One run's watch of its source's growth, shared by its parallel batches: ``begin`` reads the
    DLQ's depth before they start (under ``FAN_OUT_BACKLOG``, ``large`` stays False and it never
    looks); then one look every BACKLOG_CHECK_EVERY messages of the run, whichever batch is next (no
    lock: a look's AWS calls are never made under one; two at once read twice, the later write
    stands)."""

    def __init__(
        self,
        *,
        dlq: Queue,
        source: SourceDepth,
        store: BaselineStore,
        settings: Settings,
        clock: Callable[[], float],
        logger: Any,
    ) -> None:
        self.dlq, self.source, self.store, self.settings = dlq, source, store, settings
        self.clock, self.log = clock, logger
        self.key = RecordKind.BACKLOG.key(source.url)
        self.large = False  # the run re-drives a large backlog: a drain's delay rule
        self._window: int | None = None
        self._sent = False  # the run has re-driven something
        self._batches = itertools.count()  # the run's batches so far, all threads together

    def begin(self) -> GrowthWatch:
        """Before the run's first batch: is its DLQ a large backlog? Unknown: no (as before)."""
        try:
            self.large = self.dlq.backlog() >= self.settings.fan_out_backlog
        except AwsCallError as exc:
            self.log.warning(
                "DLQ depth unknown: the source's growth is not watched", extra={"error": str(exc)}
            )
        return self

    def stops(self, redriven: int) -> bool:
        """Before a batch of a large backlog (the run's first, then one every BACKLOG_CHECK_EVERY
        messages): whether the source grew past the limit. AWS errors let the run go on (the rate
        limit still holds)."""
        self._sent |= redriven > 0
        if not self.large or next(self._batches) % LOOK_EVERY_BATCHES:
            return False
        try:
            return self._look()
        except AwsCallError as exc:
            self.log.warning("source growth unknown: the run goes on", extra={"error": str(exc)})
            return False

    def _look(self) -> bool:
        now, depth = int(self.clock()), self.source.undeleted()
        growth = judge_growth(
            self.store.load_baseline(self.key),
            depth,
            now=now,
            window_seconds=self._redrive_window(),
            limit=self.settings.source_backlog_limit,
            sent=self._sent,
        )
        if growth.write is not None:
            self.store.save_baseline(self.key, growth.write)
        if growth.stop:
            self.log.info(
                "the source queue is not deleting what the re-driver sends: re-drives wait",
                extra={"queue": self.source.url, "undeleted": depth},
            )
        return growth.stop

    def _redrive_window(self) -> int:
        if self._window is None:
            self._window = max(self.source.redrive_window().seconds, 1)
        return self._window
