"""What sits in the DLQ and the parking lot, as the operator sees it: each message with its group,
groups with their counts, and the selection a replay or purge takes (pure: the tool reads the
queues, this decides); the parking reasons of dead letters of other services, and the index of
the groups an operator's retry or park record names, both kept in the state table."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import (
    DynamoTable,
    ParkReason,
)
from sqs_redriver.protocol.dead_letters import DeadLetter
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, DlqMessage, from_sqs
from sqs_redriver.protocol.failure import Failure
from sqs_redriver.protocol.keys import group_index_key
from sqs_redriver.protocol.limits import (
    FINGERPRINT_PATTERN,
    MAX_FINGERPRINT_CHARS,
)
from sqs_redriver.protocol.mark import Mark, read_parked
from sqs_redriver.protocol.sources import DeadLetterSource, SourceKind

UNCLASSIFIED = "unclassified"  # a DLQ message with no consumer verdict and no parking reason
CAUSE_PREFIX = "cause:"
# A dead letter of another service: ``dead-letter:<source>[:<cause code>]`` (dead_letter_group).
DEAD_LETTER_PREFIX = "dead-letter:"
# A dead letter in the parking lot whose parking reason the state table does not hold (any more).
PARKED_UNRECORDED = "parked (reason not recorded)"
# A MessageId prefix this long names one message among a queue's (they are random UUIDs).
MIN_ID_PREFIX = 8


class Where(StrEnum):
    """The queue a message was read from."""

    DLQ = "dlq"
    PARKING_LOT = "parking-lot"


@dataclass(frozen=True)
class Inspected:
    """One message read from the DLQ or the parking lot, with what the re-driver knows of it."""

    message: DlqMessage
    where: Where
    # A parked message's reason, as the re-driver wrote it into the mark (``cause``, ``why``, ...);
    # a dead letter's, as its state table record holds it (StateTable.load_park_reasons).
    parked: Mapping[str, Any] | None = None

    @property
    def mark(self) -> Mark | None:
        return self.message.mark

    @property
    def dead_letter(self) -> DeadLetter | None:
        """What a dead letter of another service holds (None: an SQS consumer's message)."""
        return self.message.dead_letter

    @property
    def identity(self) -> str:
        """The identity the re-driver counts this message under (it survives sends)."""
        if self.mark is not None:
            return self.mark.identity
        return self.message.message_id if self.message.has_room_for_mark else self.message.content_identity

    @property
    def counted_under(self) -> str:
        """The subject of the state table record that counts it: a dead letter's trip while it
        waits in the DLQ (``DlqMessage.record_key``), its parking record once parked; else its
        identity."""
        if self.dead_letter is not None and self.where is Where.DLQ:
            return self.message.record_key
        return self.identity

    @property
    def failure(self) -> Failure | None:
        """The consumer's last failure, when the consumer kit reported one."""
        return self.mark.failure if self.mark is not None else None

    @property
    def group(self) -> str:
        """The error fingerprint; else ``cause:<why it was parked>``; else ``unclassified``. A
        dead letter of another service: its source and the cause it gave (``dead_letter_group``)."""
        if self.dead_letter is not None:
            return dead_letter_group(self.dead_letter)
        if self.failure is not None:
            return self.failure.fingerprint
        if self.parked is not None:
            return CAUSE_PREFIX + str(self.parked.get("cause", "unknown"))
        return UNCLASSIFIED

    @property
    def label(self) -> str:
        """One line saying what went wrong."""
        if self.dead_letter is not None and self.where is Where.PARKING_LOT:
            return parked_dead_letter_label(self.dead_letter, self.parked)
        if self.dead_letter is not None:
            return dead_letter_label(self.dead_letter)
        if self.failure is not None:
            return f"{self.failure.error_class}: {self.failure.message}"
        if self.parked is not None:
            return str(self.parked.get("why", ""))
        return "no consumer verdict (failed without the consumer kit, or not yet classified)"

    @property
    def parking(self) -> str | None:
        """Why it was parked, in one line; None for a message not known to be parked."""
        if self.parked is not None:
            return f"{self.parked.get('cause')}: {self.parked.get('why')}"
        if self.dead_letter is not None and self.where is Where.PARKING_LOT:
            return PARKED_UNRECORDED
        return None

    @property
    def unreplayable(self) -> str | None:
        """Why this dead letter of another service cannot go back to its target; None when it
        can (or it is an SQS consumer's message)."""
        dead_letter = self.dead_letter
        if dead_letter is None:
            return None
        if dead_letter.problem is not None:
            return f"its dead letter cannot be read: {dead_letter.problem}"
        if dead_letter.source is None:
            return f"it names no configured source ({dead_letter.origin or 'it names none'})"
        if dead_letter.payload is None:
            request = f" (request {dead_letter.request_id})" if dead_letter.request_id else ""
            return f"its source dropped the payload{request}: there is nothing to deliver again"
        return None

    @property
    def sent_at(self) -> int:
        """When SQS received this copy (epoch seconds)."""
        return int(self.message.system_attributes.get("SentTimestamp", "0")) // 1000

    @property
    def failed_at(self) -> int:
        """When it first failed: the mark's record, else when this copy was sent."""
        if self.mark is not None and self.mark.first_failed_at:
            return self.mark.first_failed_at
        return self.sent_at

    @property
    def source(self) -> str:
        """The source queue it came from: the parking reason's, else the ARN SQS gave the DLQ copy.
        A dead letter's: its source's address, else where it says it came from."""
        if self.dead_letter is not None:
            source = self.dead_letter.source
            return source.address if source is not None else self.dead_letter.origin
        if self.parked is not None and self.parked.get("source_queue"):
            return str(self.parked["source_queue"])
        return self.message.source_arn or ""

    def named(self, wanted: str) -> bool:
        """Whether ``wanted`` is this message's SQS MessageId (or its first ``MIN_ID_PREFIX``
        characters at least, as tables show it) or its re-drive identity."""
        message_id = self.message.message_id
        return wanted in (message_id, self.identity) or (
            len(wanted) >= MIN_ID_PREFIX and message_id.startswith(wanted)
        )


def is_fingerprint(group_key: str) -> bool:
    """Whether a group key is a consumer failure's fingerprint (what RETRY#/PARK# records name): of
    the length and characters the mark parser takes (protocol.limits), so a record written for it
    can match a failure."""
    if group_key == UNCLASSIFIED or group_key.startswith((CAUSE_PREFIX, DEAD_LETTER_PREFIX)):
        return False
    return len(group_key) <= MAX_FINGERPRINT_CHARS and FINGERPRINT_PATTERN.fullmatch(group_key) is not None


# A dead letter of another service has no consumer kit's fingerprint: it groups by its source and
# the cause the source gave (a function's errorType or Lambda's ErrorCode, EventBridge's
# ERROR_CODE), so one bug of one target is one group, as a fingerprint makes it for a consumer.
# SNS gives no cause: a subscription's dead letters group by their source alone.


def dead_letter_group(dead_letter: DeadLetter) -> str:
    """``dead-letter:<source>[:<cause code>]``; ``dead-letter:unreadable`` for one that cannot be
    read, ``dead-letter:no-source[:<cause code>]`` for one of no configured source."""
    if dead_letter.problem is not None:
        return DEAD_LETTER_PREFIX + "unreadable"
    source = dead_letter.source
    key = DEAD_LETTER_PREFIX + (source_label(source) if source is not None else "no-source")
    cause = dead_letter.cause
    return f"{key}:{cause.code}" if cause is not None and cause.code else key


def dead_letter_label(dead_letter: DeadLetter) -> str:
    """One line saying what went wrong, in the source's words."""
    if dead_letter.problem is not None:
        return f"cannot be read: {dead_letter.problem}"
    cause = dead_letter.cause
    if cause is None or not cause.code:
        return "the source gave no cause (SNS says nothing of a failed delivery)"
    return f"{cause.code}: {cause.message}" if cause.message else cause.code


def parked_dead_letter_label(dead_letter: DeadLetter, parked: Mapping[str, Any] | None) -> str:
    """One line on a parked dead letter: its parking reason and count as its record holds them."""
    if parked is None:
        return f"{PARKED_UNRECORDED}; {dead_letter_label(dead_letter)}"
    return (
        f"parked after {parked.get('redrive_count')} re-drives ({parked.get('cause')}): {parked.get('why')}"
    )


def source_label(source: DeadLetterSource) -> str:
    """A source's short name, one of a DLQ's sources: a function's name; a rule's and its
    target's (``orders-placed/fulfilment``); a subscription's topic and endpoint."""
    if source.kind is SourceKind.FUNCTION:
        return source.name
    rule_target = source.kind is SourceKind.RULE_TARGET and source.target_id
    target = source.target_id if rule_target else _resource_name(source.target_arn)
    return f"{source.name}/{target}"


def _resource_name(arn: str) -> str:
    return arn.rsplit(":", 1)[-1].rsplit("/", 1)[-1]


def inspect(raw: Mapping[str, Any], where: Where, sources: Sequence[DeadLetterSource] = ()) -> Inspected:
    """An entry of a ReceiveMessage response (all attributes requested), inspected; with
    ``sources``, the message of a DLQ of another kind (or of its parking lot), read as its dead
    letter: its parking reason is the one its state record holds (``with_park_reasons``), else the
    one the re-driver wrote into its attributes in the parking lot, as into an SQS message's (the
    DLQ's are anyone's to write)."""
    if sources:
        parked = parking_reason(raw) if where is Where.PARKING_LOT else None
        return Inspected(message=from_sqs(raw, sources), where=where, parked=parked)
    return Inspected(message=from_sqs(raw), where=where, parked=parking_reason(raw))


def parking_reason(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``parked`` object the re-driver adds to the mark of a message it parks, if any."""
    return read_parked((raw.get("MessageAttributes") or {}).get(MARK_ATTRIBUTE, {}).get("StringValue"))


@dataclass
class Group:
    """Messages of one group in one queue: how many, since when, from where, one to look at."""

    key: str
    where: Where
    label: str
    count: int = 0
    oldest: int = 0
    newest: int = 0
    sources: set[str] = field(default_factory=set)
    sample_id: str = ""

    def add(self, item: Inspected) -> None:
        self.count += 1
        at = item.failed_at
        if not self.sample_id or at < self.oldest:
            self.oldest, self.sample_id = at, item.message.message_id
        self.newest = max(self.newest, at)
        if item.source:
            self.sources.add(item.source)

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.key,
            "queue": self.where.value,
            "label": self.label,
            "count": self.count,
            "oldest": self.oldest,
            "newest": self.newest,
            "sources": sorted(self.sources),
            "sample_id": self.sample_id,
        }


def group(items: Iterable[Inspected]) -> list[Group]:
    """Groups by queue and group key, largest first."""
    groups: dict[tuple[Where, str], Group] = {}
    for item in items:
        key = (item.where, item.group)
        if key not in groups:
            groups[key] = Group(key=item.group, where=item.where, label=item.label)
        groups[key].add(item)
    return sorted(groups.values(), key=lambda g: (-g.count, g.where.value, g.key))


@dataclass(frozen=True)
class Selection:
    """Which messages a replay or purge takes; every criterion given must match (none: all)."""

    groups: frozenset[str] = frozenset()
    attributes: Mapping[str, str] = field(default_factory=dict)
    older_than_seconds: int | None = None
    newer_than_seconds: int | None = None
    ids: frozenset[str] = frozenset()

    @property
    def everything(self) -> bool:
        return not (
            self.groups
            or self.attributes
            or self.ids
            or self.older_than_seconds is not None
            or self.newer_than_seconds is not None
        )

    def matches(self, item: Inspected, now: int) -> bool:
        age = now - item.failed_at
        return (
            (not self.groups or item.group in self.groups)
            and all(_attribute(item, name) == value for name, value in self.attributes.items())
            and (self.older_than_seconds is None or age >= self.older_than_seconds)
            and (self.newer_than_seconds is None or age <= self.newer_than_seconds)
            and (not self.ids or any(item.named(wanted) for wanted in self.ids))
        )

    def unknown_groups(self, items: Iterable[Inspected]) -> list[str]:
        """The groups this selection names that none of ``items`` is in."""
        return sorted(self.groups - {item.group for item in items})

    def unknown_ids(self, items: Sequence[Inspected]) -> list[str]:
        """The ids this selection names that name none of ``items``."""
        return sorted(wanted for wanted in self.ids if not any(item.named(wanted) for item in items))


def _attribute(item: Inspected, name: str) -> str | None:
    value = item.message.attributes.get(name)
    return None if value is None else str(value.get("StringValue", ""))


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def parse_duration(text: str) -> int:
    """``90s``, ``15m``, ``2h`` or ``3d`` in seconds; raise ValueError naming the forms allowed."""
    number, unit = text[:-1], text[-1:].lower()
    if unit not in DURATION_UNITS or not number.isdigit():
        raise ValueError(f"{text!r} is not a duration: use a whole number and s, m, h or d (e.g. 2h)")
    return int(number) * DURATION_UNITS[unit]


def parse_attribute_filters(pairs: Iterable[str]) -> dict[str, str]:
    """``name=value`` pairs; raise ValueError for one without ``=``."""
    filters: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"{pair!r} is not an attribute filter: use name=value")
        filters[name] = value
    return filters


def with_park_reasons(items: Sequence[Inspected], reasons: Mapping[str, ParkReason]) -> list[Inspected]:
    """Each dead letter with the parking reason recorded under its identity; the rest as they are."""
    return [
        replace(item, parked=reasons[item.identity].to_dict())
        if item.dead_letter is not None and item.identity in reasons
        else item
        for item in items
    ]


GROUP_INDEX_KEY = group_index_key()
# Writers racing on the index (two operators at once) retry this many times, then give up.
INDEX_WRITE_ATTEMPTS = 3


class GroupIndex(DynamoTable):
    """Which fingerprints have an operator's retry or park record: an index the tool keeps in one
    item of the state table, beside the records themselves (a sorted list of fingerprints and a
    version for conditional writes).

    The operator may not Scan or Query the table (``grant_operator`` gives item reads and writes
    only), so the records cannot be listed by their key prefix: ``retry-group`` and ``park-group``
    add the fingerprint here before they write its record, ``clear-group`` removes it after deleting
    the record, and ``rules`` reads the records of the fingerprints listed here. A record written by
    hand (or by a tool older than the index) is not listed; naming its fingerprint reads it all the
    same."""

    def __init__(self, table_name: str, client: Any) -> None:
        super().__init__(table_name, client)
        # What was wrong with the item when it was last read (None: nothing); a write repairs it.
        self.corrupt: str | None = None

    def load(self) -> list[str]:
        """The fingerprints listed, sorted (none while the item does not exist)."""
        return self._read()[0]

    def add(self, fingerprint: str) -> None:
        """List ``fingerprint`` (nothing to do when it is)."""
        self._change(lambda listed: listed | {fingerprint})

    def remove(self, fingerprint: str) -> None:
        """Stop listing ``fingerprint`` (nothing to do when it is not)."""
        self._change(lambda listed: listed - {fingerprint})

    def _read(self) -> tuple[list[str], dict[str, Any]]:
        """The valid fingerprints listed, and the condition a write must hold (nobody wrote since).
        Anything else in the item is left out and named in ``corrupt``."""
        item = self._call(
            "GetItem",
            self._client.get_item,
            TableName=self.table_name,
            Key={"pk": {"S": GROUP_INDEX_KEY}},
            ConsistentRead=True,
        ).get("Item")
        self.corrupt = None
        if item is None:
            return [], {"ConditionExpression": "attribute_not_exists(pk)"}
        raw = item.get("fingerprints", {})
        values = raw.get("L") if isinstance(raw, dict) else None
        listed = [v["S"] for v in values or [] if isinstance(v, dict) and is_fingerprint(v.get("S") or "")]
        if values is None or len(listed) != len(values):
            self.corrupt = f"{GROUP_INDEX_KEY}: fingerprints is not a list of fingerprints"
        if not str(item.get("version", {}).get("N", "")).isdigit():
            self.corrupt = f"{GROUP_INDEX_KEY}: version is not a whole number"
        guard: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(version)"}
        if "version" in item:
            guard = {
                "ConditionExpression": "version = :read",
                "ExpressionAttributeValues": {":read": item["version"]},
            }
        return sorted(set(listed)), guard

    def _change(self, change: Callable[[set[str]], set[str]]) -> None:
        """Read, change and write the index on condition that nobody wrote it in between."""
        for _ in range(INDEX_WRITE_ATTEMPTS):
            listed, guard = self._read()
            changed = change(set(listed))
            if changed == set(listed) and self.corrupt is None:
                return
            if self._write(sorted(changed), guard):
                return
        raise AwsCallError(
            f"the index of group records in {self.table_name} changed at every attempt (someone "
            "else is marking groups): try again"
        )

    def _write(self, fingerprints: list[str], guard: dict[str, Any]) -> bool:
        version = guard.get("ExpressionAttributeValues", {}).get(":read", {}).get("N", "0")
        next_version = int(version) + 1 if str(version).isdigit() else 1
        written = self._write_if(
            "PutItem",
            self._client.put_item,
            Item={
                "pk": {"S": GROUP_INDEX_KEY},
                "fingerprints": {"L": [{"S": fp} for fp in fingerprints]},
                "version": {"N": str(next_version)},
            },
            **guard,
        )
        return written is not None
