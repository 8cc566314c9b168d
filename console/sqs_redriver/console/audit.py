"""The audit trail: every operator action, who did it, when, what and how many.

Each action writes two events to the deployment's audit log group (CloudWatch Logs, where an
operator may append but not edit or delete): ``begun`` before it touches anything, so an action
that cannot be recorded is not done, and ``ended`` with how many it moved or changed and how it
ended. Reading them back, an action with no ``ended`` event is shown as unfinished (the tool died).
Events are read as untrusted text: one that is not an audit event is counted, never fatal.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.console.aws import aws_call
from sqs_redriver.console.errors import AuditUnavailable
from sqs_redriver.core.errors import AwsCallError

# Details longer than this are cut: a reason is a sentence, not a document.
DETAIL_CHARS = 500
STREAM_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]+")


class Phase(StrEnum):
    BEGUN = "begun"
    ENDED = "ended"


class Outcome(StrEnum):
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    UNFINISHED = "unfinished"  # begun, never ended (read back only)


@dataclass(frozen=True)
class AuditEvent:
    """One event of an action: its start (what, by whom) or its end (how many, how it ended)."""

    action_id: str
    phase: Phase
    action: str
    who: str
    at: int
    target: str
    details: Mapping[str, str] = field(default_factory=dict)
    count: int | None = None
    outcome: Outcome | None = None
    error: str | None = None

    def to_json(self) -> str:
        payload: dict[str, Any] = {
            "id": self.action_id,
            "phase": self.phase.value,
            "action": self.action,
            "who": self.who,
            "at": self.at,
            "target": self.target,
            "details": dict(self.details),
        }
        if self.phase is Phase.ENDED:
            payload.update(count=self.count, outcome=self.outcome.value if self.outcome else None)
            payload["error"] = self.error
        return json.dumps(payload, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> AuditEvent:
        """Parse an event read back from the log; ValueError names the field that is wrong."""
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc.msg}") from exc
        if not isinstance(payload, dict):
            raise ValueError("not a JSON object")
        phase = Phase(_text(payload, "phase"))
        details = payload.get("details", {})
        if not isinstance(details, dict) or not all(isinstance(v, str) for v in details.values()):
            raise ValueError("details: not an object of strings")
        count = payload.get("count")
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
            raise ValueError(f"count: not a whole number: {count!r}")
        outcome = payload.get("outcome")
        error = payload.get("error")
        return cls(
            action_id=_text(payload, "id"),
            phase=phase,
            action=_text(payload, "action"),
            who=_text(payload, "who"),
            at=_whole(payload, "at"),
            target=_text(payload, "target"),
            details={str(k): v for k, v in details.items()},
            count=count,
            outcome=None if outcome is None else Outcome(str(outcome)),
            error=None if error is None else str(error),
        )


def _text(payload: Mapping[str, Any], name: str) -> str:
    value = payload.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name}: not a non-empty string: {value!r}")
    return value


def _whole(payload: Mapping[str, Any], name: str) -> int:
    value = payload.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name}: not a whole number: {value!r}")
    return value


@dataclass(frozen=True)
class AuditedAction:
    """An action as the trail tells it: its start joined with its end (if it ended)."""

    action_id: str
    action: str
    who: str
    at: int
    target: str
    details: Mapping[str, str]
    outcome: Outcome
    count: int | None
    error: str | None
    ended_at: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.action_id,
            "action": self.action,
            "who": self.who,
            "at": self.at,
            "target": self.target,
            "details": dict(self.details),
            "outcome": self.outcome.value,
            "count": self.count,
            "error": self.error,
            "ended_at": self.ended_at,
        }


def actions_from(events: Sequence[AuditEvent]) -> list[AuditedAction]:
    """Join each action's events, newest first. ``events`` are in the log's order (oldest first),
    which orders actions begun within the same second. An end with no start (its start fell
    outside the window read) is shown from the end's own fields."""
    begun = {e.action_id: e for e in events if e.phase is Phase.BEGUN}
    ended = {e.action_id: e for e in events if e.phase is Phase.ENDED}
    actions = []
    for action_id in reversed(dict.fromkeys(e.action_id for e in events)):
        start, end = begun.get(action_id), ended.get(action_id)
        first = start or end
        assert first is not None
        actions.append(
            AuditedAction(
                action_id=action_id,
                action=first.action,
                who=first.who,
                at=first.at,
                target=first.target,
                details=first.details,
                outcome=(end.outcome or Outcome.DONE) if end else Outcome.UNFINISHED,
                count=end.count if end else None,
                error=end.error if end else None,
                ended_at=end.at if end else None,
            )
        )
    return sorted(actions, key=lambda a: -a.at)  # stable: within a second, the later first


