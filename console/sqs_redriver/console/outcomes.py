"""What became of each replay, edit or group retry, in three parts: the rules (pure: ``judge``), each
identity sent judged from what is in the DLQ and the parking lot now, what its source queue holds
now, the consumer kit's verdicts and the time; the records of what each sent, in the state table
(``ReplayRecords``); and reading it all back (``judge_replay``, ``recent_outcomes``: the DLQ and
the parking lot read once, the kit's verdicts, each source's return window and what it holds now).

A message the consumer fails comes back to the DLQ once SQS has delivered it ``maxReceiveCount``
times, each after a ``VisibilityTimeout``: its source's *return window*. A dead letter of another
service is followed by its content identity (its source and its payload; an edited one, by the
identity of its edited payload): a function's event that fails again comes back to the DLQ within
the function's retries (its source's ``Retries``, the return window); a rule target's or a
subscription's, once its target took it, never comes back here (the target's own failures go to
its own DLQ): it is *delivered*. The kit dead-letters a
terminal failure at once. A message not back in the DLQ nor parked may still wait in its source
queue, unconsumed, for as long as the consumer is down: only a source queue that holds nothing
(visible, in flight or delayed) says it left. So without the kit's verdicts, an identity is
consumed when it is found nowhere, its source queue is empty, its return window has passed and the
scans read everything; otherwise it may be waiting, or it is too early to tell.

A record (``REPLAY#<DLQ URL>#<replay id>``) holds who, when, what was chosen, the source queues
and, for each identity sent, the fingerprint it had then and its source; past
``IDENTITIES_PER_PART`` identities the rest go to parts ``#1``, ``#2``... (a DynamoDB item holds
400 KB at most). The index of a re-driver's recent ones is ``REPLAYS#<DLQ URL>``. Records and index
entries expire after ``REPLAY_TTL_SECONDS``. The operator may not Scan or Query the table, hence the
index, as for group records (inventory.GroupIndex); it may Query the table's identity index alone,
where a function's event is found on every trip (``StateTable.load_trips``). Every field read is
checked here: a record that fails is ``CorruptReplay``, naming its key and the field, never a
traceback."""

from __future__ import annotations

import re
import secrets
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqs_redriver.console.aws import QueueDepth, queue_depth
from sqs_redriver.console.errors import CorruptReplay, NotFound, UnreadableReplay
from sqs_redriver.console.inventory import Inspected, Where, is_fingerprint
from sqs_redriver.console.safe_text import duration, inert_str, some
from sqs_redriver.console.status import Status, read_status
from sqs_redriver.console.tool import Tool, read_all
from sqs_redriver.core.errors import AwsCallError, CorruptRecord
from sqs_redriver.core.sqs import RedriveWindow
from sqs_redriver.core.table import DynamoTable
from sqs_redriver.protocol.keys import RecordKind, replay_record_key, replay_verdict_key
from sqs_redriver.protocol.limits import IDENTITY_PATTERN, MAX_EPOCH_SECONDS, MAX_IDENTITY_CHARS
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.sources import DeadLetterSource, SourceKind

# The rules: what became of each identity a replay sent (pure).


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
    # A dead letter of another service: a function's event nowhere past its function's retries
    NOT_BACK_INVOKED = "not-back-invoked"
    DELIVERED = "delivered"  # a rule target's or a subscription's, taken by its target (never back here)
    # Nowhere now, but its state record says the runs re-drove or parked it after the replay
    BACK_SINCE = "back-since"
    # Nowhere, and a refusal nobody found back may be it (the consumer kit's verdicts; a record of
    # its function without its payload; a state record of it that cannot be read): never called consumed
    MAYBE_REFUSED = "may-have-been-refused"


