"""A partial outage is held, not parked: the failure groups whose failures are named transient, held
in the DLQ while one canary at a time tests each, released when it passes (docs/design.md, "Poison
isolation").

A failure is **named transient** by the consumer kit (its ``err.kind``) or, for a dead letter of
another kind, by its source's error read with the default rules (protocol/transient.py). Its
**group** is the unit of an outage: the kit's fingerprint, or for a source's error a hash of the
source's address, the error's code and its normalized message (``src-`` and 16 hex characters).
Such a failure is never parked by its count (the re-drive limit, the suspect limit); when it
reaches one, its group is **held**:

- its messages wait in the DLQ (hidden until the group's next decision), the rest of the DLQ flows;
- when its next canary is due, one message of the group goes as that **canary**, with no delay, tagged for
  the kit's verdict when the consumer reports them; failed_canaries are spaced by the backoff's steps, at
  most ``MAX_CANARY_INTERVAL_SECONDS`` apart, so the outage's end is heard within a schedule period;
- the canary fails: back in the DLQ after its re-drive, the kit's transient or terminal verdict,
  or the target's own answer (a function probed synchronously): the next canary goes a step later;
- it passes: the kit's ok, or not back when its verdict is due: the group is **released**, and its
  messages are re-driven at once when next received; one that fails again after the release holds
  the group again.

The retention guard still parks a held message before the DLQ deletes it (holds end before its
expiring window), an operator's ``PARK#`` still parks its group, and a failure that is terminal or
not named at all is judged as before (parked as poison by its count). Pure rules first; then the
run's view of the ``HELD#`` record (``HeldGroups``), read once per run, written when it changes.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from sqs_redriver.core.table import MAX_HELD_GROUPS, HeldGroup
from sqs_redriver.protocol.failure import FailureKind
from sqs_redriver.protocol.transient import normalize_message, transient_words
from sqs_redriver.runtime import backoff

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from sqs_redriver.core.message import Tracked
    from sqs_redriver.protocol.failure import VerdictCounts

# A held group's canaries go at least this often: the schedule's default period, so a group's
# outage that ended is heard by the next run or the one after, for one delivery per period.
MAX_CANARY_INTERVAL_SECONDS = 300
# A released group is remembered this long (a message re-driven at its release that fails again
# holds it again at once); then forgotten.
RELEASE_MEMORY_SECONDS = 86_400
SOURCE_GROUP_PREFIX = "src-"
SOURCE_GROUP_VERSION = "v1"


def failure_group(tracked: Tracked) -> str | None:
    """The group of the message's failure when it is named transient, else None."""
    failure = tracked.mark.failure
    if failure is not None:
        return failure.fingerprint if failure.kind is FailureKind.TRANSIENT else None
    dead_letter = tracked.message.dead_letter
    cause = dead_letter.cause if dead_letter is not None else None
    if dead_letter is None or cause is None or not transient_words(cause.code, cause.message):
        return None
    source = dead_letter.source.address if dead_letter.source is not None else dead_letter.origin
    text = "\n".join((SOURCE_GROUP_VERSION, source, cause.code, normalize_message(cause.message)))
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
    return SOURCE_GROUP_PREFIX + digest


def canary_step(failed_canaries: int, *, base_seconds: int, max_seconds: int) -> int:
    """How long after ``failed_canaries`` failed canaries the next one goes: the backoff's step,
    at most MAX_CANARY_INTERVAL_SECONDS (at least a second)."""
    cap = max(1, min(max_seconds, MAX_CANARY_INTERVAL_SECONDS))
    return max(
        1, min(cap, backoff.backoff_step(failed_canaries + 1, base_seconds=base_seconds, max_seconds=cap))
    )


class Held(StrEnum):
    """What a message of a named-transient failure gets in a re-drive step."""

    NOT_HELD = "not held"  # its group is not held and it is under its limits: backoff as any
    HOLD = "hold"  # it waits in the DLQ until ``until``
    CANARY = "canary"  # it goes now, its group's canary
    RELEASED = "released"  # its group's canary passed: it goes now, with no delay


