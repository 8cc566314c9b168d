"""How much a source queue grew while a chain re-drove a large backlog to a consumer without the
consumer kit: the baseline record (``BACKLOG#<source queue URL>``), its codec and the pure rule
that stops the re-drives (runtime/source_growth.py acts on it).

Without the kit a failing consumer is heard only when its failures are back in the DLQ, a
visibility timeout x maxReceiveCount later. What shows at once is the source queue not deleting
what the re-driver sends: its messages waiting and in flight (never the delayed: a healthy
consumer holds a chain's delayed re-drives) grow. The baseline is their number when the chain
began; it is kept across runs and ticks (a baseline per run would let each run send another
``SOURCE_BACKLOG_LIMIT``) until the source's redrive window has passed since the last re-drive
that saw it: by then the re-driver's own messages have left the queue, and a growth still there
is live traffic's."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from sqs_redriver.core.errors import CorruptRecord
from sqs_redriver.core.table import DynamoTable, epoch, item_key, number
from sqs_redriver.protocol.limits import MAX_COUNT, MAX_EPOCH_SECONDS

if TYPE_CHECKING:
    from sqs_redriver.core.table import Item

# SQS: a visibility timeout of at most 12 hours, a maxReceiveCount of at most 1,000.
MAX_REDRIVE_WINDOW_SECONDS = 12 * 3600 * 1000
MAX_DEPTH = MAX_COUNT * 1_000


@dataclass(frozen=True)
class Baseline:
    """The source queue's messages waiting and in flight when the chain began (``depth``), since
    when, and until when it holds (the redrive window after the last re-drive that saw it)."""

    depth: int
    since: int
    until: int

    def held_at(self, now: int) -> bool:
        return now < self.until


class Growth(NamedTuple):
    """What one look at the source's depth decides: stop re-driving, and the baseline to write
    (None: the stored one stands)."""

    stop: bool
    write: Baseline | None = None


def judge_growth(
    baseline: Baseline | None, depth: int, *, now: int, window_seconds: int, limit: int, sent: bool
) -> Growth:
    """The depth against the baseline: none held (none stored, or its window passed) makes this
    depth the baseline; a depth below it lowers it; one more than ``limit`` over it stops the
    re-drives, and a run that ``sent`` re-drives since it last looked keeps the baseline for the
    redrive window from now (what it sent is in the queue until then)."""
    if baseline is None or not baseline.held_at(now):
        return Growth(stop=False, write=Baseline(depth, now, now + window_seconds))
    if depth < baseline.depth:
        return Growth(stop=False, write=replace(baseline, depth=depth))
    if depth - baseline.depth <= limit:
        return Growth(stop=False)
    kept = replace(baseline, until=max(baseline.until, now + window_seconds)) if sent else None
    return Growth(stop=True, write=kept)


def baseline_item(key: str, baseline: Baseline) -> dict[str, Any]:
    """The record; DynamoDB's TTL drops it once its window has passed."""
    return {
        "pk": {"S": key},
        "depth": {"N": str(baseline.depth)},
        "since": {"N": str(baseline.since)},
        "until": {"N": str(baseline.until)},
        "expires_at": {"N": str(baseline.until)},
    }


def baseline_from_item(item: Item, *, now: int) -> Baseline:
    """``CorruptRecord`` when a field is missing, mistyped or out of range."""
    key = item_key(item)
    since = epoch(item, "since", key, now=now)
    until = number(
        item, "until", key, low=since, high=min(since + MAX_REDRIVE_WINDOW_SECONDS, MAX_EPOCH_SECONDS)
    )
    return Baseline(depth=number(item, "depth", key, low=0, high=MAX_DEPTH), since=since, until=until)


NO_BASELINE = "read as no baseline: the source's depth now is the baseline"


class BaselineTable(DynamoTable):
    """The baseline records of the state table (its adapter: one GetItem, one PutItem)."""

    def load_baseline(self, key: str) -> Baseline | None:
        """The stored baseline; None when there is none, or it is corrupt (reported, then
        overwritten by the next look)."""
        item = self._get_item(key)
        if not item:
            return None
        try:
            return baseline_from_item(item, now=self._now())
        except CorruptRecord as corrupt:
            self._report(corrupt, NO_BASELINE)
            return None

    def save_baseline(self, key: str, baseline: Baseline) -> None:
        self._put_item(baseline_item(key, baseline))