BACK = (Fate.BACK_SAME, Fate.BACK_NEW, Fate.BACK_UNCLASSIFIED)
# What makes `outcome` exit 1: back in the DLQ, parked, back since, or perhaps refused.
FAILED_AGAIN = (*BACK, Fate.PARKED, Fate.BACK_SINCE, Fate.MAYBE_REFUSED)


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
    # The sources of another kind sent to (by address), with their kind: what becomes of theirs.
    dead_letter_kinds: Mapping[str, SourceKind] = field(default_factory=dict)
    # The consumer kit's refusals (terminal verdicts) of the replay's messages: each refused one
    # went back to the DLQ at once.
    refused: int = 0
    # Identities not found whose state record says the runs re-drove or parked them after the
    # replay: when they last did (the replay deleted any record of them it sent).
    back_since: Mapping[str, int] = field(default_factory=dict)
    # By source address: the records of a function found now, sent since the replay, without their
    # payload (Lambda dropped it): they cannot be told apart, and any may be one the replay sent.
    unrecognised: Mapping[str, int] = field(default_factory=dict)
    # Identities not found whose state records could not be read whole (a corrupt record, a
    # function's trips not listed), with why: a record unread may be a return.
    unreadable: Mapping[str, str] = field(default_factory=dict)


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
    refused: int = 0  # the consumer kit's refusals of the replay's messages

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
        if self.refused:
            parts.append(f"the consumer kit refused {self.refused}")
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
    Fate.NOT_BACK_INVOKED: "not back after {minutes}m, past its function's retries (consumed)",
    Fate.DELIVERED: "delivered to its target (its target's own failures go elsewhere)",
    Fate.BACK_SINCE: "came back since, and the runs re-drove or parked it (not found now)",
    Fate.MAYBE_REFUSED: "not found, and may have been refused (not called consumed)",
}
UNSEEN = (
    Fate.NOT_BACK,
    Fate.GONE,
    Fate.WAITING,
    Fate.TOO_EARLY,
    Fate.NOT_BACK_INVOKED,
    Fate.DELIVERED,
    Fate.BACK_SINCE,
    Fate.MAYBE_REFUSED,
)


