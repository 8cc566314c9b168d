"""In-memory stand-ins for the run's ports (adapters/ports.py) and builders of DLQ messages, for
unit tests of the decisions and of the executor with no moto."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqs_redriver.core.breaker import Breaker
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.sqs import CALL_FAILED, BatchResult, EntryFailure, Outgoing, RedriveWindow
from sqs_redriver.core.table import (
    RUN_HISTORY_LENGTH,
    DrainRecord,
    FleetView,
    GroupMark,
    MessageRecord,
    Pause,
    prevailing,
)
from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.protocol.mark import Mark

ACCOUNT = "123456789012"
QUEUE_URL = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/"
_ids = itertools.count(1)


def queue_url(name: str) -> str:
    return QUEUE_URL + name


def dlq_message(
    body: str = "{}",
    *,
    mark: Mark | None = None,
    attributes: Mapping[str, Any] | None = None,
    group: str | None = None,
    source: str | None = None,
    message_id: str | None = None,
    sent_at: int | None = None,
) -> DlqMessage:
    """A received DLQ message: ``source`` names the source queue as SQS does (by ARN)."""
    system: dict[str, str] = {}
    if group is not None:
        system["MessageGroupId"] = group
    if source is not None:
        system["DeadLetterQueueSourceArn"] = f"arn:aws:sqs:us-east-1:{ACCOUNT}:{source}"
    if sent_at is not None:
        system["SentTimestamp"] = str(sent_at * 1000)
    number = next(_ids)
    return DlqMessage(
        message_id=message_id or f"m-{number}",
        receipt_handle=f"rh-{number}",
        body=body,
        attributes=dict(attributes or {}),
        system_attributes=system,
        mark=mark,
    )


def marked(count: int, *, last_at: int = 0, identity: str | None = None, **kwargs: Any) -> DlqMessage:
    """A message re-driven ``count`` times, the last at ``last_at``."""
    history = tuple(range(last_at - count + 1, last_at + 1)) if count else ()
    mark = Mark(identity or f"id-{next(_ids)}", count, 1, history)
    return dlq_message(mark=mark, **kwargs)


@dataclass
class FakeQueue:
    """A queue that records every call; ``refuse`` maps a body to the failure its send gets."""

    name: str
    refuse: dict[str, EntryFailure] = field(default_factory=dict)
    fail_calls: set[str] = field(default_factory=set)  # operations whose calls fail as a whole
    window: RedriveWindow = RedriveWindow(visibility_timeout_seconds=30, max_receive_count=2)
    waiting: int = 0
    retention: int = 345_600  # SQS's default MessageRetentionPeriod, 4 days
    sent: list[Outgoing] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    hidden: dict[str, int] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return queue_url(self.name)

    def _call(self, operation: str) -> None:
        self.calls.append(f"{self.name}.{operation}")
        if operation in self.fail_calls:
            raise AwsCallError(f"{operation} on {self.name} failed (injected)")

    def receive(self, max_messages: int, *, wait_seconds: int, visibility_timeout: int) -> list[DlqMessage]:
        self._call("receive")
        return []

    def send(self, messages: Sequence[Outgoing]) -> BatchResult:
        """As the SQS adapter: a call that fails whole fails its entries, it does not raise."""
        self.calls.append(f"{self.name}.send")
        result = BatchResult()
        if "send" in self.fail_calls:
            result.call_error = f"send on {self.name} failed (injected)"
            result.failed = {m.entry_id: EntryFailure(CALL_FAILED, "injected", False) for m in messages}
            return result
        for message in messages:
            failure = self.refuse.get(message.body)
            if failure:
                result.failed[message.entry_id] = failure
            else:
                self.sent.append(message)
                result.succeeded.append(message.entry_id)
        return result

    def delete(self, receipt_handles: Mapping[str, str]) -> BatchResult:
        self._call("delete")
        self.deleted.extend(receipt_handles)
        return BatchResult(succeeded=list(receipt_handles))

    def change_visibility(self, hidden_for: Mapping[str, tuple[str, int]]) -> BatchResult:
        self._call("change_visibility")
        self.hidden.update({key: seconds for key, (_, seconds) in hidden_for.items()})
        return BatchResult(succeeded=list(hidden_for))

    def backlog(self) -> int:
        self._call("backlog")
        return self.waiting

    def redrive_window(self) -> RedriveWindow:
        self._call("redrive_window")
        return self.window

    def retention_seconds(self) -> int:
        self._call("retention_seconds")
        return self.retention


@dataclass
class FakeArchive:
    """An archive bucket; ``fail`` holds bodies whose PutObject fails. Each put is appended to
    ``journal`` (pass a queue's ``calls`` to see the order of steps)."""

    journal: list[str] = field(default_factory=list)
    fail: set[str] = field(default_factory=set)
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)

    def put(self, key: str, document: bytes) -> None:
        self.journal.append("archive.put")
        content = json.loads(document)
        if content["body"] in self.fail:
            raise AwsCallError(f"PutObject {key} failed (injected)")
        self.objects[key] = content


