"""The mark: a message's identity and re-drive history, and its one parser.

The mark travels as the ``dlq-redriver`` message attribute, a compact JSON object (see
docs/design.md, "Identity and count: the mark"). Anyone who may send to the DLQ can write one, so
``read_mark`` takes any text and gives a valid ``Mark`` or a ``Rejection`` naming the field, under
the limits of ``sqs_redriver.protocol.limits``; ``held_to_clock`` adds the rules that need a clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqs_redriver.protocol import wire
from sqs_redriver.protocol.failure import Failure
from sqs_redriver.protocol.limits import (
    EARLIEST_MARK_TIME,
    EDIT_KEY_PATTERN,
    IDENTITY_PATTERN,
    MAX_CLOCK_SKEW_SECONDS,
    MAX_COUNT,
    MAX_EDIT_KEY_CHARS,
    MAX_EPOCH_SECONDS,
    MAX_IDENTITY_CHARS,
    MAX_MARK_BYTES,
    MAX_MARK_HISTORY,
    MAX_MARK_JSON_DEPTH,
    MAX_REPLAYS,
    MAX_VERDICT_KEY_CHARS,
    VERDICT_KEY_PATTERN,
)
from sqs_redriver.protocol.wire import Rejection

MARK_SUBJECT = "a re-drive mark"


@dataclass(frozen=True)
class Mark:
    """The re-drive history of one logical message, keyed by an identity that survives sends.

    The consumer kit adds ``failure`` when it dead-letters a message; the re-driver adds
    ``verdict_key`` (where the kit reports the consumer's verdict) and ``probe`` (a probe's first
    failure goes straight back to the DLQ) when it re-drives one. The operator's tool adds an entry
    to ``replays`` (replayed at, re-drive count before the replay) when it replays a parked one,
    and counts ``edits`` (with the last one's time and the archive key of the original it replaced)
    when an operator edits one and sends it again.
    """

    identity: str
    count: int = 0
    first_failed_at: int = 0
    redriven_at: tuple[int, ...] = ()
    failure: Failure | None = None
    verdict_key: str | None = None
    probe: bool = False
    replays: tuple[tuple[int, int], ...] = ()
    # Failures while the consumer processed other messages (consumer_health.py), and how
    # many it processed meanwhile: a suspect of poison, parked at SUSPECT_LIMIT.
    suspected: int = 0
    processed_meanwhile: int = 0
    edits: int = 0
    # (edited at, archive key of the original); that original's own mark names the edit before it.
    last_edit: tuple[int, str] | None = None

    @property
    def suspect(self) -> bool:
        """It failed while the consumer processed others: never a probe, never held against it."""
        return self.suspected > 0

    def after_suspect_failure(self, processed: int) -> Mark:
        """One more failure while the consumer processed ``processed`` other messages."""
        return replace(
            self,
            suspected=min(self.suspected + 1, MAX_COUNT),
            processed_meanwhile=min(self.processed_meanwhile + processed, MAX_COUNT),
        )

    @property
    def last_redriven_at(self) -> int | None:
        return self.redriven_at[-1] if self.redriven_at else None

    @property
    def last_sent_at(self) -> int | None:
        """When it last went to its source queue: its last re-drive or its last replay."""
        last_replay = self.replays[-1][0] if self.replays else None
        times = [t for t in (self.last_redriven_at, last_replay) if t is not None]
        return max(times) if times else None

    def after_redrive(self, now: int, *, verdict_key: str | None = None, probe: bool = False) -> Mark:
        """The mark of the next re-drive; the last failure stays behind (the next one replaces it)."""
        return replace(
            self,
            count=self.count + 1,
            redriven_at=(*self.redriven_at, now),
            failure=None,
            verdict_key=verdict_key,
            probe=probe,
        )

    def replayed(self, now: int) -> Mark:
        """The mark of a parked message an operator sends back to its source: a fresh start (count
        0, no history, no failure), its first failure's time kept, and the replay recorded (the
        last ``MAX_REPLAYS``)."""
        return replace(
            self,
            count=0,
            redriven_at=(),
            failure=None,
            verdict_key=None,
            probe=False,
            replays=(*self.replays, (now, self.count))[-MAX_REPLAYS:],
            suspected=0,
            processed_meanwhile=0,
        )

    def edited(self, now: int, archive_key: str) -> Mark:
        """The mark of a message an operator edited and sends back: a replay (``replayed``), with
        the edit counted and where its original is archived."""
        return replace(self.replayed(now), edits=min(self.edits + 1, MAX_COUNT), last_edit=(now, archive_key))

    def to_json(self, **extra: Any) -> str:
        payload: dict[str, Any] = {
            "id": self.identity,
            "n": self.count,
            "first": self.first_failed_at,
            "at": list(self.redriven_at),
        }
        if self.failure is not None:
            payload["err"] = self.failure.to_dict()
        if self.verdict_key is not None:
            payload["v"] = self.verdict_key
        if self.probe:
            payload["p"] = 1
        if self.replays:
            payload["rp"] = [[at, count] for at, count in self.replays]
        if self.suspected:
            payload["s"] = [self.suspected, self.processed_meanwhile]
        if self.last_edit is not None:
            payload["ed"] = [self.edits, *self.last_edit]
        payload.update(extra)
        return json.dumps(payload, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Mark:
        """Parse a mark; raise a ``Rejection`` (a ValueError) when it is not a valid one. A
        consumer's failure that is not valid is left out (see ``read_mark``)."""
        mark, rejection = read_mark(text)
        if mark is None:
            assert rejection is not None
            raise rejection
        return mark


