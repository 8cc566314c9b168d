"""The fleet view's pure part: from every queue's parsed attributes and the re-drivers the stacks
publish, the account's dead-letter queues with their depth, age, time to expiry, sources and guards.
No AWS here: ``fleet.py`` reads, ``fleet_listing.py`` parses."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqs_redriver.console.fleet_listing import Depth, Listing, Problem
from sqs_redriver.console.queue_ref import QueueRef
from sqs_redriver.console.status import EXPIRY_WARNING_SECONDS


@dataclass(frozen=True)
class Guard:
    """A re-driver deployment that a stack publishes, and the DLQ it guards."""

    stack: str
    name: str
    dlq: QueueRef

    def to_dict(self) -> dict[str, str]:
        return {"stack": self.stack, "name": self.name}


@dataclass(frozen=True)
class Source:
    """A queue whose redrive policy names a DLQ."""

    ref: QueueRef
    url: str
    max_receive_count: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.ref.name, "url": self.url, "max_receive_count": self.max_receive_count}


@dataclass(frozen=True)
class FleetRow:
    """One dead-letter queue: depth, oldest age, time to expiry, sources, guards (None: unknown)."""

    queue: QueueRef
    url: str | None
    depth: Depth | None
    retention_seconds: int | None
    oldest_age_seconds: int | None
    sources: tuple[Source, ...]
    guards: tuple[Guard, ...] | None  # None: its region's stacks could not be read

    @property
    def time_to_expiry_seconds(self) -> int | None:
        """How long until SQS's retention deletes the oldest message (None while either is unknown)."""
        if self.oldest_age_seconds is None or self.retention_seconds is None:
            return None
        return self.retention_seconds - self.oldest_age_seconds

    def to_dict(self) -> dict[str, Any]:
        depth = self.depth
        return {
            "name": self.queue.name,
            "region": self.queue.region,
            "account": self.queue.account,
            "url": self.url,
            "visible": None if depth is None else depth.visible,
            "in_flight": None if depth is None else depth.in_flight,
            "delayed": None if depth is None else depth.delayed,
            "total": None if depth is None else depth.total,
            "retention_seconds": self.retention_seconds,
            "oldest_age_seconds": self.oldest_age_seconds,
            "time_to_expiry_seconds": self.time_to_expiry_seconds,
            "sources": [source.to_dict() for source in self.sources],
            "guarded_by": None if self.guards is None else [guard.to_dict() for guard in self.guards],
        }


@dataclass(frozen=True)
class Fleet:
    """The account's dead-letter queues in the regions read, most messages first, and the problems."""

    at: int
    regions: tuple[str, ...]
    rows: tuple[FleetRow, ...]
    problems: tuple[Problem, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "regions": list(self.regions),
            "dead_letter_queues": [row.to_dict() for row in self.rows],
            "problems": [problem.to_dict() for problem in self.problems],
        }


def dead_letter_refs(listing: Listing, guards: Sequence[Guard]) -> set[QueueRef]:
    """Every queue some redrive policy names or some re-driver guards."""
    named = {queue.dead_letter_target for queue in listing.queues.values()}
    return {ref for ref in named if ref is not None} | {guard.dlq for guard in guards}


def assemble(
    listing: Listing,
    guards: Sequence[Guard],
    ages: Mapping[QueueRef, int | None],
    *,
    at: int,
    regions: Sequence[str],
    problems: Iterable[Problem] = (),
    guards_unread: Collection[str] = (),
) -> Fleet:
    """The fleet: a row per DLQ of ``regions`` (most messages first, unknown depths last, then by
    name), and every problem, read or found, sorted. In ``guards_unread`` regions, whether a DLQ is
    guarded is unknown."""
    found = [*problems, *listing.problems]
    rows = []
    for ref in dead_letter_refs(listing, guards):
        if ref.region not in regions:
            continue
        row = _row(ref, listing, None if ref.region in guards_unread else guards, ages)
        found.extend(_row_problems(row, ref in listing.queues))
        rows.append(row)
    rows.sort(key=lambda row: (row.depth is None, -(row.depth.total if row.depth else 0), row.queue))
    return Fleet(at=at, regions=tuple(regions), rows=tuple(rows), problems=tuple(sorted(set(found))))


def _row(
    ref: QueueRef, listing: Listing, guards: Sequence[Guard] | None, ages: Mapping[QueueRef, int | None]
) -> FleetRow:
    queue = listing.queues.get(ref)
    sources = sorted(
        (
            Source(q.ref, q.url, q.max_receive_count)
            for q in listing.queues.values()
            if q.dead_letter_target == ref
        ),
        key=lambda source: source.ref,
    )
    return FleetRow(
        queue=ref,
        url=None if queue is None else queue.url,
        depth=None if queue is None else queue.depth,
        retention_seconds=None if queue is None else queue.retention_seconds,
        oldest_age_seconds=ages.get(ref),
        sources=tuple(sources),
        guards=None
        if guards is None
        else tuple(sorted((g for g in guards if g.dlq == ref), key=lambda g: (g.stack, g.name))),
    )


def _row_problems(row: FleetRow, listed: bool) -> list[Problem]:
    ref = row.queue
    found = []
    if not listed:
        named_by = ", ".join(source.ref.name for source in row.sources) or "-"
        guarded_by = ", ".join(guard.name for guard in row.guards or ()) or "-"
        found.append(
            Problem(
                ref.region,
                ref.name,
                f"not among the queues listed (deleted, or not listable); DLQ of {named_by}, "
                f"guarded by {guarded_by}",
            )
        )
    if row.guards is not None and len(row.guards) > 1:
        names = ", ".join(f"{guard.name} (stack {guard.stack})" for guard in row.guards)
        found.append(
            Problem(ref.region, ref.name, f"guarded by {len(row.guards)} re-drivers at once: {names}")
        )
    expiry = row.time_to_expiry_seconds
    if expiry is not None and expiry < EXPIRY_WARNING_SECONDS:
        found.append(Problem(ref.region, ref.name, f"the oldest message expires in {expiry} s"))
    return found