def judge(sent: Sequence[Sent], sent_at: int, observation: Observation) -> Outcome:
    """Each identity's fate (an identity sent twice is judged once, as first sent)."""
    unique = list({s.identity: s for s in reversed(sent)}.values())[::-1]
    judged = [_found(s, observation.seen[s.identity]) for s in unique if s.identity in observation.seen]
    unseen = [s for s in unique if s.identity not in observation.seen]
    waiting = sum(1 for j in judged if j.fate is Fate.NOT_SENT_YET)
    # Each "ok" verdict is one message consumed; a copy that never left (its delete failed) may
    # have been consumed meanwhile, so only what is left over can vouch for the unseen.
    vouched = observation.ok_verdicts is not None and observation.ok_verdicts - waiting >= len(unseen)
    # A refusal is accounted for by a copy found back (in the DLQ, parked, or back since).
    found_back = sum(1 for j in judged if j.fate in BACK or j.fate is Fate.PARKED)
    found_back += sum(1 for s in unseen if s.identity in observation.back_since)
    unaccounted = max(0, observation.refused - found_back)
    judged += [_unseen(s, sent_at, observation, consumed=vouched, refusals=unaccounted) for s in unseen]
    order = {s.identity: n for n, s in enumerate(unique)}
    return Outcome(
        sent_at=sent_at,
        now=observation.now,
        judged=tuple(sorted(judged, key=lambda j: order[j.identity])),
        ok_verdicts=observation.ok_verdicts,
        complete=observation.complete,
        refused=observation.refused,
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


def _unseen(sent: Sent, sent_at: int, observation: Observation, *, consumed: bool, refusals: int) -> Judged:
    """An identity found in neither queue: back since, when its state record says so; never
    consumed while a state record of it cannot be read, while its source queue holds messages (or
    cannot be read), nor while a refusal is unaccounted for (``refusals``: the kit's refusals no
    copy found back accounts for); else consumed on the kit's word, or when its return window has
    passed and the scans read everything."""
    window = observation.windows.get(sent.source)
    back_by = None if window is None else sent_at + window
    returned = observation.back_since.get(sent.identity)
    if returned is not None:
        cause = f"the runs re-drove or parked it at {clock_time(returned)}, after it came back to the DLQ"
        return Judged(sent.identity, Fate.BACK_SINCE, before=sent.fingerprint, cause=cause, back_by=back_by)
    kind = observation.dead_letter_kinds.get(sent.source)
    if kind is not None:
        return _dead_letter_judged(sent, kind, back_by, observation)
    held = observation.held.get(sent.source)
    if held is None or held.total:
        # Even the kit's count: a duplicate delivery of another message counts one "ok" too many.
        fate = Fate.WAITING
    elif sent.identity in observation.unreadable:
        cause = unreadable_cause(observation.unreadable[sent.identity])
        return Judged(sent.identity, Fate.MAYBE_REFUSED, before=sent.fingerprint, cause=cause, held=held)
    elif refusals:
        cause = (
            f"the consumer kit refused {observation.refused} of the replay's messages and "
            f"{refusals} of them are not back in the DLQ nor parked: this may be one (purged, "
            "expired, or on its way back)"
        )
        return Judged(sent.identity, Fate.MAYBE_REFUSED, before=sent.fingerprint, cause=cause, held=held)
    elif consumed:
        fate = Fate.CONSUMED
    elif back_by is None or observation.now < back_by or not observation.complete:
        fate = Fate.TOO_EARLY
    elif observation.now >= sent_at + held.retention_seconds:
        fate = Fate.GONE
    else:
        fate = Fate.NOT_BACK
    return Judged(sent.identity, fate, before=sent.fingerprint, back_by=back_by, held=held)


def _dead_letter_judged(
    sent: Sent, kind: SourceKind, back_by: int | None, observation: Observation
) -> Judged:
    """A dead letter found in neither queue: delivered, when its target's failures never come
    back here; a function's, consumed once its retries are over and the scans read everything,
    unless a state record of it cannot be read or a record of its function came back since
    without its payload (either may be this one's return)."""
    fate = Fate.NOT_BACK_INVOKED
    if kind is not SourceKind.FUNCTION:
        fate = Fate.DELIVERED
    elif back_by is None or observation.now < back_by or not observation.complete:
        fate = Fate.TOO_EARLY
    elif sent.identity in observation.unreadable:
        cause = unreadable_cause(observation.unreadable[sent.identity])
        return Judged(sent.identity, Fate.MAYBE_REFUSED, cause=cause, back_by=back_by)
    elif observation.unrecognised.get(sent.source):
        cause = (
            f"{observation.unrecognised[sent.source]} record(s) of its function came back since without "
            "their payload (Lambda dropped it): one may be this one's failure"
        )
        return Judged(sent.identity, Fate.MAYBE_REFUSED, cause=cause, back_by=back_by)
    return Judged(sent.identity, fate, back_by=back_by)


def unreadable_cause(why: str) -> str:
    return f"its state records could not be read whole ({why}): one may say it came back since"


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
    if judged.fate is Fate.NOT_BACK_INVOKED:
        return f"{unseen}, past its function's retries: the function took it without failing"
    if judged.fate is Fate.DELIVERED:
        return (
            "its target took it: a failure there goes to the target's own dead-letter queue, never back "
            "to this one"
        )
    if judged.fate is Fate.CONSUMED:
        return f"the consumer kit counted {outcome.ok_verdicts} consumed, every message not back"
    if judged.fate is Fate.BACK_NEW:
        return f"fingerprint {judged.fingerprint} (was {judged.before or 'none'}): {judged.cause}"
    return judged.cause  # what was found (back, parked), or why it is back since or may be refused


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


# The records of what each replay, edit and group retry sent, and the index of recent ones.

# As long as SQS can keep a message that came back (its longest retention).
REPLAY_TTL_SECONDS = 14 * 86_400
# At most ~200 bytes each (identity, fingerprint, source): ~200 KB a part, half an item's limit.
IDENTITIES_PER_PART = 1_000
MAX_PARTS = 1_000
RECENT_KEPT = 50
MAX_TEXT_CHARS = 2_000
INDEX_WRITE_ATTEMPTS = 3
# ``20261123-091240-3f9c``: sorts by time, and a prefix of it names a replay.
REPLAY_ID_PATTERN = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{4}")


def new_replay_id(at: int) -> str:
    """A replay's id: its time (UTC) and a random tail (two operators in one second)."""
    return f"{datetime.fromtimestamp(at, UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


class ReplayKind(StrEnum):
    REPLAY = "replay"
    EDIT = "edit"
    GROUP_RETRY = "group-retry"


@dataclass(frozen=True)
class ReplayRecord:
    """What one replay, edit or group retry sent, by whom and when."""

    replay_id: str
    kind: ReplayKind
    who: str
    at: int
    detail: str  # what was chosen (the selection, the fingerprint, the message edited)
    sent: tuple[Sent, ...]

    @property
    def verdict_key(self) -> str | None:
        """Where the kit counts its verdicts on the messages sent (a group retry's are the runs')."""
        return None if self.kind is ReplayKind.GROUP_RETRY else replay_verdict_key(self.at, self.replay_id)


@dataclass(frozen=True)
class Listed:
    """One entry of the index: enough to list a replay without reading its record."""

    replay_id: str
    kind: ReplayKind
    at: int
    count: int


class ReplayRecords(DynamoTable):
    """The records and the index of one re-driver (by its DLQ's URL)."""

    def __init__(self, table_name: str, client: Any, dlq_url: str) -> None:
        super().__init__(table_name, client)
        self.dlq_url = dlq_url

    def save(self, record: ReplayRecord) -> None:
        """The parts past the first, then the first (which names how many), then the index entry."""
        sources = sorted({s.source for s in record.sent})
        per_part = IDENTITIES_PER_PART
        chunks = [record.sent[n : n + per_part] for n in range(0, len(record.sent), per_part)]
        expires = {"expires_at": {"N": str(record.at + REPLAY_TTL_SECONDS)}}
        self._write_batches(
            [
                {
                    "PutRequest": {
                        "Item": {
                            "pk": {"S": self._key(record, n)},
                            "sent": _entries(chunk, sources),
                            **expires,
                        }
                    }
                }
                for n, chunk in enumerate(chunks[1:], start=1)
            ]
        )
        self._put_item(
            {
                "pk": {"S": self._key(record, 0)},
                "kind": {"S": record.kind.value},
                "who": {"S": record.who},
                "at": {"N": str(record.at)},
                "detail": {"S": record.detail[:MAX_TEXT_CHARS]},
                "sources": {"L": [{"S": s} for s in sources]},
                "parts": {"N": str(max(1, len(chunks)))},
                "sent": _entries(chunks[0] if chunks else (), sources),
                **expires,
            }
        )
        self._add_to_index(Listed(record.replay_id, record.kind, record.at, len(record.sent)))

    def _key(self, record: ReplayRecord, part: int) -> str:
        return replay_record_key(self.dlq_url, record.replay_id, part)

    def load(self, replay_id: str, *, now: int) -> ReplayRecord | None:
        """The record (None: none, or expired); ``CorruptReplay`` when it cannot be read whole."""
        head_key = replay_record_key(self.dlq_url, replay_id)
        head = self._get_item(head_key)
        if head is None or _number(head, "expires_at", head_key) <= now:
            return None
        parts = _number(head, "parts", head_key, high=MAX_PARTS)
        listed_sources = enumerate(_list(head, "sources", head_key))
        sources = [_text(value, f"sources[{n}]", head_key) for n, value in listed_sources]
        part_keys = [replay_record_key(self.dlq_url, replay_id, n) for n in range(1, parts)]
        rest = {item["pk"]["S"]: item for item in self._get_items(part_keys)}
        sent = _sent(head, head_key, sources)
        for n in range(1, parts):
            key = replay_record_key(self.dlq_url, replay_id, n)
            if key not in rest:
                raise CorruptReplay(f"{head_key}: part {n} of {parts} is missing")
            sent += _sent(rest[key], key, sources)
        try:
            kind = ReplayKind(_text(head.get("kind"), "kind", head_key))
        except ValueError as exc:
            raise CorruptReplay(f"{head_key}: kind is not one of {', '.join(ReplayKind)}") from exc
        return ReplayRecord(
            replay_id=replay_id,
            kind=kind,
            who=_text(head.get("who"), "who", head_key),
            at=_number(head, "at", head_key),
            detail=_text(head.get("detail"), "detail", head_key, empty=True),
            sent=tuple(sent),
        )

    def recent(self, *, now: int) -> list[Listed]:
        """The index's replays within their TTL, newest first; ``CorruptReplay`` when unreadable."""
        listed, _ = self._read_index()
        return [entry for entry in listed if entry.at + REPLAY_TTL_SECONDS > now]

    def _read_index(self) -> tuple[list[Listed], dict[str, Any]]:
        key = RecordKind.REPLAY_INDEX.key(self.dlq_url)
        item = self._get_item(key)
        if item is None:
            return [], {"ConditionExpression": "attribute_not_exists(pk)"}
        version = item.get("version")
        entries = enumerate(_list(item, "replays", key))
        listed = [_listed(_text(value, f"replays[{n}]", key), key) for n, value in entries]
        # Stable: the index holds the replays of one second newest first, as they were added.
        return sorted(listed, key=lambda e: -e.at), {
            "ConditionExpression": "version = :read",
            "ExpressionAttributeValues": {":read": version},
        }

    def _add_to_index(self, entry: Listed) -> None:
        """Add ``entry``, dropping expired ones and the oldest past ``RECENT_KEPT``; an unreadable
        index is written anew (it only lists: the records stand on their own)."""
        key = RecordKind.REPLAY_INDEX.key(self.dlq_url)
        for _ in range(INDEX_WRITE_ATTEMPTS):
            try:
                listed, guard = self._read_index()
            except CorruptReplay:
                listed, guard = [], {}
            kept = [
                e for e in listed if e.at + REPLAY_TTL_SECONDS > entry.at and e.replay_id != entry.replay_id
            ]
            kept = sorted([entry, *kept], key=lambda e: -e.at)[:RECENT_KEPT]
            read = guard.get("ExpressionAttributeValues", {}).get(":read", {}).get("N", "0")
            item = {
                "pk": {"S": key},
                "replays": {"L": [{"S": f"{e.replay_id} {e.kind.value} {e.at} {e.count}"} for e in kept]},
                "version": {"N": str(int(read) + 1 if str(read).isdigit() else 1)},
            }
            if self._write_if("PutItem", self._client.put_item, Item=item, **guard) is not None:
                return
        raise AwsCallError(f"the index of replays in {self.table_name} changed at every attempt: try again")


def _entries(sent: Sequence[Sent], sources: list[str]) -> dict[str, Any]:
    return {"L": [{"S": f"{s.identity} {s.fingerprint or ''} {sources.index(s.source)}"} for s in sent]}


def _sent(item: dict[str, Any], key: str, sources: list[str]) -> list[Sent]:
    sent = []
    for n, value in enumerate(_list(item, "sent", key)):
        field = f"sent[{n}]"
        identity, fingerprint, source = (_text(value, field, key).split(" ") + ["", "", ""])[:3]
        if not (len(identity) <= MAX_IDENTITY_CHARS and IDENTITY_PATTERN.fullmatch(identity)):
            raise CorruptReplay(f"{key}: {field}: the identity is not one")
        if fingerprint and not is_fingerprint(fingerprint):
            raise CorruptReplay(f"{key}: {field}: the fingerprint is not one")
        if not source.isdigit() or int(source) >= len(sources):
            raise CorruptReplay(f"{key}: {field}: the source is not one of the record's sources")
        sent.append(Sent(identity, fingerprint or None, sources[int(source)]))
    return sent


def _listed(text: str, key: str) -> Listed:
    parts = text.split(" ")
    well_formed = len(parts) == 4 and REPLAY_ID_PATTERN.fullmatch(parts[0]) is not None
    if not (well_formed and parts[1] in set(ReplayKind) and parts[2].isdigit() and parts[3].isdigit()):
        raise CorruptReplay(f"{key}: replays: an entry is not 'id kind time count'")
    return Listed(parts[0], ReplayKind(parts[1]), int(parts[2]), int(parts[3]))


def _list(item: dict[str, Any], name: str, key: str) -> list[Any]:
    value = item.get(name)
    listed = value.get("L") if isinstance(value, dict) else None
    if not isinstance(listed, list):
        raise CorruptReplay(f"{key}: {name} is not a list")
    return listed


def _text(value: Any, name: str, key: str, *, empty: bool = False) -> str:
    text = value.get("S") if isinstance(value, dict) else None
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS or (not text and not empty):
        raise CorruptReplay(f"{key}: {name} is not a text of 1 to {MAX_TEXT_CHARS} characters")
    return text


def _number(item: dict[str, Any], name: str, key: str, *, high: int = MAX_EPOCH_SECONDS) -> int:
    value = item.get(name)
    text = value.get("N") if isinstance(value, dict) else None
    if not isinstance(text, str) or not text.isdigit() or not 0 < int(text) <= high:
        raise CorruptReplay(f"{key}: {name} is not a whole number from 1 to {high}")
    return int(text)


# Reading back what became of each replay.
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
    ok, refused = None, 0
    if record.verdict_key is not None:
        verdicts = tool.table.load_verdicts(record.verdict_key)
        ok, refused = (verdicts.ok if verdicts.total else None), verdicts.terminal
    sources = sorted({s.source for s in record.sent if s.source})
    of_another_kind = {s.address: s for s in tool.deployment.dead_letter_sources if s.address in sources}
    queues = [url for url in sources if url not in of_another_kind]
    windows = _windows(tool, queues)
    windows.update({address: _retries_window(source) for address, source in of_another_kind.items()})
    found = copies(seen.items, record.at, unmarked_sent=unmarked_sent)
    unseen = [s for s in record.sent if s.identity not in found]
    functions = {a for a, source in of_another_kind.items() if source.kind is SourceKind.FUNCTION}
    # A group retry is sent by the runs' re-drives: those are not returns.
    returns = _returns(tool, unseen, record.at, functions) if unmarked_sent else Returns()
    observation = Observation(
        seen=found,
        now=tool.now(),
        windows=windows,
        ok_verdicts=ok,
        complete=not seen.gaps,
        held=_held(tool, queues),
        dead_letter_kinds={address: source.kind for address, source in of_another_kind.items()},
        refused=refused,
        back_since=returns.back_since,
        unrecognised=unrecognised_returns(seen.items, record),
        unreadable=returns.unreadable,
    )
    return judge(record.sent, record.at, observation)


@dataclass(frozen=True)
class Returns:
    """What the state records of the identities not found say: when the runs last re-drove or
    parked each after the replay, and whose records could not be read whole (and why)."""

    back_since: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)


