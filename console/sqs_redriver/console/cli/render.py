"""How the command-line tool shows things to a person (``--json`` prints the data instead): the
views of status, groups, a message, the audit trail and the fleet, the rules and a move's summary."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console, RenderableType
from rich.console import Group as Stack
from rich.table import Table
from rich.text import Text

from sqs_redriver.console.audit import AuditedAction, Outcome
from sqs_redriver.console.aws import QueueDepth
from sqs_redriver.console.fleet import Fleet, FleetRow, Guard, OtherDestination
from sqs_redriver.console.inventory import Group, Inspected, Where, source_label
from sqs_redriver.console.replay import MoveReport
from sqs_redriver.console.safe_text import age, clipped, duration, inert, inert_str, some, when
from sqs_redriver.console.status import EXPIRY_WARNING_SECONDS, DrainProgress, DrainState, Status
from sqs_redriver.console.tool import SAMPLE_ID_CHARS
from sqs_redriver.core.breaker import State
from sqs_redriver.core.table import GroupMark

STATE_STYLE = {State.CLOSED: "green", State.HALF_OPEN: "yellow", State.OPEN: "bold red"}
LAST_RUNS_SHOWN = 5
# What `show` prints of a dead letter's payload (--json gives it whole).
PAYLOAD_SHOWN_CHARS = 4_000
QUEUE_LABEL = {Where.DLQ: "DLQ", Where.PARKING_LOT: "lot"}
DRAIN_STYLE = {DrainState.GOING: "green", DrainState.INTERRUPTED: "yellow", DrainState.ENDED: ""}


def as_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str)


def print_json(console: Console, data: Any) -> None:
    """``data`` as JSON, faithful and inert: every non-ASCII or control character escaped."""
    console.print_json(as_json(data), ensure_ascii=True)


def status_view(status: Status) -> RenderableType:
    now = status.at
    parts: list[RenderableType] = [inert(f"re-driver {status.deployment.name}", style="bold")]
    if status.pause is not None:
        pause = status.pause
        parts.append(
            inert(f"PAUSED by {pause.by} {when(pause.at, now)}: {pause.reason}", style="bold yellow")
        )
    breakers = Table(
        "source queue", "breaker", "since", "moved by", "failures", "canary", title="Circuit breakers"
    )
    for url, breaker in status.breakers.items():
        breakers.add_row(
            inert(_name(url)),
            Text(breaker.state.value, style=STATE_STYLE[breaker.state]),
            when(breaker.changed_at, now),
            breaker.evidence.value,
            str(breaker.failures),
            "in flight" if breaker.canary is not None else "-",
        )
    parts.append(breakers)
    parts.append(_queues(status))
    if status.drain is not None:
        parts.append(drain_view(status.drain))
    if status.runs:
        parts.append(_runs(status, now))
    if status.latest_replay:
        parts.append(inert(status.latest_replay))
    problems = status.problems
    parts.append(
        inert("\n".join(f"! {p}" for p in problems), multiline=True, style="red")
        if problems
        else Text("ok", style="green")
    )
    return Stack(*parts)


def _queues(status: Status) -> Table:
    table = Table("queue", "role", "visible", "in flight", "delayed", "note", title="Queues")
    for depth in status.sources:
        table.add_row(*_depth_cells(depth, "source"), "")
    expiry = status.dlq_time_to_expiry_seconds
    note = (
        f"oldest {duration(status.dlq_oldest_age_seconds or 0)}, expires in {duration(expiry)}"
        if expiry is not None
        else f"retention {duration(status.dlq.retention_seconds)}; oldest age not published"
    )
    table.add_row(*_depth_cells(status.dlq, "DLQ"), note)
    table.add_row(*_depth_cells(status.parking_lot, "parking lot"), "")
    return table


def _depth_cells(depth: QueueDepth, role: str) -> list[RenderableType]:
    return [inert(depth.name), role, str(depth.visible), str(depth.in_flight), str(depth.delayed)]


def drain_view(progress: DrainProgress) -> Table:
    """The latest large drain: going, interrupted or ended; messages left, rate, workers, time to empty."""
    table = Table(title="Large drain", show_header=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for label, text in progress.rows():
        table.add_row(label, inert(text, style=DRAIN_STYLE[progress.state] if label == "state" else ""))
    return table


def _runs(status: Status, now: int) -> Table:
    table = Table(
        "started",
        "mode",
        "breaker",
        "received",
        "re-driven",
        "parked",
        "returned",
        "stopped",
        title="Last runs",
    )
    for run in status.runs[:LAST_RUNS_SHOWN]:
        row = run.to_dict()
        mode = "PAUSED" if row.get("paused") else inert_str(str(row.get("mode", "")))
        if row.get("continuation"):
            mode += " (cont.)"
        table.add_row(
            when(int(row.get("at", 0)), now),
            Text(mode),
            inert(row.get("breaker_state", "")),
            *(inert(row.get(name, 0)) for name in ("received", "redriven", "parked", "returned")),
            inert(row.get("stopped_because", "")),
        )
    return table


def groups_table(groups: Sequence[Group], now: int, *, title: str) -> Table:
    """One row per group: its key (for ``--group``), count, ages, sources, a sample (for ``show``)."""
    table = Table(title=title)
    table.add_column("queue", no_wrap=True)
    table.add_column("group", no_wrap=True)
    table.add_column("count", justify="right")
    table.add_column("oldest", no_wrap=True)
    table.add_column("newest", no_wrap=True)
    table.add_column("sources")
    table.add_column("sample", no_wrap=True)
    table.add_column("what failed", min_width=16)
    for group in groups:
        table.add_row(
            QUEUE_LABEL[group.where],
            inert(group.key),
            str(group.count),
            age(group.oldest, now),
            age(group.newest, now),
            inert(", ".join(_name(s) for s in sorted(group.sources)) or "-"),
            inert(group.sample_id[:SAMPLE_ID_CHARS]),
            inert(group.label),
        )
    return table


def message_view(item: Inspected, now: int) -> RenderableType:
    message = item.message
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("queue", item.where.value)
    table.add_row("message id", inert(message.message_id))
    table.add_row("identity", inert(item.identity))
    table.add_row("group", inert(item.group))
    table.add_row("source", inert(item.source or "-"))
    if item.dead_letter is not None:
        _dead_letter_rows(table, item)
    table.add_row("sent", when(item.sent_at, now))
    if item.mark is not None:
        mark = item.mark
        table.add_row("re-drives", str(mark.count))
        table.add_row("first failed", when(mark.first_failed_at, now))
        table.add_row("re-driven at", ", ".join(when(at, now) for at in mark.redriven_at) or "-")
        table.add_row("replays", ", ".join(f"{when(at, now)} after {n}" for at, n in mark.replays) or "-")
        if mark.last_edit is not None:
            edited_at, archive_key = mark.last_edit
            table.add_row(
                "edits", inert(f"{mark.edits}, the last {when(edited_at, now)}: original at {archive_key}")
            )
    if item.failure is not None:
        failure = item.failure
        table.add_row("failure", inert(f"{failure.kind.value} {failure.error_class}: {failure.message}"))
        table.add_row("fingerprint", inert(failure.fingerprint))
    if item.parking is not None:
        table.add_row("parked", inert(item.parking))
    for name, value in message.attributes.items():
        table.add_row(inert(f"attribute {name}"), inert(value.get("StringValue", "<binary>")))
    parts: list[RenderableType] = [table, Text("body:", style="bold"), inert(message.body, multiline=True)]
    payload = item.dead_letter.payload if item.dead_letter is not None else None
    if payload is not None:
        parts.append(Text("payload (what goes back to its target):", style="bold"))
        parts.append(inert(clipped(payload, PAYLOAD_SHOWN_CHARS), multiline=True))
    return Stack(*parts)


def _dead_letter_rows(table: Table, item: Inspected) -> None:
    """A dead letter of another service: its source and target, the cause the source gave, the
    request, and whether it can go back (and why not)."""
    dead_letter = item.dead_letter
    assert dead_letter is not None
    source = dead_letter.source
    if source is not None:
        table.add_row("source kind", inert(f"{source.kind.value} ({source_label(source)})"))
        table.add_row("target", inert(f"{source.target_kind.value} {source.target_arn}"))
    cause = dead_letter.cause
    table.add_row("cause", inert(f"{cause.code}: {cause.message}" if cause is not None else "-"))
    table.add_row("request id", inert(dead_letter.request_id or "-"))
    why_not = item.unreplayable
    table.add_row("replayable", inert("yes" if why_not is None else f"no: {why_not}"))


def dead_letter_dict(item: Inspected) -> dict[str, Any] | None:
    """What ``show --json`` says of a dead letter of another service (None: it is not one)."""
    dead_letter = item.dead_letter
    if dead_letter is None:
        return None
    source, cause = dead_letter.source, dead_letter.cause
    return {
        "source": None if source is None else {"address": source.address, **source.to_json()},
        "origin": dead_letter.origin,
        "cause": None if cause is None else {"code": cause.code, "message": cause.message},
        "request_id": dead_letter.request_id,
        "replayable": item.unreplayable is None,
        "unreplayable_because": item.unreplayable,
        "payload": dead_letter.payload,
        "payload_attributes": {name: dict(value) for name, value in dead_letter.attributes.items()},
    }


def message_dict(item: Inspected) -> dict[str, Any]:
    message = item.message
    mark = item.mark
    return {
        "queue": item.where.value,
        "message_id": message.message_id,
        "identity": item.identity,
        "group": item.group,
        "source": item.source,
        "sent_at": item.sent_at,
        "body": message.body,
        "attributes": {name: dict(value) for name, value in message.attributes.items()},
        "system_attributes": dict(message.system_attributes),
        "mark": None if mark is None else json.loads(mark.to_json()),
        "parked": None if item.parked is None else dict(item.parked),
        "dead_letter": dead_letter_dict(item),
    }


def group_mark_dict(mark: GroupMark) -> dict[str, Any]:
    return {
        "fingerprint": mark.fingerprint,
        "action": mark.action.value,
        "by": mark.by,
        "at": mark.at,
        "reason": mark.reason,
    }


def rules_table(marks: Sequence[GroupMark], now: int) -> Table:
    """One row per operator's record: the fingerprint, retry or park, who, when, why."""
    table = Table(title=f"{len(marks)} retry or park record(s)")
    table.add_column("fingerprint", no_wrap=True)
    table.add_column("action", no_wrap=True)
    table.add_column("by")
    table.add_column("when", no_wrap=True)
    table.add_column("reason", min_width=16)
    for mark in marks:
        table.add_row(
            inert(mark.fingerprint), mark.action.value, inert(mark.by), when(mark.at, now), inert(mark.reason)
        )
    return table


