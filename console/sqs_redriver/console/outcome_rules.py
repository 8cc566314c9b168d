"""What became of a replay: each identity it sent, judged from what is in the DLQ and the parking
lot now, what its source queue holds now, the consumer kit's verdicts and the time. Pure:
``outcomes.py`` reads, this decides.

A message the consumer fails comes back to the DLQ once SQS has delivered it ``maxReceiveCount``
times, each after a ``VisibilityTimeout``: its source's *return window*. The kit dead-letters a
terminal failure at once. A message not back in the DLQ nor parked may still wait in its source
queue, unconsumed, for as long as the consumer is down: only a source queue that holds nothing
(visible, in flight or delayed) says it left. So without the kit's verdicts, an identity is
consumed when it is found nowhere, its source queue is empty, its return window has passed and the
scans read everything; otherwise it may be waiting, or it is too early to tell.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from sqs_redriver.console.aws import QueueDepth
from sqs_redriver.console.inventory import Inspected, Where, is_fingerprint
from sqs_redriver.console.shown import duration


class Fate(StrEnum):
    """What became of one identity a replay sent."""

    CONSUMED = "consumed"  # the kit's verdicts account for it
    BACK_SAME = "back-same-cause"  # in the DLQ again, with the fingerprint it had before
    BACK_NEW = "back-new-cause"  # in the DLQ again, with another fingerprint
    BACK_UNCLASSIFIED = "back-no-fingerprint"  # in the DLQ again, no consumer verdict on it
    PARKED = "parked"  # sent, then parked by the re-driver
    NOT_SENT_YET = "not-sent-yet"  # still where it was, not sent since (a group retry's, before its run)
    NOT_BACK = "not-back"  # nowhere, its source queue empty, past its return window: consumed
    WAITING = "may-be-waiting"  # nowhere, but its source queue holds messages (or could not be read)
    GONE = "gone"  # as NOT_BACK, but its source's retention has passed: consumed, or expired there
    TOO_EARLY = "too-early"  # nowhere, before its return window ends (or it is unknown, or the scans
    # could not read everything)


BACK = (Fate.BACK_SAME, Fate.BACK_NEW, Fate.BACK_UNCLASSIFIED)


@dataclass(frozen=True)
class Sent:
    """One identity a replay sent: its fingerprint then (None: no consumer verdict), its source."""

    identity: str
    fingerprint: str | None = None
    source: str = ""

    @classmethod
    def of(cls, item: Inspected, source_url: str) -> Sent:
        """A message of the DLQ or the parking lot, sent to ``source_url``."""
        return cls(item.identity, item.group if is_fingerprint(item.group) else None, source_url)


@dataclass(frozen=True)
class Seen:
    """A copy of a sent identity found now in the DLQ or the parking lot."""

    where: Where
    fingerprint: str | None = None
    cause: str = ""  # what went wrong, one line (the failure, or the parking reason)
    sent_since: bool = True  # its mark shows a send at or after the replay (else: never left)


@dataclass(frozen=True)
class Observation:
    """What is known now: the copies found (by identity, the DLQ's preferred), the kit's "ok"
    verdicts on the replay's messages (None: none recorded), each source's return window in
    seconds and what it holds (missing: unknown), the time, and whether the scans read every
    message."""

    seen: Mapping[str, Seen]
    now: int
    windows: Mapping[str, int] = field(default_factory=dict)
    ok_verdicts: int | None = None
    complete: bool = True
    held: Mapping[str, QueueDepth] = field(default_factory=dict)


@dataclass(frozen=True)
class Judged:
    """One identity's fate, with what it rests on."""

    identity: str
    fate: Fate
    fingerprint: str | None = None  # now, when it is back
    before: str | None = None  # the fingerprint it had when it was sent
    cause: str = ""
    back_by: int | None = None  # when its return window ends (None: unknown)
    held: QueueDepth | None = None  # what its source queue held when it was judged unseen (None: unknown)


@dataclass(frozen=True)
class Outcome:
    """Every identity's fate, and the counts."""

    sent_at: int
    now: int
    judged: tuple[Judged, ...]
    ok_verdicts: int | None
    complete: bool

    @property
    def counts(self) -> dict[Fate, int]:
        counted = dict.fromkeys(Fate, 0)
        for judged in self.judged:
            counted[judged.fate] += 1
        return counted

    def of(self, fate: Fate) -> list[Judged]:
        return [j for j in self.judged if j.fate is fate]

    def by_fate(self) -> list[tuple[Fate, str, list[Judged]]]:
        """Each fate met, in PHRASES' order: its phrase (``not back after 20m ...``) and members."""
        minutes = max(0, self.now - self.sent_at) // 60
        grouped = [(fate, phrase.format(minutes=minutes), self.of(fate)) for fate, phrase in PHRASES.items()]
        return [(fate, phrase, members) for fate, phrase, members in grouped if members]

    def line(self) -> str:
        """The summary in one line: ``3 sent: 1 back (new cause), 2 not back after 20m ...``."""
        counts = self.counts
        minutes = max(0, self.now - self.sent_at) // 60
        parts = [
            f"{counts[fate]} {text.format(minutes=minutes)}" for fate, text in PHRASES.items() if counts[fate]
        ]
        unseen = sum(counts[fate] for fate in UNSEEN)
        if self.ok_verdicts is not None and unseen:
            parts.append(f"the consumer kit counted {self.ok_verdicts} consumed")
        if not self.complete:
            parts.append("the scans could not read every message (some may be back, in flight)")
        return f"{len(self.judged)} sent: " + (", ".join(parts) or "nothing")


PHRASES = {
    Fate.CONSUMED: "consumed (consumer kit's verdicts)",
    Fate.BACK_SAME: "back in the DLQ (same cause)",
    Fate.BACK_NEW: "back in the DLQ (new cause)",
    Fate.BACK_UNCLASSIFIED: "back in the DLQ (no fingerprint)",
    Fate.PARKED: "parked",
    Fate.NOT_SENT_YET: "not sent yet (still in the DLQ or the parking lot)",
    Fate.NOT_BACK: "not back after {minutes}m, its source queue empty (consumed)",
    Fate.GONE: "not back after {minutes}m, its source queue empty (consumed, or expired there)",
    Fate.WAITING: "not back after {minutes}m (may still be waiting in its source queue)",
    Fate.TOO_EARLY: "not back after {minutes}m (too early to tell)",
}
UNSEEN = (Fate.NOT_BACK, Fate.GONE, Fate.WAITING, Fate.TOO_EARLY)


def judge(sent: Sequence[Sent], sent_at: int, observation: Observation) -> Outcome:
    """Each identity's fate (an identity sent twice is judged once, as first sent)."""
    unique = list({s.identity: s for s in reversed(sent)}.values())[::-1]
    judged = [_found(s, observation.seen[s.identity]) for s in unique if s.identity in observation.seen]
    unseen = [s for s in unique if s.identity not in observation.seen]
    waiting = sum(1 for j in judged if j.fate is Fate.NOT_SENT_YET)
    # Each "ok" verdict is one message consumed; a copy that never left (its delete failed) may
    # have been consumed meanwhile, so only what is left over can vouch for the unseen.
    vouched = observation.ok_verdicts is not None and observation.ok_verdicts - waiting >= len(unseen)
    judged += [_unseen(s, sent_at, observation, consumed=vouched) for s in unseen]
    order = {s.identity: n for n, s in enumerate(unique)}
    return Outcome(
        sent_at=sent_at,
        now=observation.now,
        judged=tuple(sorted(judged, key=lambda j: order[j.identity])),
        ok_verdicts=observation.ok_verdicts,
        complete=observation.complete,
    )


def _found(sent: Sent, seen: Seen) -> Judged:
    fate = Fate.NOT_SENT_YET
    if seen.sent_since and seen.where is Where.PARKING_LOT:
        fate = Fate.PARKED
    elif seen.sent_since and seen.fingerprint is None:
        fate = Fate.BACK_UNCLASSIFIED
    elif seen.sent_since:
        fate = Fate.BACK_SAME if seen.fingerprint == sent.fingerprint else Fate.BACK_NEW
    return Judged(sent.identity, fate, seen.fingerprint, sent.fingerprint, seen.cause)


def _unseen(sent: Sent, sent_at: int, observation: Observation, *, consumed: bool) -> Judged:
    """An identity found in neither queue: never consumed while its source queue holds messages
    (or cannot be read); else consumed on the kit's word, or when its return window has passed and
    the scans read everything."""
    window = observation.windows.get(sent.source)
    back_by = None if window is None else sent_at + window
    held = observation.held.get(sent.source)
    if held is None or held.total:
        # Even the kit's count: a duplicate delivery of another message counts one "ok" too many.
        fate = Fate.WAITING
    elif consumed:
        fate = Fate.CONSUMED
    elif back_by is None or observation.now < back_by or not observation.complete:
        fate = Fate.TOO_EARLY
    elif observation.now >= sent_at + held.retention_seconds:
        fate = Fate.GONE
    else:
        fate = Fate.NOT_BACK
    return Judged(sent.identity, fate, before=sent.fingerprint, back_by=back_by, held=held)


def explain(judged: Judged, outcome: Outcome) -> str:
    """What one identity's fate rests on, in words."""
    minutes = max(0, outcome.now - outcome.sent_at) // 60
    unseen = f"not in the DLQ nor parked {minutes}m after the replay"
    if judged.fate is Fate.NOT_BACK:
        return f"{unseen}, past its return window, and its source queue holds no message"
    if judged.fate is Fate.GONE:
        return (
            f"{unseen} and its source queue holds no message, but its retention "
            f"({duration(judged.held.retention_seconds if judged.held else 0)}) has passed since: "
            "consumed, or deleted there by SQS unconsumed"
        )
    if judged.fate is Fate.WAITING:
        holds = (
            f"its source queue still holds {judged.held.describe()}"
            if judged.held is not None
            else "what its source queue holds could not be read"
        )
        return (
            f"sent to its source queue at {clock_time(outcome.sent_at)}, not in the DLQ nor parked since; "
            f"{holds}, so it may be waiting there"
        )
    if judged.fate is Fate.TOO_EARLY:
        return _too_early(judged, outcome, minutes)
    if judged.fate is Fate.CONSUMED:
        return f"the consumer kit counted {outcome.ok_verdicts} consumed, every message not back"
    if judged.fate is Fate.BACK_NEW:
        return f"fingerprint {judged.fingerprint} (was {judged.before or 'none'}): {judged.cause}"
    return judged.cause


def _too_early(judged: Judged, outcome: Outcome, minutes: int) -> str:
    if judged.back_by is None:
        return f"not back after {minutes}m; its source's return window is unknown"
    if outcome.now >= judged.back_by and not outcome.complete:
        return "past its return window, but the scans could not read every message: it may be back, in flight"
    return f"too early to tell: back by {clock_time(judged.back_by)} at the latest if it fails"


def clock_time(epoch: int) -> str:
    """``14:05Z``: a return window is minutes to hours long."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%H:%MZ")


def copies(items: Iterable[Inspected], since: int, *, unmarked_sent: bool) -> dict[str, Seen]:
    """The copies found, by identity: one sent at or after ``since`` (its mark's last send) before
    one that never left, the DLQ's before the parking lot's. A copy without a mark cannot say:
    ``unmarked_sent`` says what to assume."""
    found: dict[str, tuple[tuple[bool, bool], Seen]] = {}
    for item in items:
        last = item.mark.last_sent_at if item.mark is not None else None
        sent_since = unmarked_sent if item.mark is None else (last is not None and last >= since)
        seen = Seen(
            where=item.where,
            fingerprint=item.group if is_fingerprint(item.group) else None,
            cause=item.label,
            sent_since=sent_since,
        )
        rank = (sent_since, item.where is Where.DLQ)
        if item.identity not in found or rank > found[item.identity][0]:
            found[item.identity] = (rank, seen)
    return {identity: seen for identity, (_, seen) in found.items()}
