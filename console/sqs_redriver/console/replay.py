"""Replay and purge: moving chosen messages out of the parking lot (or the DLQ), safely.

First the preview: the selection the operator typed (``parse_selection``) chooses messages
(``choose``), read and given back at once. Then the move acts on exactly that set, named by
MessageId (a receipt handle does not outlive the preview's scan): it scans the queue again and takes
those messages, and only those; one no longer there is reported (``MoveReport.missing``), never
replaced by another (the web console's confirmation carries those MessageIds from its preview's
page: ``replay_by_id``). A replay sends each to its source queue and deletes it only once it arrived
(a ``Transfer``, core/transfer.py); a purge deletes it (its archived copy stays). A dead letter of
another service (a function's, a rule target's, a subscription's) goes back the same way, its
payload delivered to its source's one target (core/delivery.py); one whose source dropped the
payload, or that cannot be read, is left in place with the reason. Everything read
and not moved is given back when the move ends, however it ends (an error, Ctrl-C): at worst a
message sent whose delete did not happen is in both queues, and the report says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from sqs_redriver.console.aws import QueueScan
from sqs_redriver.console.errors import NotFound, UsageError
from sqs_redriver.console.inventory import (
    Group,
    Inspected,
    Selection,
    Where,
    group,
    parse_attribute_filters,
    parse_duration,
)
from sqs_redriver.console.outcomes import ReplayKind, Sent, Ticket, new_ticket, record_sent
from sqs_redriver.console.safe_text import some
from sqs_redriver.console.tool import SAMPLE_ID_CHARS, Tool, read_all
from sqs_redriver.core.delivery import delivered
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.message import Tracked, deduplication_id
from sqs_redriver.core.sqs import CALL_FAILED, BatchResult, Outgoing, outgoing
from sqs_redriver.core.transfer import TokenBucket, Transfer, delete_from
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.protocol.mark import Mark

DEFAULT_RATE = 10.0
REPLAY_STEP = "replay"


# The selection and the preview: which messages a move takes.


def parse_selection(
    groups: Sequence[str] = (),
    attributes: Sequence[str] = (),
    older_than: str | None = None,
    newer_than: str | None = None,
    ids: Sequence[str] = (),
    *,
    everything: bool = False,
) -> Selection:
    """The selection the operator typed; UsageError names what is wrong. Choosing nothing needs
    ``everything``: a forgotten option must not move a whole queue."""
    try:
        selection = Selection(
            groups=frozenset(groups),
            attributes=parse_attribute_filters(attributes),
            older_than_seconds=parse_duration(older_than) if older_than else None,
            newer_than_seconds=parse_duration(newer_than) if newer_than else None,
            ids=frozenset(ids),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if selection.everything and not everything:
        raise UsageError(
            "choose messages with --group, --attribute, --older-than, --newer-than or --id, or --all"
        )
    return selection


def describe(selection: Selection) -> str:
    """The selection in one line, for the audit trail."""
    parts = [f"group={g}" for g in sorted(selection.groups)]
    parts += [f"attribute {name}={value}" for name, value in sorted(selection.attributes.items())]
    if selection.older_than_seconds is not None:
        parts.append(f"older than {selection.older_than_seconds}s")
    if selection.newer_than_seconds is not None:
        parts.append(f"newer than {selection.newer_than_seconds}s")
    parts += [f"id={i}" for i in sorted(selection.ids)]
    return ", ".join(parts) or "all"


@dataclass(frozen=True)
class Chosen:
    """What a move takes, as its preview showed it: the messages of ``where`` that ``selection``
    chose, their groups, and what the preview's scan could not read."""

    where: Where
    selection: Selection
    items: list[Inspected]
    groups: list[Group]
    gaps: str

    @property
    def message_ids(self) -> list[str]:
        """The set the move acts on: these messages, and no others."""
        return [item.message.message_id for item in self.items]

    def first(self, count: int) -> Chosen:
        """The first ``count`` of these messages (in the order the preview read them) and their
        groups: a preview cut to what one move may take."""
        items = self.items[:count]
        return replace(self, items=items, groups=group(items))