def move_summary(verb: str, report: MoveReport) -> Text:
    lines = report.summary_lines(verb)
    return Text("\n".join(inert_str(line) for line in lines), style="green" if report.clean else "yellow")


def _name(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]


# ``audit``: the operator actions the trail recorded, newest first.
OUTCOME_STYLE = {
    Outcome.DONE: "green",
    Outcome.FAILED: "red",
    Outcome.INTERRUPTED: "yellow",
    Outcome.UNFINISHED: "bold red",
}


def audit_table(actions: list[AuditedAction], now: int, since: str) -> Table:
    """One row per action: when, who, what (with its details), how it ended, how many."""
    table = Table(title=f"{len(actions)} operator action(s) in the last {since}")
    table.add_column("when", no_wrap=True)
    table.add_column("who")
    table.add_column("action", no_wrap=True)
    table.add_column("details", min_width=16)
    table.add_column("outcome", no_wrap=True)
    table.add_column("count", justify="right")
    for action in actions:
        details = "; ".join(f"{name}: {value}" for name, value in sorted(action.details.items()))
        outcome = action.outcome.value + (f": {action.error}" if action.error else "")
        table.add_row(
            when(action.at, now),
            inert(action.who),
            inert(action.action),
            inert(details),
            inert(outcome, style=OUTCOME_STYLE[action.outcome]),
            "" if action.count is None else str(action.count),
        )
    return table