@dataclass
class FakeStateStore:
    breaker: Breaker = Breaker()
    records: list[MessageRecord] = field(default_factory=list)
    marks: dict[str, Mark] = field(default_factory=dict)
    # An operator's group marks, as written (both actions of a fingerprint may be: parking wins).
    group_marks: list[GroupMark] = field(default_factory=list)
    # The run history per key, newest first; ``fail_record_run`` makes record_run fail.
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    fail_record_run: bool = False
    # What the consumer kit reported, per verdict key; a list is read one entry per call, so a
    # test can let verdicts arrive while the run polls.
    verdicts: dict[str, list[VerdictCounts]] = field(default_factory=dict)
    sweep_due: dict[str, int] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    continuation_token: str | None = None
    pause: Pause | None = None
    drain: DrainRecord | None = None
    # A large drain's worker leases: key -> (token, expires_at).
    leases: dict[str, tuple[str, int]] = field(default_factory=dict)
    now: int = 0

    def load_breaker(self, key: str) -> Breaker:
        self.calls.append("load_breaker")
        return self.breaker

    def save_breaker(self, key: str, breaker: Breaker, *, expected_version: int) -> bool:
        self.calls.append("save_breaker")
        if self.breaker.version != expected_version:
            return False
        self.breaker = breaker
        return True

    def load_pause(self, key: str) -> Pause | None:
        self.calls.append("load_pause")
        return self.pause

    def offer_continuation(
        self, key: str, token: str, *, stale_after: int, holder: str | None = None
    ) -> bool:
        self.calls.append("offer_continuation")
        if self.continuation_token is not None and self.continuation_token != holder:
            return False
        self.continuation_token = token
        return True

    def take_continuation(self, key: str, token: str, *, hold_seconds: int) -> bool:
        self.calls.append("take_continuation")
        return self.continuation_token == token

    def release_continuation(self, key: str, token: str) -> None:
        self.calls.append("release_continuation")
        if self.continuation_token == token:
            self.continuation_token = None

    def load_drain(self, key: str) -> DrainRecord | None:
        self.calls.append("load_drain")
        return self.drain

    def save_drain(self, key: str, record: DrainRecord, *, expected_version: int | None) -> bool:
        self.calls.append("save_drain")
        if expected_version is not None and (self.drain.version if self.drain else 0) != expected_version:
            return False
        self.drain = replace(record, version=(expected_version or 0) + 1)
        return True

    def load_fleet_view(
        self, breaker_key: str, pause_key: str, drain_key: str, verdict_key: str | None = None
    ) -> FleetView:
        self.calls.append("load_fleet_view")
        verdicts = None if verdict_key is None else self._arriving(verdict_key)
        return FleetView(
            breaker=self.breaker, paused=self.pause is not None, drain=self.drain, verdicts=verdicts
        )

    def offer_worker(self, key: str, token: str, *, expires_at: int) -> bool:
        self.calls.append("offer_worker")
        held = self.leases.get(key)
        if held is not None and held[1] >= self.now:
            return False
        self.leases[key] = (token, expires_at)
        return True

    def hold_worker(self, key: str, token: str, *, expires_at: int, successor: str | None = None) -> bool:
        self.calls.append("hold_worker")
        if self.leases.get(key, ("", 0))[0] != token:
            return False
        self.leases[key] = (successor or token, expires_at)
        return True

    def release_worker(self, key: str, token: str) -> None:
        self.calls.append("release_worker")
        if self.leases.get(key, ("", 0))[0] == token:
            del self.leases[key]

    def load_marks(self, identities: Iterable[str]) -> dict[str, Mark]:
        self.calls.append("load_marks")
        return {i: self.marks[i] for i in identities if i in self.marks}

    def load_group_marks(self, fingerprints: Iterable[str]) -> dict[str, GroupMark]:
        self.calls.append("load_group_marks")
        wanted = set(fingerprints)
        return prevailing(m for m in self.group_marks if m.fingerprint in wanted)[0]

    def save_group_mark(self, mark: GroupMark) -> None:
        self.calls.append("save_group_mark")
        self.group_marks = [m for m in self.group_marks if m.fingerprint != mark.fingerprint] + [mark]

    def clear_group_mark(self, fingerprint: str) -> None:
        self.calls.append("clear_group_mark")
        self.group_marks = [m for m in self.group_marks if m.fingerprint != fingerprint]

    def record_run(self, key: str, summary: Mapping[str, object], keep: int = RUN_HISTORY_LENGTH) -> None:
        self.calls.append("record_run")
        if self.fail_record_run:
            raise AwsCallError("PutItem of the run history failed (injected)")
        self.runs[key] = [dict(summary), *self.runs.get(key, [])][:keep]

    def load_runs(self, key: str) -> list[dict[str, Any]]:
        self.calls.append("load_runs")
        return list(self.runs.get(key, []))

    def load_verdicts(self, verdict_key: str) -> VerdictCounts:
        self.calls.append("load_verdicts")
        return self._arriving(verdict_key)

    def _arriving(self, verdict_key: str) -> VerdictCounts:
        arriving = self.verdicts.get(verdict_key) or [VerdictCounts()]
        return arriving.pop(0) if len(arriving) > 1 else arriving[0]

    def save_records(self, records: Sequence[MessageRecord]) -> None:
        if records:
            self.calls.append("save_records")
            self.records.extend(records)

    def load_sweep_due(self, key: str) -> int:
        self.calls.append("load_sweep_due")
        return self.sweep_due.get(key, 0)

    def save_sweep_due(self, key: str, due_at: int) -> None:
        self.calls.append("save_sweep_due")
        self.sweep_due[key] = due_at
