"""Replay and purge: moving chosen messages out of the parking lot (or the DLQ), safely.

A message leaves its queue only after it arrived at its source queue (replay) or when the operator
chose to delete it (purge). Everything read and not moved is given back when the move ends, however
it ends (an error, Ctrl-C): at worst a message sent whose delete did not happen is in both queues.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from sqs_redriver.console.aws import QueueScan
from sqs_redriver.console.inventory import Inspected, Selection
from sqs_redriver.console.outcome_rules import Sent
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.act.outgoing import outgoing
from sqs_redriver.runtime.act.ratelimit import TokenBucket
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import BatchResult, Outgoing
from sqs_redriver.runtime.decide import fifo
from sqs_redriver.runtime.model.tracked import Tracked

REPLAY_STEP = "replay"


class Destination(Protocol):
    url: str

    def send(self, messages: Sequence[Outgoing]) -> BatchResult: ...


class MarkTable(Protocol):
    def forget_marks(self, identities: Sequence[str]) -> None: ...


@dataclass
class MoveReport:
    """What a replay or purge did; also what it did before an interruption."""

    moved: int = 0
    # Sent to the source queue but still in the parking lot (its delete failed): a duplicate.
    not_deleted: list[str] = field(default_factory=list)
    # Left where they were, and why.
    failed: dict[str, str] = field(default_factory=dict)
    # The batch between its send and its delete: after an interruption, possibly in both queues.
    in_transit: list[str] = field(default_factory=list)
    error: str | None = None
    interrupted: bool = False
    # Read but not given back at once (that call failed): they come back when the scan's hold ends.
    hidden: int = 0
    # What arrived at a source (a replay): each identity, its fingerprint, where it went.
    sent: list[Sent] = field(default_factory=list)
    # The replay's id, when what it sent was recorded (``outcome`` follows it).
    replay_id: str | None = None

    @property
    def clean(self) -> bool:
        return not (self.not_deleted or self.failed or self.error or self.interrupted or self.hidden)

    def to_dict(self) -> dict[str, Any]:
        return {
            "moved": self.moved,
            "not_deleted": self.not_deleted,
            "failed": self.failed,
            "in_transit": self.in_transit if self.interrupted else [],
            "error": self.error,
            "interrupted": self.interrupted,
            "hidden": self.hidden,
            "replay_id": self.replay_id,
        }

    def summary_lines(self, verb: str) -> list[str]:
        """What the move did, a line each, as the command line and the web console show it (raw:
        the caller makes the text inert or escapes it)."""
        lines = [f"{verb}: {self.moved}"]
        if self.not_deleted:
            lines.append(
                f"sent but still in the queue (its delete failed; a duplicate): {len(self.not_deleted)}"
            )
        lines.extend(f"left in place {mid}: {why}" for mid, why in self.failed.items())
        if self.error:
            lines.append(f"stopped: {self.error}")
        if self.hidden:
            lines.append(f"{self.hidden} read but not given back at once: they reappear within 5 minutes")
        if self.interrupted:
            lines.append("interrupted: everything not moved was given back")
            if self.in_transit:
                lines.append(
                    "interrupted between a send and its delete, so possibly in both queues: "
                    + ", ".join(self.in_transit)
                )
        return lines


def replayed(item: Inspected, now: int, verdict_key: str | None = None) -> Tracked:
    """The message as it goes back to its source: count reset, the replay in its mark's history,
    and the replay's ``verdict_key`` (the consumer kit counts its verdicts under it)."""
    mark = item.mark or Mark(identity=item.identity, first_failed_at=item.failed_at)
    return Tracked(item.message, replace(mark.replayed(now), verdict_key=verdict_key))


def replay(
    scan: QueueScan,
    selection: Selection,
    route: Callable[[Inspected], Destination | None],
    *,
    table: MarkTable,
    now: int,
    limit: int | None = None,
    bucket: TokenBucket | None = None,
    report: MoveReport,
    on_moved: Callable[[int], None] = lambda _count: None,
    verdict_key: str | None = None,
) -> MoveReport:
    """Send the chosen messages of ``scan``'s queue to the source queue ``route`` names, then
    delete them from it, in batches of 10 per source (chosen messages wait, held, until a batch is
    full or the scan ends). Stops at ``limit`` messages, or at the first AWS error of a whole call.
    ``verdict_key``: the replay's, in each mark sent."""
    mover = _Mover(scan, table, now, bucket, report, on_moved, verdict_key)
    taken = 0
    with _moving(scan, report):
        for batch in scan.batches():
            chosen = _chosen(batch, selection, now, None if limit is None else limit - taken)
            taken += len(chosen)
            for destination, items in _by_destination(chosen, route, report).items():
                mover.pending.setdefault(destination, []).extend(items)
            if not mover.flush(full_only=True):
                return report
            if limit is not None and taken >= limit:
                break
        mover.flush(full_only=False)
    return report