# ``fleet``: every dead-letter queue of the account, how full and how old, and who guards it.
SOURCES_SHOWN = 3


def fleet_view(found: Fleet) -> RenderableType:
    """The dead-letter queues as a table, the destinations that are not queues, the calls made,
    then the problems."""
    holding = sum(1 for row in found.rows if row.depth is not None and row.depth.total)
    several = len(found.regions) > 1
    table = Table(
        title=f"{len(found.rows)} dead-letter queue(s) in {', '.join(found.regions)}; {holding} hold messages"
    )
    table.add_column("queue", overflow="fold")  # a name cut short names another queue
    if several:
        table.add_column("region", no_wrap=True)
    table.add_column("kind")
    for name in ("visible", "in flight", "delayed"):
        table.add_column(name, justify="right")
    table.add_column("oldest", justify="right", no_wrap=True)
    table.add_column("expires in", justify="right", no_wrap=True)
    table.add_column("sources", overflow="fold")
    table.add_column("guarded by", overflow="fold")
    for row in found.rows:
        region = [row.queue.region] if several else []
        kinds = ", ".join(row.kinds) or "-"
        table.add_row(inert(row.queue.name), *region, kinds, *_cells(row))
    parts: list[RenderableType] = [table]
    if found.elsewhere:
        parts.append(_elsewhere_table(found.elsewhere, several=several))
    if found.calls:
        parts.append(Text(found.calls_summary(), style="dim"))
    parts.append(
        inert("\n".join(f"! {problem}" for problem in found.problems), multiline=True, style="red")
        if found.problems
        else Text("ok", style="green")
    )
    return Stack(*parts)