def _returns(tool: Tool, unseen: Sequence[Sent], since: int, functions: Collection[str]) -> Returns:
    """When the runs last re-drove or parked each of ``unseen`` after ``since`` (the replay's
    second: a return within it is not told from a record written before), as its state records say
    (a dead letter's, a message's counted in the table: the replay deleted those; a marked one's
    when it was parked, or when the runs record every re-drive). An event of one of ``functions``
    is counted under the trip of each re-drive's request id, which only the run's Invoke got: each
    of its records is read, whatever trip it is on (``StateTable.load_trips``)."""
    identities = sorted({s.identity for s in unseen})
    if not identities:
        return Returns()
    of_functions = sorted({s.identity for s in unseen if s.source in functions})
    marks, unreadable = _trip_marks(tool, of_functions)
    others = tool.table.read_marks(set(identities) - set(of_functions))
    marks += others.marks.items()
    unreadable.update({identity: str(corrupt) for identity, corrupt in others.unreadable.items()})
    returned = [(i, m.last_redriven_at) for i, m in marks if m.last_redriven_at is not None]
    returned += [(i, r.last_failed_at) for i, r in tool.table.load_park_reasons(identities).items()]
    back_since: dict[str, int] = {}
    for identity, at in returned:
        if at > since:
            back_since[identity] = max(at, back_since.get(identity, at))
    return Returns(back_since, unreadable)


