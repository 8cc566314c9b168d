"""What became of each replay: recording what a replay, edit or group retry sent, and reading
back what became of it (the DLQ and the parking lot read once, the kit's verdicts, each source's
return window and what it holds now). ``outcome_rules`` decides; this reads and writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqs_redriver.console.aws import QueueDepth, queue_depth
from sqs_redriver.console.finding import read_all
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.console.outcome_rules import Observation, Outcome, Sent, copies, judge
from sqs_redriver.console.replay_records import (
    REPLAY_ID_PATTERN,
    CorruptReplay,
    Listed,
    ReplayKind,
    ReplayRecord,
    ReplayRecords,
    new_replay_id,
)
from sqs_redriver.console.shown import inert_str, some
from sqs_redriver.console.status import Status, read_status
from sqs_redriver.console.tool import NotFound, Tool
from sqs_redriver.protocol.keys import replay_verdict_key
from sqs_redriver.runtime.adapters import AwsCallError


class UnreadableReplay(NotFound):
    """A replay's record exists but cannot be read (exit code 1, one line naming the field)."""


@dataclass(frozen=True)
class Ticket:
    """A replay's id and time, chosen before it sends: its marks carry the verdict key."""

    replay_id: str
    at: int

    @property
    def verdict_key(self) -> str:
        return replay_verdict_key(self.at, self.replay_id)


def new_ticket(tool: Tool) -> Ticket:
    """The id and time of a replay about to send."""
    at = tool.now()
    return Ticket(new_replay_id(at), at)


def records(tool: Tool) -> ReplayRecords:
    return ReplayRecords(tool.deployment.table_name, tool.client("dynamodb"), tool.deployment.dlq_url)


def record_sent(
    tool: Tool,
    kind: ReplayKind | str,
    sent: Sequence[Sent],
    *,
    detail: str = "",
    ticket: Ticket | None = None,
) -> ReplayRecord | None:
    """Record which identities an action sent (``Sent.of`` makes each), for ``outcome``; the
    replay's ``ticket`` when its marks carry its verdict key. Nothing sent: nothing recorded."""
    if not sent:
        return None
    ticket = ticket or new_ticket(tool)
    record = ReplayRecord(ticket.replay_id, ReplayKind(kind), tool.who, ticket.at, detail, tuple(sent))
    records(tool).save(record)
    return record


@dataclass(frozen=True)
class Snapshot:
    """The DLQ and the parking lot, read once for every replay judged."""

    items: list[Inspected]
    gaps: str


def snapshot(tool: Tool) -> Snapshot:
    reads = [read_all(tool, Where.DLQ), read_all(tool, Where.PARKING_LOT)]
    gaps = "; ".join(read.gaps for read in reads if read.gaps)
    return Snapshot([item for read in reads for item in read.items], gaps)


def judge_replay(tool: Tool, record: ReplayRecord, seen: Snapshot) -> Outcome:
    """What became of ``record``'s identities, now."""
    unmarked_sent = record.kind is not ReplayKind.GROUP_RETRY
    ok = None
    if record.verdict_key is not None:
        verdicts = tool.table.load_verdicts(record.verdict_key)
        ok = verdicts.ok if verdicts.total else None
    sources = sorted({s.source for s in record.sent if s.source})
    observation = Observation(
        seen=copies(seen.items, record.at, unmarked_sent=unmarked_sent),
        now=tool.now(),
        windows=_windows(tool, sources),
        ok_verdicts=ok,
        complete=not seen.gaps,
        held=_held(tool, sources),
    )
    return judge(record.sent, record.at, observation)


def _windows(tool: Tool, sources: list[str]) -> dict[str, int]:
    """Each source's return window; one whose attributes cannot be read is left out (unknown)."""
    windows = {}
    for url in sources:
        try:
            windows[url] = tool.queue(url).redrive_window().seconds
        except (AwsCallError, ValueError):
            continue
    return windows


def _held(tool: Tool, sources: list[str]) -> dict[str, QueueDepth]:
    """What each source queue holds now; one that cannot be read is left out (unknown: a replayed
    message may be waiting there)."""
    held = {}
    for url in sources:
        try:
            depth = queue_depth(tool.client("sqs"), url)
        except (AwsCallError, ValueError):
            continue
        held[url] = depth
    return held


def recent(tool: Tool) -> list[Listed]:
    """The re-driver's recent replays, newest first; UnreadableReplay when the index is not one."""
    try:
        return records(tool).recent(now=tool.now())
    except CorruptReplay as exc:
        raise UnreadableReplay(str(exc)) from exc


def find(tool: Tool, wanted: str) -> ReplayRecord:
    """The replay ``wanted`` (its id, or the start of it) names; NotFound naming those there are."""
    listed = recent(tool)
    matches = [entry.replay_id for entry in listed if entry.replay_id.startswith(wanted)]
    if len(matches) > 1:
        raise NotFound(f"{inert_str(wanted)} names {len(matches)} replays: {some(matches)}; give more of it")
    replay_id = matches[0] if matches else wanted
    record = None
    if REPLAY_ID_PATTERN.fullmatch(replay_id):
        try:
            record = records(tool).load(replay_id, now=tool.now())
        except CorruptReplay as exc:
            raise UnreadableReplay(f"the record of replay {replay_id} cannot be read: {exc}") from exc
    if record is None:
        known = [entry.replay_id for entry in listed]
        raise NotFound(
            f"no replay {inert_str(wanted)} in the last 14 days; "
            + (f"recent ones: {some(known)} (see `outcome`)" if known else "none recorded")
        )
    return record


def latest_line(tool: Tool) -> str | None:
    """The latest replay's summary in one line, for ``status`` (None: no replay recorded)."""
    try:
        listed = recent(tool)
        if not listed:
            return None
        record = find(tool, listed[0].replay_id)
    except NotFound as exc:
        return f"latest replay: {exc}"
    outcome = judge_replay(tool, record, snapshot(tool))
    return f"latest replay {record.replay_id} ({record.kind.value} by {record.who}): {outcome.line()}"


@dataclass(frozen=True)
class Recent:
    """One recent replay, edit or group retry: its record and what became of it, or why its record
    cannot be read (``error``)."""

    listed: Listed
    record: ReplayRecord | None = None
    outcome: Outcome | None = None
    error: str = ""


def recent_outcomes(tool: Tool) -> tuple[list[Recent], Snapshot | None]:
    """The recent replays, newest first, each judged against one read of the DLQ and the parking
    lot (returned too: its gaps say what could not be read; None when there is no replay)."""
    listed = recent(tool)
    if not listed:
        return [], None
    seen = snapshot(tool)
    found = []
    for entry in listed:
        try:
            record = find(tool, entry.replay_id)
        except NotFound as exc:  # unreadable, or deleted by hand since it was listed
            found.append(Recent(entry, error=str(exc)))
            continue
        found.append(Recent(entry, record, judge_replay(tool, record, seen)))
    return found, seen


def status_with_latest_replay(tool: Tool) -> Status:
    """What ``status`` shows: the re-driver's state, and what became of its latest replay."""
    current = read_status(
        tool.deployment,
        sqs=tool.client("sqs"),
        cloudwatch=tool.client("cloudwatch"),
        table=tool.table,
        now=tool.now(),
    )
    return replace(current, latest_replay=latest_line(tool))