@dataclass(frozen=True)
class Holding:
    """The decision on one message, and its group as the decision leaves it (None: not held)."""

    held: Held
    group: HeldGroup | None = None
    until: int = 0


@dataclass(frozen=True)
class CanaryRules:
    base_seconds: int
    max_seconds: int

    def next_canary(self, failed_canaries: int, now: int) -> int:
        return now + canary_step(
            failed_canaries, base_seconds=self.base_seconds, max_seconds=self.max_seconds
        )


def decide(
    tracked: Tracked,
    group_name: str,
    group: HeldGroup | None,
    *,
    at_limit: bool,
    now: int,
    rules: CanaryRules,
    room: bool = True,
) -> Holding:
    """The message's fate in a re-drive step (see the module's docstring); ``at_limit``: it would
    be parked by its count if its failure were not named transient; ``room``: the record has room
    for another held group (without, a group that is not held yet is left to the backoff)."""
    if group is None or (not group.held and tracked.redriven_since(group.released_at)):
        if (group is None and not at_limit) or not room:
            return Holding(Held.NOT_HELD)
        # The outage begins (or goes on after a release that was too early): the group is held.
        started = HeldGroup(group_name, since=now, canary_at=rules.next_canary(0, now))
        return Holding(Held.HOLD, started, started.canary_at)
    if not group.held:
        return Holding(Held.RELEASED, group)
    if group.canary:
        if tracked.mark.identity == group.canary and tracked.redriven_since(group.sent_at):
            return Holding(Held.HOLD, *_canary_failed(group, now, rules))
        return Holding(Held.HOLD, group, max(group.verdict_at, now))
    if now >= group.canary_at:
        return Holding(Held.CANARY, replace(group, canary=tracked.mark.identity, sent_at=now))
    return Holding(Held.HOLD, group, group.canary_at)


def _canary_failed(group: HeldGroup, now: int, rules: CanaryRules) -> tuple[HeldGroup, int]:
    failed = replace(
        group,
        failed_canaries=group.failed_canaries + 1,
        canary_at=rules.next_canary(group.failed_canaries + 1, now),
        canary="",
        sent_at=0,
        verdict_at=0,
        verdict_key="",
    )
    return failed, failed.canary_at


def judged(group: HeldGroup, verdicts: VerdictCounts | None, *, now: int, rules: CanaryRules) -> HeldGroup:
    """A held group whose canary is out, judged before a batch: the kit's verdict on it (ok:
    passed; transient or terminal: failed), or, without one, not back when its verdict was due:
    passed. Otherwise as it was."""
    if not group.held or not group.canary:
        return group
    if verdicts is not None and (verdicts.transient or verdicts.terminal):
        return _canary_failed(group, now, rules)[0]
    if (verdicts is not None and verdicts.ok) or now >= group.verdict_at:
        return released(group, now)
    return group


def released(group: HeldGroup, now: int) -> HeldGroup:
    return replace(group, canary="", sent_at=0, verdict_at=0, verdict_key="", released_at=now)


def not_sent(group: HeldGroup, *, failed_at_target: bool, now: int, rules: CanaryRules) -> HeldGroup:
    """Its canary was not delivered: the target failed it at once (a function probed synchronously:
    a failed canary), or the send failed (the next a step later, its count unchanged)."""
    if failed_at_target:
        return _canary_failed(group, now, rules)[0]
    canary_at = rules.next_canary(group.failed_canaries, now)
    return replace(group, canary="", sent_at=0, verdict_at=0, verdict_key="", canary_at=canary_at)


def kept(groups: Iterable[HeldGroup], *, now: int) -> list[HeldGroup]:
    """The groups a record keeps: the held ones (the oldest first when they are too many), then
    the recently released; the rest forgotten."""
    held = sorted((g for g in groups if g.held), key=lambda g: g.since)
    recent = sorted(
        (g for g in groups if not g.held and now - g.released_at < RELEASE_MEMORY_SECONDS),
        key=lambda g: -g.released_at,
    )
    return (held + recent)[:MAX_HELD_GROUPS]