def _trip_marks(tool: Tool, identities: Sequence[str]) -> tuple[list[tuple[str, Mark]], dict[str, str]]:
    """The marks of every trip of each of these functions' events, and those whose trips could
    not be read whole (why): all of them when the index cannot be read (missing, or denied)."""
    if not identities:
        return [], {}
    try:
        trips = tool.table.load_trips(identities)
    except AwsCallError as exc:
        return [], dict.fromkeys(identities, f"its trips could not be listed: {exc}")
    marks = [(identity, mark) for identity, read in trips.items() for mark in read.marks.values()]
    unreadable = {identity: _first(read.unreadable) for identity, read in trips.items() if read.unreadable}
    return marks, unreadable


def _first(unreadable: Mapping[str, CorruptRecord]) -> str:
    """The first of an identity's unreadable records, and how many more there are."""
    more = len(unreadable) - 1
    return str(unreadable[min(unreadable)]) + (f", and {more} more" if more else "")


def unrecognised_returns(items: Iterable[Inspected], record: ReplayRecord) -> dict[str, int]:
    """By source address, the records of a function in the DLQ or the parking lot, sent at or after
    the replay, that came back without their payload (Lambda drops it from a record too large for
    its destination): none can be told to be, or not to be, one the replay sent."""
    sent = {s.identity for s in record.sent}
    counted: dict[str, int] = {}
    for item in items:
        dead_letter = item.dead_letter
        if dead_letter is None or dead_letter.source is None or dead_letter.payload is not None:
            continue
        if (
            dead_letter.source.kind is SourceKind.FUNCTION
            and item.sent_at >= record.at
            and item.identity not in sent
        ):
            counted[dead_letter.source.address] = counted.get(dead_letter.source.address, 0) + 1
    return counted


def _retries_window(source: DeadLetterSource) -> int:
    """How long a source of another kind takes, at most, to dead-letter again what it was given
    (as the re-driver's runs reckon it: core/delivery.py's redrive_window)."""
    retries = source.retries
    return RedriveWindow(retries.attempt_seconds, retries.attempts).seconds


def _windows(tool: Tool, sources: list[str]) -> dict[str, int]:
    """Each source queue's return window; one whose attributes cannot be read is left out (unknown)."""
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