def choose(tool: Tool, where: Where, selection: Selection, limit: int | None) -> Chosen:
    """The messages of ``where`` the selection takes (at most ``limit``), given back at once;
    NotFound when a group or id it names is in none of them (a typo must not read as "nothing to
    move")."""
    read = read_all(tool, where)
    _check_named(selection, read.items, where)
    chosen = [item for item in read.items if selection.matches(item, tool.now())][:limit]
    return Chosen(where, selection, chosen, group(chosen), read.gaps)


def _check_named(selection: Selection, items: list[Inspected], where: Where) -> None:
    unknown_groups = selection.unknown_groups(items)
    if unknown_groups:
        known = [g.key for g in group(items)]
        raise NotFound(
            f"no group {some(unknown_groups)} in the {where.value}; "
            + (f"its groups: {some(known)} (see `groups`)" if known else "it is empty")
        )
    unknown_ids = selection.unknown_ids(items)
    if unknown_ids:
        held = [item.message.message_id[:SAMPLE_ID_CHARS] for item in items]
        raise NotFound(
            f"no message {some(unknown_ids)} in the {where.value}; "
            + (f"it holds {some(held)}" if held else "it is empty")
        )


# The moves as the operator asks for them: each inside its audit record.


def replay_chosen(
    tool: Tool,
    chosen: Chosen,
    *,
    to: str | None = None,
    rate: float = DEFAULT_RATE,
    report: MoveReport,
    on_moved: Callable[[int], None] = lambda _count: None,
) -> MoveReport:
    """Send the chosen messages back to their source queue (or ``to``), recorded in the trail."""
    return replay_by_id(
        tool,
        chosen.where,
        chosen.message_ids,
        selection=describe(chosen.selection),
        to=to,
        rate=rate,
        report=report,
        on_moved=on_moved,
    )


def replay_by_id(
    tool: Tool,
    where: Where,
    message_ids: Sequence[str],
    *,
    selection: str,
    to: str | None = None,
    rate: float = DEFAULT_RATE,
    report: MoveReport,
    on_moved: Callable[[int], None] = lambda _count: None,
) -> MoveReport:
    """Send the messages of ``where`` that a preview chose, named by ``message_ids`` (a page that
    carried them from its preview), back to their source queue (or ``to``), recorded in the trail
    with the ``selection`` that chose them."""
    check_destination(tool, to)
    details = {"from": where.value, "selection": selection, "to": to or destinations(tool)}
    ticket = new_ticket(tool)
    with tool.action("replay", replay_id=ticket.replay_id, **details) as tally:
        try:
            replay(
                tool.scan(where),
                message_ids,
                lambda item: tool.source_for(item, to),
                table=tool.table,
                now=ticket.at,
                bucket=TokenBucket(rate, burst=10),
                report=report,
                on_moved=on_moved,
                verdict_key=ticket.verdict_key,
            )
        finally:
            _record(tool, report, details["selection"], ticket)
            tally.count = report.moved
            tally.problem = None if report.clean else _problem(report)
    return report


def check_destination(tool: Tool, to: str | None) -> None:
    """UsageError for ``to`` on a re-driver of another kind: a dead letter goes to its source's
    one target, never to a queue the operator names (checked before the preview)."""
    if to and tool.deployment.dead_letter_sources:
        raise UsageError(
            "--to names a queue; this re-driver's dead letters go back to each source's one target "
            "only: leave --to out"
        )


def destinations(tool: Tool) -> str:
    """Where a replay sends, for the audit trail: each source queue, or each source's target."""
    targets = sorted({source.target_arn for source in tool.deployment.dead_letter_sources})
    return "each source's target: " + ", ".join(targets) if targets else "each source"


def _record(tool: Tool, report: MoveReport, selection: str, ticket: Ticket) -> None:
    """Record what arrived, however the replay ended (an error, Ctrl-C); a failed write is said in
    the report, and never hides what moved."""
    try:
        if record_sent(tool, ReplayKind.REPLAY, report.sent, detail=selection, ticket=ticket):
            report.replay_id = ticket.replay_id
    except AwsCallError as exc:
        report.error = report.error or f"moved, but not recorded for `outcome`: {exc}"


