"""The fleet view's pure part: from every queue's parsed attributes and the re-drivers the stacks
publish, the account's dead-letter queues with their depth, age, time to expiry, sources and guards.
No AWS here: ``fleet.py`` reads, ``fleet_listing.py`` parses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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

    @property
    def label(self) -> str:
        """The re-driver's construct path, and its stack when the path does not start with it."""
        return self.name if self.name.startswith(f"{self.stack}/") else f"{self.name} (stack {self.stack})"

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


@dataclass
class Gaps:
    """What the reads could not do: the problems they met, the regions whose queues were not all
    listed (a DLQ not found there may exist), and those whose stacks were not read (guards unknown)."""

    problems: list[Problem] = field(default_factory=list)
    unlisted: set[str] = field(default_factory=set)
    guards_unread: set[str] = field(default_factory=set)


def assemble(
    listing: Listing,
    guards: Sequence[Guard],
    ages: Mapping[QueueRef, int | None],
    *,
    at: int,
    regions: Sequence[str],
    gaps: Gaps | None = None,
) -> Fleet:
    """The fleet: a row per DLQ of ``regions`` (most messages first, unknown depths last, then by
    name), and every problem, read or found, sorted."""
    gaps = gaps or Gaps()
    found = [*gaps.problems, *listing.problems]
    rows = []
    for ref in dead_letter_refs(listing, guards):
        if ref.region not in regions:
            continue
        row = _row(ref, listing, None if ref.region in gaps.guards_unread else guards, ages)
        missing = ref not in listing.queues and ref.region not in gaps.unlisted
        found.extend(_row_problems(row, missing))
        rows.append(row)
    rows.sort(key=_most_messages_first)
    return Fleet(at=at, regions=tuple(regions), rows=tuple(rows), problems=tuple(sorted(set(found))))


def _most_messages_first(row: FleetRow) -> tuple[bool, int, str, str, str]:
    total = row.depth.total if row.depth else 0
    return row.depth is None, -total, row.queue.name, row.queue.region, row.queue.account


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


def _row_problems(row: FleetRow, missing: bool) -> list[Problem]:
    ref = row.queue
    found = []
    if missing:
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
