"""The records of what each replay, edit and group retry sent (``REPLAY#<DLQ URL>#<replay id>``),
and the index of a re-driver's recent ones (``REPLAYS#<DLQ URL>``), in the state table.

A record holds who, when, what was chosen, the source queues and, for each identity sent, the
fingerprint it had then and its source; past ``IDENTITIES_PER_PART`` identities the rest go to
parts ``#1``, ``#2``... (a DynamoDB item holds 400 KB at most). Records and index entries expire
after ``REPLAY_TTL_SECONDS``. The operator may not Scan or Query the table, hence the index, as for
group records (group_index.py). Every field read is checked here: a record that fails is
``CorruptReplay``, naming its key and the field, never a traceback.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqs_redriver.console.inventory import is_fingerprint
from sqs_redriver.console.outcome_rules import Sent
from sqs_redriver.protocol.keys import replay_index_key, replay_record_key, replay_verdict_key
from sqs_redriver.protocol.limits import IDENTITY_PATTERN, MAX_EPOCH_SECONDS, MAX_IDENTITY_CHARS
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable

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


class CorruptReplay(ValueError):
    """A replay record or index that fails validation: its key, the field and the problem."""


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
        key = replay_index_key(self.dlq_url)
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
        key = replay_index_key(self.dlq_url)
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
