"""The operator's controls over the runs, as the runs read them: the pause, the breakers and the
group records (retry or park a fingerprint on sight). Each action is checked, then done inside its
audit record; what it did comes back as a line to show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqs_redriver.console.errors import Conflict, NotFound, UsageError
from sqs_redriver.console.inventory import Where, is_fingerprint
from sqs_redriver.console.outcomes import ReplayKind, Sent, record_sent
from sqs_redriver.console.safe_text import inert_str, some
from sqs_redriver.console.tool import Tool, first_in_queues, read_all
from sqs_redriver.core.breaker import Breaker, Evidence
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import GroupAction, GroupMark, Pause
from sqs_redriver.protocol.keys import RecordKind


def pause(tool: Tool, reason: str) -> str:
    """Stop every run from re-driving until ``resume``."""
    with tool.action("pause", reason=reason) as tally:
        tool.table.save_pause(
            RecordKind.PAUSE.key(tool.deployment.dlq_url), Pause(reason, tool.who, tool.now())
        )
        tally.count = 1
    return f"paused by {tool.who}: {reason}"


NOT_PAUSED = "nothing to resume: the re-driver is not paused (the runs re-drive as usual)"


def resume(tool: Tool) -> str:
    """Let the next run re-drive again; say so when no pause was recorded (nothing is written
    then, nor recorded in the audit trail)."""
    key = RecordKind.PAUSE.key(tool.deployment.dlq_url)
    paused = tool.table.load_pause(key)
    if paused is None:
        return NOT_PAUSED
    with tool.action("resume", paused_by=paused.by, pause_reason=paused.reason) as tally:
        tool.table.clear_pause(key)
        tally.count = 1
    return f"resumed (paused by {paused.by}: {paused.reason}): the next run re-drives"


@dataclass(frozen=True)
class BreakerMove:
    """One breaker moved by hand."""

    source_url: str
    before: str
    after: str


def open_breakers(tool: Tool, reason: str, source: str | None = None) -> list[BreakerMove]:
    """Open the breaker of ``source`` (default: every source): runs send only canaries."""
    return _move_breakers(
        tool, "breaker-open", source, lambda b, now: b.opened(now, Evidence.OPERATOR), reason
    )


def close_breakers(tool: Tool, reason: str, source: str | None = None) -> list[BreakerMove]:
    """Close the breaker of ``source`` (default: every source): the next run re-drives."""
    return _move_breakers(
        tool, "breaker-close", source, lambda b, now: b.closed(now, Evidence.OPERATOR), reason
    )


def _move_breakers(
    tool: Tool, action: str, source: str | None, move: Callable[[Breaker, int], Breaker], reason: str
) -> list[BreakerMove]:
    urls = tool.deployment.sources
    if source is not None and source not in urls:
        raise UsageError(f"--source must be one of this re-driver's sources: {', '.join(urls)}")
    moves: list[BreakerMove] = []
    with tool.action(action, reason=reason, source=source or "every source") as tally:
        for url in [source] if source else urls:
            key = RecordKind.BREAKER.key(url)
            current = tool.table.load_breaker(key)
            moved = move(current, tool.now())
            if not tool.table.save_breaker(key, moved, expected_version=current.version):
                before = f" (moved before it: {', '.join(m.source_url for m in moves)})" if moves else ""
                raise Conflict(
                    f"a run changed the breaker of {url} just now{before}: look at `status` and try again"
                )
            moves.append(BreakerMove(url, current.state.value, moved.state.value))
            tally.count = len(moves)
    return moves


def mark_group(tool: Tool, fingerprint: str, action: GroupAction, reason: str, *, force: bool) -> str:
    """Record that a group's messages are retried (or parked) on sight."""
    if not is_fingerprint(fingerprint):
        raise UsageError(
            f"{inert_str(fingerprint)} is not an error fingerprint: only groups of consumer failures (the "
            "consumer kit's fingerprints in `groups`) can be retried or parked; replay or purge others"
        )
    if not force:
        _check_known(tool, fingerprint)
    with tool.action(f"{action.value}-group", fingerprint=fingerprint, reason=reason) as tally:
        tool.group_index.add(fingerprint)  # first: every record the tool writes is listed
        tool.table.save_group_mark(GroupMark(fingerprint, action, reason, tool.who, tool.now()))
        tally.count = 1
        followed = _record_retry(tool, fingerprint) if action is GroupAction.RETRY else ""
    return f"group {fingerprint}: {action.value} (by {tool.who}: {reason}){followed}"


def _record_retry(tool: Tool, fingerprint: str) -> str:
    """A group retry sends what the re-driver finds in the DLQ with this fingerprint: the
    messages there now are what it sends (the parking lot's stay parked until replayed). What it
    recorded, as the end of a line; a failure to record never undoes the rule."""
    try:
        in_dlq = [item for item in read_all(tool, Where.DLQ).items if item.group == fingerprint]
        routed = [(item, tool.source_for(item)) for item in in_dlq]
        # A message naming a source that is not this re-driver's is never re-driven: not followed.
        sent = [Sent.of(item, source.url) for item, source in routed if source is not None]
        record = record_sent(tool, ReplayKind.GROUP_RETRY, sent, detail=f"group={fingerprint}")
    except AwsCallError as exc:
        return f"; its messages are not followed for `outcome`: {exc}"
    return f"; {len(record.sent)} message(s) followed as replay {record.replay_id}" if record else ""


def clear_group(tool: Tool, fingerprint: str, *, force: bool) -> str:
    """Drop a group's retry or park record: the re-driver decides for it again."""
    if not force and fingerprint not in tool.table.load_group_marks([fingerprint]):
        recorded = tool.group_index.load()
        raise NotFound(
            f"group {inert_str(fingerprint)} has no retry or park record; records: "
            + (some(recorded) if recorded else "none")
            + " (see `rules`; --force deletes its records all the same)"
        )
    with tool.action("clear-group", fingerprint=fingerprint) as tally:
        tool.table.clear_group_mark(fingerprint)
        tool.group_index.remove(fingerprint)
        tally.count = 1
    return f"group {fingerprint}: no operator record"


def _check_known(tool: Tool, fingerprint: str) -> None:
    """Raise NotFound, naming the fingerprints there are, when no record and no message of the
    DLQ or the parking lot has ``fingerprint`` (most likely a typo)."""
    if fingerprint in tool.table.load_group_marks([fingerprint]):
        return
    found, seen = first_in_queues(tool, lambda item: item.group == fingerprint)
    if found is not None:
        return
    present = sorted({item.group for item in seen if is_fingerprint(item.group)})
    recorded = tool.group_index.load()
    raise NotFound(
        f"no message in the DLQ or the parking lot has fingerprint {inert_str(fingerprint)}, and no "
        f"record names it. Fingerprints there: {some(present) if present else 'none'}; with a record: "
        f"{some(recorded) if recorded else 'none'}. To record it for messages still to come, add --force"
    )