# The run's view of the held groups: read once per run, judged before each batch, written when a
# batch's plan changes it (before its canaries are sent: a canary is recorded before it goes).


class HeldStore(Protocol):
    """What the view reads and writes: the state table."""

    def load_held(self, key: str) -> tuple[HeldGroup, ...]: ...

    def save_held(self, key: str, groups: Sequence[HeldGroup]) -> None: ...

    def load_verdicts(self, verdict_key: str) -> VerdictCounts: ...


class HeldGroups:
    """The held groups of one DLQ, as this run knows them; ``begin_run`` forgets the last run's."""

    def __init__(
        self, store: HeldStore, *, key: str, rules: CanaryRules, reads_verdicts: bool, logger: Any
    ) -> None:
        self._store = store
        self._key = key
        self.rules = rules
        self._reads_verdicts = reads_verdicts
        self._log = logger
        self._lock = threading.Lock()  # a run's parallel batches share one view
        self._groups: dict[str, HeldGroup] | None = None

    def begin_run(self) -> None:
        with self._lock:
            self._groups = None

    @property
    def key(self) -> str:
        return self._key

    @property
    def loaded(self) -> bool:
        with self._lock:
            return self._groups is not None

    def current(self, now: int, record: Sequence[HeldGroup] | None = None) -> dict[str, HeldGroup]:
        """The groups, their canaries judged (the kit's verdicts read for those it reports on);
        written back when a judgment changed one. ``record``: the record as a batch read it beside
        its other records (none: read here when this run has not yet)."""
        with self._lock:
            known = self._groups
        if known is None:
            read = self._store.load_held(self._key) if record is None else record
            known = {g.group: g for g in read}
        judged_now = {name: self._judged(group, now) for name, group in known.items()}
        with self._lock:
            self._groups = {**(self._groups or {}), **judged_now}
            view = dict(self._groups)
        if judged_now != known:
            self._save(view, now)
        return view

    def known(self) -> dict[str, HeldGroup]:
        """The groups as this run last knew them, not judged again."""
        with self._lock:
            return dict(self._groups or {})

    def update(self, groups: Iterable[HeldGroup], now: int) -> None:
        """Record what a batch's plan (or its execution) made of its groups."""
        changed = list(groups)
        if not changed:
            return
        with self._lock:
            view = dict(self._groups or {})
            for group in changed:
                self._log_change(view.get(group.group), group)
                view[group.group] = group
            self._groups = view
        self._save(view, now)

    def _judged(self, group: HeldGroup, now: int) -> HeldGroup:
        reports = self._reads_verdicts and group.canary and group.verdict_key
        verdicts = self._store.load_verdicts(group.verdict_key) if reports else None
        after = judged(group, verdicts, now=now, rules=self.rules)
        if after != group:
            self._log_change(group, after)
        return after

    def _save(self, view: Mapping[str, HeldGroup], now: int) -> None:
        self._store.save_held(self._key, kept(view.values(), now=now))

    def _log_change(self, before: HeldGroup | None, after: HeldGroup) -> None:
        if before == after:
            return
        if before is None or (not before.held and after.held):
            self._log.warning(
                "failure group held: a partial outage, its messages wait in the DLQ",
                extra={"group": after.group, "next_canary_at": after.canary_at},
            )
        elif before.held and not after.held:
            self._log.info("failure group released: its canary passed", extra={"group": after.group})
        elif after.canary and not before.canary:
            self._log.info(
                "failure group's canary sent",
                extra={"group": after.group, "canary": after.canary, "verdict_at": after.verdict_at},
            )
        elif after.failed_canaries > before.failed_canaries:
            self._log.info(
                "failure group's canary failed: still held",
                extra={
                    "group": after.group,
                    "failed_canaries": after.failed_canaries,
                    "next_canary_at": after.canary_at,
                },
            )
