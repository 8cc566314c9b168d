"""Replay and purge as the operator asks for them: the selection parsed, the messages it chooses
(previewed before anything moves), and the move inside its audit record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqs_redriver.console.finding import SAMPLE_ID_CHARS, read_all
from sqs_redriver.console.inventory import (
    Group,
    Inspected,
    Selection,
    Where,
    group,
    parse_attribute_filters,
    parse_duration,
)
from sqs_redriver.console.moves import MoveReport, purge, replay
from sqs_redriver.console.outcomes import Ticket, new_ticket, record_sent
from sqs_redriver.console.replay_records import ReplayKind
from sqs_redriver.console.shown import some
from sqs_redriver.console.tool import NotFound, Tool, UsageError
from sqs_redriver.runtime.act.ratelimit import TokenBucket
from sqs_redriver.runtime.adapters import AwsCallError

DEFAULT_RATE = 10.0


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
    """What a move would take: the messages, their groups, and what the scan could not read."""

    where: Where
    items: list[Inspected]
    groups: list[Group]
    gaps: str


def choose(tool: Tool, where: Where, selection: Selection, limit: int | None) -> Chosen:
    """The messages of ``where`` the selection takes (at most ``limit``), given back at once;
    NotFound when a group or id it names is in none of them (a typo must not read as "nothing to
    move")."""
    read = read_all(tool, where)
    _check_named(selection, read.items, where)
    chosen = [item for item in read.items if selection.matches(item, tool.now())][:limit]
    return Chosen(where, chosen, group(chosen), read.gaps)


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


def replay_chosen(
    tool: Tool,
    where: Where,
    selection: Selection,
    *,
    to: str | None = None,
    rate: float = DEFAULT_RATE,
    limit: int | None = None,
    report: MoveReport,
    on_moved: Callable[[int], None] = lambda _count: None,
) -> MoveReport:
    """Send the chosen messages back to their source queue (or ``to``), recorded in the trail."""
    details = {"from": where.value, "selection": describe(selection), "to": to or "each source"}
    ticket = new_ticket(tool)
    with tool.action("replay", replay_id=ticket.replay_id, **details) as tally:
        try:
            replay(
                tool.scan(where),
                selection,
                lambda item: tool.source_for(item, to),
                table=tool.table,
                now=ticket.at,
                limit=limit,
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
    selection: Selection,
    *,
    limit: int | None = None,
    report: MoveReport,
    on_moved: Callable[[int], None] = lambda _count: None,
) -> MoveReport:
    """Delete the chosen messages of the parking lot (archived copies stay), recorded in the trail."""
    with tool.action("purge", selection=describe(selection)) as tally:
        try:
            purge(
                tool.scan(Where.PARKING_LOT),
                selection,
                now=tool.now(),
                limit=limit,
                report=report,
                on_moved=on_moved,
            )
        finally:
            tally.count = report.moved
            tally.problem = None if report.clean else _problem(report)
    return report


def _problem(report: MoveReport) -> str:
    parts = [report.error or ""]
    parts.append(f"{len(report.failed)} not moved" if report.failed else "")
    parts.append(f"{len(report.not_deleted)} sent but not deleted" if report.not_deleted else "")
    parts.append(f"{report.hidden} held until their hold ends" if report.hidden else "")
    return "; ".join(part for part in parts if part) or "interrupted"