def read_mark(text: object) -> tuple[Mark | None, Rejection | None]:
    """Any text in: ``(mark, None)``; ``(None, rejection)`` when the mark is not valid; or
    ``(mark, rejection)`` when only its consumer failure (``err``) is not, and was left out (the
    mark without it is sound, and the consumer reports its next failure anew)."""
    if not isinstance(text, str):
        return None, Rejection("mark", f"is a {type(text).__name__}, not text", subject=MARK_SUBJECT)
    try:
        payload = wire.load_json_object(text, "mark", max_bytes=MAX_MARK_BYTES, max_depth=MAX_MARK_JSON_DEPTH)
        mark = _mark(payload)
    except Rejection as rejection:
        return None, Rejection(rejection.field, rejection.problem, subject=MARK_SUBJECT)
    if "err" not in payload:
        return mark, None
    try:
        return replace(mark, failure=Failure.from_dict(payload["err"])), None
    except Rejection as rejection:
        return mark, rejection.within("err", subject=MARK_SUBJECT)


def read_parked(text: object) -> Mapping[str, Any] | None:
    """The ``parked`` object (the parking reason) the re-driver adds to a parked message's mark,
    read under the same limits as the mark; None when there is none, or the text is no mark."""
    if not isinstance(text, str):
        return None
    try:
        payload = wire.load_json_object(text, "mark", max_bytes=MAX_MARK_BYTES, max_depth=MAX_MARK_JSON_DEPTH)
    except Rejection:
        return None
    parked = payload.get("parked")
    return parked if isinstance(parked, dict) else None


def held_to_clock(mark: Mark, now: int) -> tuple[Mark | None, Rejection | None]:
    """``read_mark``'s answer for the rules a run applies with its clock: no time before 2000 nor
    after ``now`` plus a small skew (a forged future re-drive would count as a recent return).
    A wrong time of the mark's own leaves the whole mark out; of its failure, the failure only."""
    latest = now + MAX_CLOCK_SKEW_SECONDS
    times = [
        ("first", mark.first_failed_at),
        *((f"at[{i}]", t) for i, t in enumerate(mark.redriven_at)),
        *((f"rp[{i}][0]", at) for i, (at, _) in enumerate(mark.replays)),
        *([("ed[1]", mark.last_edit[0])] if mark.last_edit is not None else []),
    ]
    for field, value in times:
        if not EARLIEST_MARK_TIME <= value <= latest:
            return None, _out_of_range(field, value, latest)
    if mark.failure is not None and not EARLIEST_MARK_TIME <= mark.failure.at <= latest:
        return replace(mark, failure=None), _out_of_range("err.at", mark.failure.at, latest)
    return mark, None