def _cells(row: FleetRow) -> list[RenderableType]:
    depth = row.depth
    counts = ["?"] * 3 if depth is None else [str(depth.visible), str(depth.in_flight), str(depth.delayed)]
    empty = depth is not None and depth.total == 0
    oldest = "-" if empty else _known(row.oldest_age_seconds)
    expiry = row.time_to_expiry_seconds
    expires = Text(
        "-" if empty else _known(expiry),
        style="bold red" if expiry is not None and expiry < EXPIRY_WARNING_SECONDS else "",
    )
    sources = inert(some([source.label for source in row.sources], shown=SOURCES_SHOWN) or "-")
    return [*counts, oldest, expires, sources, _guard_cell(row.guards, holds_messages=not empty)]


def _elsewhere_table(elsewhere: Sequence[OtherDestination], *, several: bool) -> RenderableType:
    """The dead-letter destinations that are not SQS queues, each with the source sending to it
    (under a heading of its own: a title would wrap to the table's width)."""
    heading = Text(
        f"{len(elsewhere)} dead-letter destination(s) that are not SQS queues: not re-drivable by this tool"
    )
    table = Table()
    table.add_column("destination", overflow="fold")
    if several:
        table.add_column("region", no_wrap=True)
    table.add_column("kind")
    table.add_column("source", overflow="fold")
    for other in elsewhere:
        region = [other.region] if several else []
        table.add_row(inert(other.destination), *region, other.source.kind.value, inert(other.source.label))
    return Stack(heading, table)


def _known(seconds: int | None) -> str:
    return "unknown" if seconds is None else duration(seconds)


def _guard_cell(guards: tuple[Guard, ...] | None, *, holds_messages: bool) -> Text:
    if guards is None:
        return Text("unknown", style="yellow")
    if not guards:
        return Text("unguarded", style="yellow" if holds_messages else "")
    return inert(", ".join(guard.label for guard in guards))