@dataclass
class _Mover:
    """Sends what replay chose, a batch of 10 per source at a time."""

    scan: QueueScan
    table: MarkTable
    now: int
    bucket: TokenBucket | None
    report: MoveReport
    on_moved: Callable[[int], None]
    verdict_key: str | None = None
    clock: Callable[[], float] = time.monotonic
    pending: dict[Destination, list[Inspected]] = field(default_factory=dict)
    waiting_since: float | None = None

    def flush(self, *, full_only: bool) -> bool:
        """Send the full batches (and, unless ``full_only``, the rest: also when the first waiting
        message has waited half its hold); False after a failed call."""
        waiting = any(self.pending.values())
        if waiting and self.waiting_since is None:
            self.waiting_since = self.clock()
        if waiting and self.clock() - (self.waiting_since or 0) > self.scan.hold_seconds / 2:
            full_only = False
        for destination, items in self.pending.items():
            while len(items) >= SQS_MAX_BATCH_SIZE or (items and not full_only):
                batch, items[:] = items[:SQS_MAX_BATCH_SIZE], items[SQS_MAX_BATCH_SIZE:]
                if self.bucket is not None:
                    self.bucket.acquire(len(batch))
                if not _send_and_delete(self.scan, destination, batch, self, self.report):
                    return False
                self.on_moved(self.report.moved)
        if not any(self.pending.values()):
            self.waiting_since = None
        return True


def purge(
    scan: QueueScan,
    selection: Selection,
    *,
    now: int,
    limit: int | None = None,
    report: MoveReport,
    on_moved: Callable[[int], None] = lambda _count: None,
) -> MoveReport:
    """Delete the chosen messages of ``scan``'s queue (the parking lot: archived copies stay)."""
    with _moving(scan, report):
        for batch in scan.batches():
            chosen = _chosen(batch, selection, now, None if limit is None else limit - report.moved)
            if chosen and not _delete(scan, chosen, report):
                return report
            on_moved(report.moved)
            if limit is not None and report.moved >= limit:
                break
    return report


@contextmanager
def _moving(scan: QueueScan, report: MoveReport) -> Iterator[None]:
    """The scan, given back however the move ends; a failed receive (or any AWS call that ends
    the move) said in the report, with how many messages could not be given back at once."""
    try:
        with scan:
            try:
                yield
            except AwsCallError as exc:
                report.error = str(exc)
    finally:
        report.hidden = scan.unreleased


def _chosen(batch: list[Inspected], selection: Selection, now: int, room: int | None) -> list[Inspected]:
    """The messages of ``batch`` the selection takes, at most ``room`` of them."""
    chosen = [item for item in batch if selection.matches(item, now)]
    return chosen if room is None else chosen[: max(0, room)]


def _by_destination(
    items: list[Inspected], route: Callable[[Inspected], Destination | None], report: MoveReport
) -> dict[Destination, list[Inspected]]:
    routed: dict[Destination, list[Inspected]] = {}
    for item in items:
        destination = route(item)
        if destination is None:
            report.failed[item.message.message_id] = (
                f"no configured source queue is {item.source}: choose one with --to"
            )
        else:
            routed.setdefault(destination, []).append(item)
    return routed


def _send_and_delete(
    scan: QueueScan,
    destination: Destination,
    items: list[Inspected],
    mover: _Mover,
    report: MoveReport,
) -> bool:
    """One batch: forget table counts, send, delete what arrived. False after a failed whole call."""
    # Messages too large for a mark are counted in the table only: reset that count first (if the
    # send then fails they stay parked, so an early reset harms nothing).
    counted_in_table = [i.identity for i in items if i.mark is None and not i.message.has_room_for_mark]
    try:
        if counted_in_table:
            mover.table.forget_marks(counted_in_table)
    except AwsCallError as exc:
        report.error = str(exc)
        return False
    entries = []
    for index, item in enumerate(items):
        tracked = replayed(item, mover.now, mover.verdict_key)
        entries.append(
            outgoing(
                str(index),
                tracked,
                tracked.mark.to_json(),
                delay=0,
                deduplication_id=fifo.deduplication_id(tracked, REPLAY_STEP),
                fifo=destination.url.endswith(".fifo"),
            )
        )
    report.in_transit = [item.message.message_id for item in items]
    result = destination.send(entries)
    for key, failure in result.failed.items():
        report.failed[items[int(key)].message.message_id] = f"{failure.code}: {failure.message}"
    arrived = [items[int(key)] for key in result.succeeded]
    report.sent += [Sent.of(item, destination.url) for item in arrived]
    deleted = not arrived or _delete(scan, arrived, report, sent=True)
    report.in_transit = []
    if not deleted:
        return False
    if result.call_error:
        report.error = result.call_error
        return False
    return True


def _delete(scan: QueueScan, items: list[Inspected], report: MoveReport, *, sent: bool = False) -> bool:
    """Delete ``items`` from the scanned queue; False after a failed whole call."""
    handles = {
        item.message.message_id: scan.handle(item.message.message_id, item.message.receipt_handle)
        for item in items
    }
    try:
        result = scan.queue.delete(handles)
    except AwsCallError as exc:
        report.error = str(exc)
        if sent:
            report.not_deleted.extend(handles)
        return False
    scan.forget(result.succeeded)
    report.moved += len(result.succeeded)
    for message_id, failure in result.failed.items():
        if sent:
            report.not_deleted.append(message_id)
        else:
            report.failed[message_id] = f"{failure.code}: {failure.message}"
    return True