@dataclass
class ActionResult:
    """What an action sets while it runs: how many it moved or changed, and what went wrong
    without an exception (a move that stopped at an AWS error)."""

    count: int = 0
    problem: str | None = None
    # Set by the trail: the action ended but its end could not be written (it reads as unfinished).
    unrecorded_end: str | None = None


class AuditLog:
    """The audit log group of one deployment: writes an action's events, reads them back."""

    def __init__(self, logs: Any, group_name: str, *, target: str) -> None:
        self.logs = logs
        self.group_name = group_name
        self.target = target
        self._stream: str | None = None

    @contextmanager
    def action(self, action: str, who: str, now: Any, **details: str) -> Iterator[ActionResult]:
        """Record ``action`` begun (raise AuditUnavailable when that fails: nothing is done), run
        the body, then record how it ended, with the count the body set. ``now`` is the tool's
        clock (a callable giving epoch seconds)."""
        action_id = uuid.uuid4().hex
        cut = {name: value[:DETAIL_CHARS] for name, value in details.items() if value}
        moment = now()
        start = AuditEvent(action_id, Phase.BEGUN, action, who, int(moment), self.target, cut)
        try:
            self._put(start, moment)
        except AwsCallError as exc:
            raise AuditUnavailable(
                f"cannot record {action} in the audit log {self.group_name}: {exc}"
            ) from exc
        tally = ActionResult()
        try:
            yield tally
        except KeyboardInterrupt:
            self._end(start, tally, Outcome.INTERRUPTED, None, now)
            raise
        except Exception as exc:
            self._end(start, tally, Outcome.FAILED, str(exc)[:DETAIL_CHARS], now)
            raise
        if tally.problem:
            self._end(start, tally, Outcome.FAILED, tally.problem[:DETAIL_CHARS], now)
        else:
            self._end(start, tally, Outcome.DONE, None, now)

    def _end(
        self, start: AuditEvent, tally: ActionResult, outcome: Outcome, error: str | None, now: Any
    ) -> None:
        """Record the end. When that fails, the action's own report still reaches the operator
        (it moved what it moved): ``tally.unrecorded_end`` says the trail will show it unfinished."""
        moment = now()
        end = AuditEvent(
            start.action_id, Phase.ENDED, start.action, start.who, int(moment), start.target,
            start.details, tally.count, outcome, error,
        )  # fmt: skip
        try:
            self._put(end, moment)
        except AwsCallError as exc:
            tally.unrecorded_end = (
                f"{start.action} ended ({outcome.value}, {tally.count}), but its end could not be recorded "
                f"in the audit log {self.group_name}: the trail shows it unfinished ({exc})"
            )

    def _put(self, event: AuditEvent, moment: float) -> None:
        """Append ``event``, stamped to the millisecond at ``moment`` (epoch seconds): the log then
        holds a session's actions in the order they were done, even within a second."""
        if self._stream is None:
            stream = _stream_name(event.who, event.at)
            aws_call(
                "CreateLogStream",
                self.logs.create_log_stream,
                logGroupName=self.group_name,
                logStreamName=stream,
            )
            self._stream = stream  # only once it exists: a failed create is tried again next time
        aws_call(
            "PutLogEvents",
            self.logs.put_log_events,
            logGroupName=self.group_name,
            logStreamName=self._stream,
            logEvents=[{"timestamp": int(moment * 1000), "message": event.to_json()}],
        )

    def read(self, since: int, until: int, limit: int) -> tuple[list[AuditedAction], int]:
        """The actions begun or ended between ``since`` and ``until`` (epoch seconds), newest
        first, at most ``limit``; and how many events could not be read as audit events."""
        events: list[AuditEvent] = []
        unreadable = 0
        paginator = self.logs.get_paginator("filter_log_events")
        pages = paginator.paginate(logGroupName=self.group_name, startTime=since * 1000, endTime=until * 1000)
        try:
            for page in pages:
                for raw in page.get("events", []):
                    try:
                        events.append(AuditEvent.from_json(str(raw.get("message", ""))))
                    except ValueError:
                        unreadable += 1
        except (ClientError, BotoCoreError) as exc:
            raise AwsCallError(f"FilterLogEvents failed: {exc}") from exc
        return actions_from(events)[:limit], unreadable


def _stream_name(who: str, at: int) -> str:
    """One stream per tool session: the day, who (made safe for a stream name), a random suffix."""
    day = datetime.fromtimestamp(at, UTC).strftime("%Y/%m/%d")
    person = STREAM_UNSAFE.sub("_", who.rsplit("/", 1)[-1])[:64] or "unknown"
    return f"{day}/{person}/{uuid.uuid4().hex[:8]}"