def _out_of_range(field: str, value: int, latest: int) -> Rejection:
    return Rejection(field, f"is {value}, outside {EARLIEST_MARK_TIME}..{latest}", subject=MARK_SUBJECT)


def _mark(payload: Mapping[str, Any]) -> Mark:
    verdict_key = payload.get("v")
    history = wire.array(wire.required(payload, "at"), "at", max_items=MAX_MARK_HISTORY)
    replays = wire.array(payload.get("rp", []), "rp", max_items=MAX_REPLAYS)
    suspected, processed = _suspicion(payload.get("s"))
    edits, last_edit = _edits(payload.get("ed"))
    return Mark(
        identity=wire.text_of(payload, "id", max_chars=MAX_IDENTITY_CHARS, pattern=IDENTITY_PATTERN),
        count=wire.integer_of(payload, "n", low=0, high=MAX_COUNT),
        first_failed_at=_time(wire.required(payload, "first"), "first"),
        redriven_at=tuple(_time(t, f"at[{i}]") for i, t in enumerate(history)),
        verdict_key=None
        if verdict_key is None
        else wire.text(verdict_key, "v", max_chars=MAX_VERDICT_KEY_CHARS, pattern=VERDICT_KEY_PATTERN),
        probe=_flag(payload.get("p", 0), "p"),
        replays=tuple(_replay(entry, f"rp[{i}]") for i, entry in enumerate(replays)),
        suspected=suspected,
        processed_meanwhile=processed,
        edits=edits,
        last_edit=last_edit,
    )


def _suspicion(value: object) -> tuple[int, int]:
    """``s``: [suspect failures, messages processed meanwhile], absent for a message never suspected."""
    if value is None:
        return 0, 0
    pair = wire.array(value, "s", max_items=2)
    if len(pair) != 2:
        raise Rejection("s", f"has {len(pair)} items, not [failures, processed]")
    return wire.integer(pair[0], "s[0]", low=0, high=MAX_COUNT), wire.integer(
        pair[1], "s[1]", low=0, high=MAX_COUNT
    )


def _edits(value: object) -> tuple[int, tuple[int, str] | None]:
    """``ed``: [edits, last edited at, its original's archive key], absent for a message never edited."""
    if value is None:
        return 0, None
    entry = wire.array(value, "ed", max_items=3)
    if len(entry) != 3:
        raise Rejection("ed", f"has {len(entry)} items, not [edits, edited_at, archive_key]")
    key = wire.text(entry[2], "ed[2]", max_chars=MAX_EDIT_KEY_CHARS, pattern=EDIT_KEY_PATTERN)
    return wire.integer(entry[0], "ed[0]", low=1, high=MAX_COUNT), (_time(entry[1], "ed[1]"), key)


def _time(value: object, field: str) -> int:
    return wire.integer(value, field, low=0, high=MAX_EPOCH_SECONDS)


def _flag(value: object, field: str) -> bool:
    return bool(wire.integer(value, field, low=0, high=1)) if not isinstance(value, bool) else value


def _replay(entry: object, field: str) -> tuple[int, int]:
    pair = wire.array(entry, field, max_items=2)
    if len(pair) != 2:
        raise Rejection(field, f"has {len(pair)} items, not [replayed_at, count]")
    return _time(pair[0], f"{field}[0]"), wire.integer(pair[1], f"{field}[1]", low=0, high=MAX_COUNT)