def purge_chosen(
    tool: Tool,
    chosen: Chosen,
    *,
    report: MoveReport,
    on_moved: Callable[[int], None] = lambda _count: None,
) -> MoveReport:
    """Delete the chosen messages of the parking lot (archived copies stay), recorded in the trail."""
    if chosen.where is not Where.PARKING_LOT:
        raise UsageError("purge deletes from the parking lot only")
    with tool.action("purge", selection=describe(chosen.selection)) as tally:
        try:
            purge(tool.scan(chosen.where), chosen.message_ids, report=report, on_moved=on_moved)
        finally:
            tally.count = report.moved
            tally.problem = None if report.clean else _problem(report)
    return report


def _problem(report: MoveReport) -> str:
    parts = [report.error or ""]
    parts.append(f"{len(report.failed)} not moved" if report.failed else "")
    parts.append(f"{len(report.not_deleted)} sent but not deleted" if report.not_deleted else "")
    parts.append(f"{len(report.missing)} no longer there" if report.missing else "")
    parts.append(f"{report.hidden} held until their hold ends" if report.hidden else "")
    return "; ".join(part for part in parts if part) or "interrupted"


# What a move did.


@dataclass
class MoveReport:
    """What a replay or purge did; also what it did before an interruption."""

    moved: int = 0
    # Sent to the source queue but still in the parking lot (its delete failed): a duplicate.
    not_deleted: list[str] = field(default_factory=list)
    # Left where they were, and why.
    failed: dict[str, str] = field(default_factory=dict)
    # Chosen by the preview, but not in the queue when the move looked (moved meanwhile, or held by
    # a run or another reader): nothing was moved in their place.
    missing: list[str] = field(default_factory=list)
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
        return not (
            self.not_deleted or self.failed or self.missing or self.error or self.interrupted or self.hidden
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "moved": self.moved,
            "not_deleted": self.not_deleted,
            "failed": self.failed,
            "missing": self.missing,
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
        if self.missing:
            lines.append(
                "previewed but no longer in the queue (moved meanwhile, or held by a run), nothing moved "
                "in their place: " + ", ".join(self.missing)
            )
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


# The moves themselves, on one scan of the queue.


class Destination(Protocol):
    """Where a replayed or edited message goes: a source queue, or a dead letter's target."""

    url: str

    def send(self, messages: Sequence[Outgoing]) -> BatchResult: ...


class MarkTable(Protocol):
    def forget_marks(self, identities: Sequence[str]) -> None: ...


@dataclass(frozen=True)
class ScannedOrigin:
    """The scanned queue as a transfer's origin: each message deleted with the latest receipt
    handle the scan holds for it (``QueueScan.handle``), then forgotten by the scan (nothing to give
    back)."""

    scan: QueueScan

    def delete(self, receipt_handles: Mapping[str, str]) -> BatchResult:
        latest = {mid: self.scan.handle(mid, handle) for mid, handle in receipt_handles.items()}
        result = self.scan.queue.delete(latest)
        self.scan.forget(result.succeeded)
        return result


def replayed(item: Inspected, now: int, verdict_key: str | None = None) -> Tracked:
    """The message as it goes back to its source: count reset, the replay in its mark's history,
    and the replay's ``verdict_key`` (the consumer kit counts its verdicts under it)."""
    mark = item.mark or Mark(identity=item.identity, first_failed_at=item.failed_at)
    return Tracked(item.message, replace(mark.replayed(now), verdict_key=verdict_key))


def replay(
    scan: QueueScan,
    message_ids: Iterable[str],
    route: Callable[[Inspected], Destination | None],
    *,
    table: MarkTable,
    now: int,
    bucket: TokenBucket | None = None,
    report: MoveReport,
    on_moved: Callable[[int], None] = lambda _count: None,
    verdict_key: str | None = None,
) -> MoveReport:
    """Send the messages of ``scan``'s queue named by ``message_ids`` to the source queue ``route``
    names, then delete them from it, in batches of 10 per source (found messages wait, held, until
    a batch is full or the scan ends). The scan stops once it found them all; those it never found
    are ``missing``. Stops at the first AWS error of a whole call. ``verdict_key``: the replay's,
    in each mark sent."""
    mover = _Mover(scan, table, now, bucket, report, on_moved, verdict_key)
    unfound = dict.fromkeys(message_ids)
    with _moving(scan, report):
        for batch in scan.batches():
            for destination, items in _by_destination(_take(batch, unfound), route, report).items():
                mover.pending.setdefault(destination, []).extend(items)
            if not mover.flush(full_only=True):
                return report
            if not unfound:
                break
        if mover.flush(full_only=False):
            report.missing = list(unfound)
    return report


@dataclass
class _Mover:
    """Sends what replay found, a batch of 10 per source at a time."""

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
    transfer: Transfer = field(init=False)

    def __post_init__(self) -> None:
        self.transfer = Transfer(ScannedOrigin(self.scan))

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
                if not _send_and_delete(destination, batch, self, self.report):
                    return False
                self.on_moved(self.report.moved)
        if not any(self.pending.values()):
            self.waiting_since = None
        return True


def purge(
    scan: QueueScan,
    message_ids: Iterable[str],
    *,
    report: MoveReport,
    on_moved: Callable[[int], None] = lambda _count: None,
) -> MoveReport:
    """Delete the messages of ``scan``'s queue named by ``message_ids`` (the parking lot: archived
    copies stay). The scan stops once it found them all; those it never found are ``missing``."""
    origin = ScannedOrigin(scan)
    unfound = dict.fromkeys(message_ids)
    with _moving(scan, report):
        for batch in scan.batches():
            handles = {item.message.message_id: item.message.receipt_handle for item in _take(batch, unfound)}
            if handles and not _count_deleted(delete_from(origin, handles), report, sent=False):
                return report
            on_moved(report.moved)
            if not unfound:
                break
        report.missing = list(unfound)
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


def _take(batch: list[Inspected], unfound: dict[str, None]) -> list[Inspected]:
    """The messages of ``batch`` still to be found (each taken once), no longer ``unfound``."""
    taken = [item for item in batch if item.message.message_id in unfound]
    for item in taken:
        del unfound[item.message.message_id]
    return taken


def _by_destination(
    items: list[Inspected], route: Callable[[Inspected], Destination | None], report: MoveReport
) -> dict[Destination, list[Inspected]]:
    routed: dict[Destination, list[Inspected]] = {}
    for item in items:
        refusal = item.unreplayable
        if refusal is not None:
            report.failed[item.message.message_id] = f"not replayable: {refusal}"
            continue
        destination = route(item)
        if destination is None:
            report.failed[item.message.message_id] = (
                f"no configured source queue is {item.source}: choose one with --to"
            )
        else:
            routed.setdefault(destination, []).append(item)
    return routed


def _send_and_delete(
    destination: Destination, items: list[Inspected], mover: _Mover, report: MoveReport
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
    leaving = [replayed(item, mover.now, mover.verdict_key) for item in items]
    entries = [_entry(str(index), tracked, destination) for index, tracked in enumerate(leaving)]
    report.in_transit = [item.message.message_id for item in items]
    result = destination.send(entries)
    mover.transfer.book(result, leaving)
    for key, failure in result.failed.items():
        report.failed[items[int(key)].message.message_id] = f"{failure.code}: {failure.message}"
    report.sent += [Sent.of(items[int(key)], destination.url) for key in result.succeeded]
    deleted = _count_deleted(mover.transfer.delete_arrived(), report, sent=True)
    report.in_transit = []
    if not deleted:
        return False
    if result.call_error:
        report.error = result.call_error
        return False
    return True


def _entry(entry_id: str, tracked: Tracked, destination: Destination) -> Outgoing:
    """What goes back: the message with its mark (``replayed``), or a dead letter's payload."""
    dead_letter = tracked.message.dead_letter
    if dead_letter is not None:
        return delivered(entry_id, dead_letter)
    return outgoing(
        entry_id,
        tracked,
        tracked.mark.to_json(),
        delay=0,
        deduplication_id=deduplication_id(tracked, REPLAY_STEP),
        fifo=destination.url.endswith(".fifo"),
    )


def _count_deleted(deleted: BatchResult, report: MoveReport, *, sent: bool) -> bool:
    """Count what a delete did in the report; False when its call failed as a whole. A message
    ``sent`` elsewhere that is still here is a duplicate (``not_deleted``); one purged is left in
    place."""
    report.moved += len(deleted.succeeded)
    for message_id, failure in deleted.failed.items():
        if sent:
            report.not_deleted.append(message_id)
        elif failure.code != CALL_FAILED:
            report.failed[message_id] = f"{failure.code}: {failure.message}"
    if deleted.call_error:
        report.error = deleted.call_error
        return False
    return True
