"""The state table: every record the re-driver and its operator's tool keep in DynamoDB, and
``StateTable``, the one class that reads and writes them. In order: the records' values (the pause,
group marks, a run's summary, the continuation event); the checked readers of an item's attributes
and ``CorruptRecord``, with how one is reported; ``DynamoTable``, the DynamoDB calls; each record
kind's item codec (the breaker; message and failure records, with why a message is parked; the
operator's pause, group marks and run history; the run's sweep, continuation slot and verdicts);
the fate of each kind's corrupt record; then ``StateTable``, its methods by kind: breakers, the
pause, group marks, message and failure records, verdicts, the continuation slot, the sweep's due
time, the run history.

Every item read is parsed once, into validated values; what fails raises ``CorruptRecord`` naming
its key, field and problem, is reported (a log line, the CorruptRecords metric) and meets the
fixed fate its kind has (decision 0059 in docs/decisions/). Keys come from ``sqs_redriver.protocol.keys``."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.core.breaker import Breaker, Canary, Evidence, State
from sqs_redriver.core.errors import AwsCallError, CorruptRecord
from sqs_redriver.protocol.failure import Failure, VerdictCounts
from sqs_redriver.protocol.keys import (
    IDENTITY_ATTRIBUTE,
    IDENTITY_INDEX,
    RecordKind,
    is_trip_of,
    kind_of,
    kit_record_key,
    storable,
    subject_of,
)
from sqs_redriver.protocol.limits import (
    FINGERPRINT_PATTERN,
    MAX_CLOCK_SKEW_SECONDS,
    MAX_COUNT,
    MAX_EPOCH_SECONDS,
    MAX_FINGERPRINT_CHARS,
    MAX_IDENTITY_CHARS,
    MAX_MARK_HISTORY,
    RECORD_MAX_BREAKER_COUNT,
    RECORD_MAX_CANARIES,
    RECORD_MAX_CANARY_WINDOW_SECONDS,
    RECORD_MAX_JSON_CHARS,
    RECORD_MAX_NAME_CHARS,
    RECORD_MAX_RUNS,
    RECORD_MAX_SWEEP_AHEAD_SECONDS,
    RECORD_MAX_TEXT_CHARS,
    RECORD_MAX_VERDICTS,
    RECORD_MAX_VERSION,
)
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.wire import Rejection

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from mypy_boto3_dynamodb import DynamoDBClient


# The operator's kill switch: while a pause is recorded, no run re-drives, failed_canaries or scans.


@dataclass(frozen=True)
class Pause:
    """Who paused the re-driver, why, and when (epoch seconds)."""

    reason: str
    by: str
    at: int


# An operator's decision about one failure group (a fingerprint): retry it, or park it.


class GroupAction(StrEnum):
    RETRY = "retry"  # re-drive its terminal failures instead of parking them
    PARK = "park"  # park every failure of it on sight, terminal or transient


@dataclass(frozen=True)
class GroupMark:
    """Who decided what about a failure group, why, and when (epoch seconds)."""

    fingerprint: str
    action: GroupAction
    reason: str = ""
    by: str = ""
    at: int = 0

    @property
    def key(self) -> str:
        """The state table key of this record."""
        return group_record_key(self.action, self.fingerprint)

    @property
    def other_key(self) -> str:
        """The key of the other action's record for the same fingerprint (deleted on write)."""
        other = GroupAction.RETRY if self.action is GroupAction.PARK else GroupAction.PARK
        return group_record_key(other, self.fingerprint)


def group_record_key(action: GroupAction, fingerprint: str) -> str:
    return (
        RecordKind.PARK.key(fingerprint) if action is GroupAction.PARK else RecordKind.RETRY.key(fingerprint)
    )


def prevailing(marks: Iterable[GroupMark]) -> tuple[dict[str, GroupMark], list[str]]:
    """One mark per fingerprint, PARK over RETRY; and the fingerprints that had both."""
    found: dict[str, GroupMark] = {}
    both: list[str] = []
    for mark in marks:
        held = found.get(mark.fingerprint)
        if held is not None and held.action is not mark.action:
            both.append(mark.fingerprint)
        if held is None or mark.action is GroupAction.PARK:
            found[mark.fingerprint] = mark
    return found, sorted(both)


# The run history: one compact summary per run, the newest first, kept in the state table.


RUN_HISTORY_LENGTH = 20


# The counts of a summary, as RunReport names them.
COUNTS = (
    "received",
    "redriven",
    "parked",
    "returned",
    "canaries",
    "expiring",
    "errors",
    "unparkable",
    "unarchived",
)


@dataclass(frozen=True)
class RunSummary:
    """One line of the run history, as read back: missing fields get their zero value."""

    at: int = 0
    duration_ms: int = 0
    mode: str = ""
    breaker_state: str = ""
    stopped_because: str = ""
    received: int = 0
    redriven: int = 0
    parked: int = 0
    returned: int = 0
    canaries: int = 0
    expiring: int = 0
    errors: int = 0
    unparkable: int = 0
    unarchived: int = 0
    breaker_transitions: tuple[str, ...] = ()
    paused: bool = False
    continuation: bool = False
    sources: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> RunSummary:
        """Read a summary; unknown fields are ignored, missing, mistyped or out-of-range ones get zero
        values."""
        transitions = payload.get("breaker_transitions")
        sources = payload.get("sources")
        return cls(
            at=_int(payload.get("at")),
            duration_ms=_int(payload.get("duration_ms")),
            mode=_str(payload.get("mode")),
            breaker_state=_str(payload.get("breaker_state")),
            stopped_because=_str(payload.get("stopped_because")),
            **{name: _int(payload.get(name)) for name in COUNTS},
            breaker_transitions=tuple(str(t) for t in transitions) if isinstance(transitions, list) else (),
            paused=payload.get("paused") is True,
            continuation=payload.get("continuation") is True,
            sources={str(k): str(v) for k, v in sources.items()} if isinstance(sources, dict) else {},
        )

    def to_dict(self) -> dict[str, Any]:
        """The summary as the re-driver writes it."""
        return {
            "at": self.at,
            "duration_ms": self.duration_ms,
            "mode": self.mode,
            "breaker_state": self.breaker_state,
            "stopped_because": self.stopped_because,
            **{name: getattr(self, name) for name in COUNTS},
            "breaker_transitions": list(self.breaker_transitions),
            "paused": self.paused,
            "continuation": self.continuation,
            "sources": dict(self.sources),
        }


def _int(value: object) -> int:
    """A count or a time: a whole number from 0 to the end of year 9999, else 0 (a summary may be
    read from a record anyone with the operator's grant could write; the tool prints its times)."""
    # bool is an int to Python, and not a count
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if 0 <= value <= MAX_EPOCH_SECONDS else 0  # NaN fails both comparisons


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


# The event a run sends to its own function so that draining goes on at once (continuation).


CONTINUATION_SOURCE = "sqs-redriver.continuation"
RECORD_MAX_RATE = 100_000  # MAX_DRAIN_RATE's highest
RECORD_MAX_WORKERS = 200  # MAX_WORKERS' highest


@dataclass(frozen=True)
class Resume:
    """A run that follows another: the slot ``token`` it was offered, its place in the chain,
    whether the run before it had finished its slow start, and which worker of a large drain it is
    (``slot`` 0: the chain every drain has; 1 and up: the workers a fan-out added)."""

    token: str
    generation: int
    full_rate: bool
    slot: int = 0
    drain: bool = False  # the run is part of a large drain (runtime/workers.py)

    def to_event(self) -> dict[str, Any]:
        detail: dict[str, Any] = {"generation": self.generation, "full_rate": self.full_rate}
        if self.slot:
            detail["slot"] = self.slot
        if self.drain:
            detail["drain"] = True
        return {"id": self.token, "source": CONTINUATION_SOURCE, "detail": detail}

    @staticmethod
    def from_event(event: Mapping[str, Any]) -> Resume | None:
        """The continuation this event carries; None for a scheduled tick (any other source)."""
        if event.get("source") != CONTINUATION_SOURCE:
            return None
        detail = event.get("detail") or {}
        generation, full_rate, token = detail.get("generation"), detail.get("full_rate"), event.get("id")
        slot, drain = detail.get("slot", 0), detail.get("drain", False)
        if (
            not isinstance(token, str)
            or not isinstance(generation, int)
            or not isinstance(full_rate, bool)
            or type(slot) is not int
            or not 0 <= slot < RECORD_MAX_WORKERS
            or not isinstance(drain, bool)
        ):
            raise ValueError(f"malformed continuation event: {dict(event)!r}")
        return Resume(token=token, generation=generation, full_rate=full_rate, slot=slot, drain=drain)


# Validated readers of one DynamoDB item's attributes: a value within its limits, or
# ``CorruptRecord`` naming the record's key, the field and what was wrong.


Item = Mapping[str, Any]


def item_key(item: Item) -> str:
    """The item's partition key (every item read by key has one)."""
    value = item.get("pk") if isinstance(item, Mapping) else None
    key = value.get("S") if isinstance(value, Mapping) else None
    if not isinstance(key, str):
        raise CorruptRecord("?", "pk", "not a string key")
    return key


def _typed(item: Item, name: str, type_code: str, key: str) -> Any:
    value = item.get(name)
    if value is None:
        raise CorruptRecord(key, name, "missing")
    if not isinstance(value, Mapping) or type_code not in value:
        raise CorruptRecord(key, name, f"not of type {type_code}")
    return value[type_code]


def number(item: Item, name: str, key: str, *, low: int, high: int) -> int:
    """An integer attribute (type N) within ``low``..``high``."""
    raw = _typed(item, name, "N", key)
    return integer(raw, name, key, low=low, high=high)


def integer(raw: object, name: str, key: str, *, low: int, high: int) -> int:
    """``raw`` (a DynamoDB number's string, or a JSON number) as an integer within ``low``..``high``."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | Decimal):
        raise CorruptRecord(key, name, "not a number")
    if len(str(raw)) > 40:
        raise CorruptRecord(key, name, f"outside {low}..{high}")
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise CorruptRecord(key, name, "not a number") from None
    if not value.is_finite() or value != value.to_integral_value():
        raise CorruptRecord(key, name, "not a whole number")
    if not low <= value <= high:
        raise CorruptRecord(key, name, f"outside {low}..{high}")
    return int(value)


def epoch(item: Item, name: str, key: str, *, now: int, ahead: int = MAX_CLOCK_SKEW_SECONDS) -> int:
    """A time in epoch seconds, not later than ``now`` + ``ahead`` (a later one is forged)."""
    return number(item, name, key, low=0, high=min(now + ahead, MAX_EPOCH_SECONDS))


def text(
    item: Item, name: str, key: str, *, max_chars: int = RECORD_MAX_NAME_CHARS, empty: bool = False
) -> str:
    """A string attribute (type S) of at most ``max_chars`` characters, valid Unicode."""
    value = _typed(item, name, "S", key)
    return checked_text(value, name, key, max_chars=max_chars, empty=empty)


def checked_text(value: object, name: str, key: str, *, max_chars: int, empty: bool = False) -> str:
    """``value`` as a string of at most ``max_chars`` characters (non-empty unless ``empty``)."""
    if not isinstance(value, str):
        raise CorruptRecord(key, name, "not a string")
    if len(value) > max_chars:
        raise CorruptRecord(key, name, f"longer than {max_chars} characters")
    if not value and not empty:
        raise CorruptRecord(key, name, "empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise CorruptRecord(key, name, "not valid Unicode") from None
    return value


def values(item: Item, name: str, key: str, *, max_items: int) -> list[Any]:
    """A list attribute (type L) of at most ``max_items`` elements."""
    raw = _typed(item, name, "L", key)
    if not isinstance(raw, list):
        raise CorruptRecord(key, name, "not a list")
    if len(raw) > max_items:
        raise CorruptRecord(key, name, f"more than {max_items} elements")
    return raw


def element(value: object, type_code: str, name: str, key: str) -> Any:
    """One element of a list attribute, of ``type_code``."""
    if not isinstance(value, Mapping) or type_code not in value:
        raise CorruptRecord(key, name, f"an element not of type {type_code}")
    return value[type_code]


def json_object(raw: str, name: str, key: str) -> dict[str, Any]:
    """A JSON object of at most RECORD_MAX_JSON_CHARS characters: no NaN or Infinity, numbers
    as int or Decimal (never a float that overflows), nesting within Python's recursion limit."""
    if len(raw) > RECORD_MAX_JSON_CHARS:
        raise CorruptRecord(key, name, f"longer than {RECORD_MAX_JSON_CHARS} characters")
    try:
        parsed = json.loads(raw, parse_float=Decimal, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise CorruptRecord(key, name, "not JSON") from None
    if not isinstance(parsed, dict):
        raise CorruptRecord(key, name, "not a JSON object")
    return parsed


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a record may hold")


def expired(item: Item, key: str, *, now: int) -> bool:
    """Whether the item's TTL passed (TTL deletion lags by days; an expired record must not
    count). An item without ``expires_at`` never expires; a corrupt one raises."""
    if "expires_at" not in item:
        return False
    return number(item, "expires_at", key, low=0, high=MAX_EPOCH_SECONDS) <= now


# How a corrupt record is made known: a log line naming its key, and the CorruptRecords metric.


CORRUPT_RECORDS_METRIC = "CorruptRecords"


class CorruptRecordLog:
    """Reports each corrupt record with its fate; ``metrics``: Powertools Metrics (None: log only)."""

    def __init__(self, logger: logging.Logger | Any, metrics: Any = None) -> None:
        self._log = logger
        self._metrics = metrics

    def report(self, corrupt: CorruptRecord, fate: str) -> None:
        """One log line with the record's key, kind, field, problem and fate; one metric count."""
        self._log.error(
            "corrupt state record",
            extra={
                "record_key": corrupt.key,
                "record_kind": corrupt.kind.name if corrupt.kind else "UNKNOWN",
                "field": corrupt.field,
                "problem": corrupt.problem,
                "fate": fate,
            },
        )
        if self._metrics is not None:
            self._metrics.add_metric(name=CORRUPT_RECORDS_METRIC, unit=MetricUnit.Count, value=1)


# The DynamoDB calls of the state table: single and batched reads and writes, every AWS error
# turned into ``AwsCallError``, unprocessed batch entries retried.


BATCH_GET_LIMIT = 100


BATCH_WRITE_LIMIT = 25


MAX_UNPROCESSED_ROUNDS = 5


# Pages of keys a Query of the identity index reads at most (a page holds up to 1 MB of keys).
MAX_INDEX_PAGES = 20


class DynamoTable:
    """One DynamoDB table keyed by ``pk``, and where its corrupt records are reported."""

    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        logger: logging.Logger | Any = None,
        metrics: Any = None,
    ) -> None:
        self.table_name = table_name
        self._client = client
        self._clock = clock
        self._sleep = sleep
        self._log = logger or logging.getLogger("redriver")
        self._corrupt = CorruptRecordLog(self._log, metrics)

    def _now(self) -> int:
        return int(self._clock())

    def _report(self, corrupt: CorruptRecord, fate: str) -> None:
        self._corrupt.report(corrupt, fate)

    def _write_if(self, operation: str, call: Any, **kwargs: Any) -> dict[str, Any] | None:
        """A conditional write: its response, or None when its condition failed."""
        try:
            response: dict[str, Any] = call(TableName=self.table_name, **kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc
        return response

    def _get_item(self, key: str) -> dict[str, Any] | None:
        """One item, read consistently; None when there is none (or none can be: ``storable``)."""
        if not storable(key):
            return None
        response = self._call(
            "GetItem",
            self._client.get_item,
            TableName=self.table_name,
            Key={"pk": {"S": key}},
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _put_item(self, item: Mapping[str, Any]) -> None:
        self._call("PutItem", self._client.put_item, TableName=self.table_name, Item=item)

    def _get_items(self, wanted: Sequence[str]) -> list[dict[str, Any]]:
        """Consistent BatchGetItem of these keys (those that can hold a record), retrying
        unprocessed ones."""
        keys = [key for key in wanted if storable(key)]
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), BATCH_GET_LIMIT):
            request: dict[str, Any] = {
                self.table_name: {
                    "Keys": [{"pk": {"S": key}} for key in keys[start : start + BATCH_GET_LIMIT]],
                    "ConsistentRead": True,
                }
            }
            for _ in range(MAX_UNPROCESSED_ROUNDS):
                response = self._call("BatchGetItem", self._client.batch_get_item, RequestItems=request)
                found.extend(response.get("Responses", {}).get(self.table_name, []))
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
                self._sleep(0.05)
            else:
                raise AwsCallError("DynamoDB BatchGetItem left keys unprocessed after retries")
        return found

    def _write_batches(self, items: Sequence[Mapping[str, Any]]) -> None:
        """BatchWriteItem in batches of 25, retrying unprocessed items (none: no call)."""
        for start in range(0, len(items), BATCH_WRITE_LIMIT):
            request: dict[str, Any] = {self.table_name: items[start : start + BATCH_WRITE_LIMIT]}
            for _ in range(MAX_UNPROCESSED_ROUNDS):
                response = self._call("BatchWriteItem", self._client.batch_write_item, RequestItems=request)
                request = response.get("UnprocessedItems") or {}
                if not request:
                    break
                self._sleep(0.05)
            else:
                raise AwsCallError("DynamoDB BatchWriteItem left items unprocessed after retries")

    def _call(self, operation: str, call: Any, **kwargs: Any) -> Any:
        try:
            return call(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc


# The breaker record (``BREAKER#<source queue URL>``) <-> ``Breaker``.


def breaker_item(key: str, breaker: Breaker) -> dict[str, Any]:
    """The item of ``breaker`` under ``key``."""
    item: dict[str, Any] = {
        "pk": {"S": key},
        "state": {"S": breaker.state.value},
        "failures": {"N": str(breaker.failures)},
        "successes": {"N": str(breaker.successes)},
        "changed_at": {"N": str(breaker.changed_at)},
        "version": {"N": str(breaker.version)},
        "evidence": {"S": breaker.evidence.value},
        "judged_until": {"N": str(breaker.judged_until)},
        "silent_probes": {"N": str(breaker.silent_probes)},
    }
    if breaker.canary is not None:
        item["canary_ids"] = {"L": [{"S": identity} for identity in breaker.canary.identities]}
        item["canary_verdict_at"] = {"N": str(breaker.canary.verdict_at)}
        item["canary_groups"] = {"L": [{"S": group} for group in breaker.canary.groups]}
        item["canary_sent_at"] = {"N": str(breaker.canary.sent_at)}
    return item


def breaker_from_item(item: Item, *, now: int) -> Breaker:
    """The breaker an item holds; ``CorruptRecord`` when any field is missing, mistyped, out of
    range or from the future (``now`` + the clock skew)."""
    key = item_key(item)
    raw_state = text(item, "state", key)
    if raw_state not in State.__members__:
        raise CorruptRecord(key, "state", "not CLOSED, OPEN or HALF_OPEN")
    return Breaker(
        state=State(raw_state),
        failures=number(item, "failures", key, low=0, high=RECORD_MAX_BREAKER_COUNT),
        successes=number(item, "successes", key, low=0, high=RECORD_MAX_BREAKER_COUNT),
        changed_at=epoch(item, "changed_at", key, now=now),
        version=stored_version(item),
        canary=_canary(item, key, now) if "canary_ids" in item else None,
        evidence=_evidence(item, key),
        # Written by this version on; a record from before has none.
        judged_until=epoch(item, "judged_until", key, now=now) if "judged_until" in item else 0,
        silent_probes=number(item, "silent_probes", key, low=0, high=RECORD_MAX_BREAKER_COUNT)
        if "silent_probes" in item
        else 0,
    )


def _evidence(item: Item, key: str) -> Evidence:
    """What moved the breaker last: it says, and decides nothing, so a word this version does not
    know (a newer one wrote it) is read as none, never as a corrupt breaker (read as CLOSED)."""
    raw = text(item, "evidence", key) if "evidence" in item else ""
    known = {e.value: e for e in Evidence}
    return known.get(raw, Evidence.NONE)


def stored_version(item: Item) -> int:
    """The item's version, when it is a valid one; ``CorruptRecord`` otherwise."""
    return number(item, "version", item_key(item), low=0, high=RECORD_MAX_VERSION)


def _canary(item: Item, key: str, now: int) -> Canary:
    identities = _names(item, "canary_ids", key)
    if not identities:
        raise CorruptRecord(key, "canary_ids", "empty")
    sent_at = epoch(item, "canary_sent_at", key, now=now) if "canary_sent_at" in item else 0
    return Canary(
        identities=identities,
        verdict_at=epoch(item, "canary_verdict_at", key, now=now, ahead=RECORD_MAX_CANARY_WINDOW_SECONDS),
        groups=_names(item, "canary_groups", key) if "canary_groups" in item else (),
        sent_at=sent_at,
    )


def _names(item: Item, name: str, key: str) -> tuple[str, ...]:
    return tuple(
        checked_text(element(value, "S", name, key), name, key, max_chars=RECORD_MAX_NAME_CHARS)
        for value in values(item, name, key, max_items=RECORD_MAX_CANARIES)
    )


# Why a message is parked, as a typed value; the parking lot and the table get its JSON form.


class ParkCause(StrEnum):
    OVER_LIMIT = "over_limit"  # it came back MAX_REDRIVE_COUNT times
    UNKNOWN_SOURCE = "unknown_source"  # SQS names a source queue that is not configured
    SOURCE_REJECTED = "source_rejected"  # the source queue refuses it for good (a sender fault)
    TERMINAL = "terminal"  # the consumer kit classified its failure as terminal
    EXPIRING = "expiring"  # the DLQ's retention would delete it soon (retention.py)
    OPERATOR = "operator"  # an operator parked its failure group (a PARK#<fingerprint> record)
    SUSPECT = "suspect"  # it kept failing while the consumer processed others (consumer_health.py)
    # A dead letter of another service that cannot go back: its source dropped the payload, or
    # what holds it could not be read (the reason names the field)
    UNREPLAYABLE = "unreplayable"


@dataclass(frozen=True)
class ParkReason:
    cause: ParkCause
    why: str
    redrive_count: int
    first_failed_at: int
    last_failed_at: int
    source_queue: str
    dlq_message_id: str
    # The consumer's last failure, when the consumer kit reported it: the mark carries it as
    # ``err``, the table record of a message without a mark as ``failure``.
    failure: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``parked`` object of the mark: the fields operators read."""
        return {
            "cause": self.cause.value,
            "why": self.why,
            "redrive_count": self.redrive_count,
            "first_failed_at": self.first_failed_at,
            "last_failed_at": self.last_failed_at,
            "source_queue": self.source_queue,
            "dlq_message_id": self.dlq_message_id,
        }


# Message records (``MSG#<identity>``) <-> ``Mark``, and the consumer kit's failure records
# (``FAILURE#<identity>``) -> ``Failure``: the history of messages with no room for a mark.


def message_item(record: MessageRecord, now: int, ttl_seconds: int) -> dict[str, Any]:
    """The item of one message record, written at ``now``, expiring ``ttl_seconds`` later."""
    mark = record.mark
    item: dict[str, Any] = {
        "pk": {"S": RecordKind.MESSAGE.key(record.key or mark.identity)},
        IDENTITY_ATTRIBUTE: {"S": mark.identity},
        "redrive_count": {"N": str(mark.count)},
        "first_failed_at": {"N": str(mark.first_failed_at)},
        "redriven_at": {"L": [{"N": str(value)} for value in mark.redriven_at]},
        "status": {"S": str(record.status)},
        "source_queue": {"S": record.source_queue},
        "updated_at": {"N": str(now)},
        "expires_at": {"N": str(now + ttl_seconds)},
    }
    if mark.suspected:
        item["suspected"] = {"N": str(mark.suspected)}
        item["processed_meanwhile"] = {"N": str(mark.processed_meanwhile)}
    if record.reason is not None:
        item["reason"] = {"S": json.dumps(record.reason.to_dict())}
        if record.reason.failure is not None:
            item["failure"] = {"S": json.dumps(record.reason.failure.to_dict())}
    return item


def mark_from_item(item: Item, *, now: int) -> Mark:
    """The mark a message record holds (what the planner needs of it); ``CorruptRecord`` when its
    identity is not its key's (the identity, or a trip of it), or a count or time is missing,
    mistyped, out of range or forged."""
    key = item_key(item)
    identity = text(item, IDENTITY_ATTRIBUTE, key, max_chars=MAX_IDENTITY_CHARS)
    if not is_trip_of(subject_of(key), identity):
        raise CorruptRecord(key, IDENTITY_ATTRIBUTE, "not the identity of its key")
    times = values(item, "redriven_at", key, max_items=MAX_MARK_HISTORY)
    return Mark(
        identity=identity,
        count=number(item, "redrive_count", key, low=0, high=MAX_COUNT),
        first_failed_at=epoch(item, "first_failed_at", key, now=now),
        redriven_at=tuple(_time(element(value, "N", "redriven_at", key), key, now) for value in times),
        suspected=_optional_count(item, "suspected", key),
        processed_meanwhile=_optional_count(item, "processed_meanwhile", key),
    )


def park_reason_from_item(item: Item, *, now: int) -> ParkReason | None:
    """The parking reason of a message record (None: the record is expired or not of a parked
    message); ``CorruptRecord`` naming the field when it is not one ``message_item`` wrote. A dead
    letter of another service carries no mark: this is where why it was parked is kept. Its times
    are only shown, so any time a date can hold is taken."""
    key = item_key(item)
    if expired(item, key, now=now) or text(item, "status", key) != RecordStatus.PARKED:
        return None
    reason = json_object(text(item, "reason", key, max_chars=RECORD_MAX_JSON_CHARS), "reason", key)
    cause = checked_text(reason.get("cause"), "reason.cause", key, max_chars=RECORD_MAX_NAME_CHARS)
    if cause not in {known.value for known in ParkCause}:
        raise CorruptRecord(key, "reason.cause", "not a parking cause")
    return ParkReason(
        cause=ParkCause(cause),
        why=checked_text(reason.get("why"), "reason.why", key, max_chars=RECORD_MAX_JSON_CHARS, empty=True),
        redrive_count=integer(
            reason.get("redrive_count"), "reason.redrive_count", key, low=0, high=MAX_COUNT
        ),
        first_failed_at=_reason_time(reason, "first_failed_at", key),
        last_failed_at=_reason_time(reason, "last_failed_at", key),
        source_queue=_reason_name(reason, "source_queue", key),
        dlq_message_id=_reason_name(reason, "dlq_message_id", key),
    )


def _reason_time(reason: Mapping[str, Any], name: str, key: str) -> int:
    return integer(reason.get(name), f"reason.{name}", key, low=0, high=MAX_EPOCH_SECONDS)


def _reason_name(reason: Mapping[str, Any], name: str, key: str) -> str:
    return checked_text(reason.get(name), f"reason.{name}", key, max_chars=RECORD_MAX_NAME_CHARS, empty=True)


def _optional_count(item: Item, name: str, key: str) -> int:
    """A count written only for some messages (their suspicion): 0 when absent."""
    return number(item, name, key, low=0, high=MAX_COUNT) if name in item else 0


def failure_from_item(item: Item, *, now: int) -> Failure:
    """The failure the consumer kit recorded; ``CorruptRecord`` when it is not one the kit wrote
    (not JSON, missing or mistyped fields) or its time is from the future."""
    key = item_key(item)
    payload = json_object(text(item, "failure", key, max_chars=RECORD_MAX_JSON_CHARS), "failure", key)
    try:
        failure = Failure.from_dict(payload)  # the kit's format, checked field by field
    except Rejection as rejection:
        raise CorruptRecord(key, f"failure.{rejection.field}", rejection.problem) from None
    if failure.at > now + MAX_CLOCK_SKEW_SECONDS:
        raise CorruptRecord(key, "failure.at", f"later than {now + MAX_CLOCK_SKEW_SECONDS} (from the future)")
    return failure


def _time(raw: object, key: str, now: int) -> int:
    return integer(raw, "redriven_at", key, low=0, high=now + MAX_CLOCK_SKEW_SECONDS)


class RecordStatus(StrEnum):
    REDRIVEN = "REDRIVEN"
    PARKED = "PARKED"


@dataclass(frozen=True)
class MarksRead:
    """Message records as read: the marks by subject (an identity, or a trip of it), and by
    subject the records that failed parsing (each reported, its mark left out)."""

    marks: dict[str, Mark]
    unreadable: dict[str, CorruptRecord] = field(default_factory=dict)


@dataclass(frozen=True)
class MessageRecord:
    """What the table keeps about a message: its mark, where it went, and why when parked.
    ``key``: the record's subject, when it is not the mark's identity (a dead letter's trip)."""

    mark: Mark
    status: RecordStatus
    source_queue: str
    reason: ParkReason | None = None
    key: str = ""


# The operator's records: the pause (``PAUSE#<DLQ URL>``), failure group marks
# (``RETRY#``/``PARK#<fingerprint>``), and the run history the operator's tool reads
# (``RUNS#<DLQ URL>``).


# What an unreadable pause is read as: still a pause (decision 0059 in docs/decisions/).
UNREADABLE_PAUSE = Pause(reason="(the pause record is unreadable)", by="(unknown)", at=0)


def pause_item(key: str, pause: Pause) -> dict[str, Any]:
    return {
        "pk": {"S": key},
        "reason": {"S": pause.reason},
        "by": {"S": pause.by},
        "at": {"N": str(pause.at)},
    }


def pause_from_item(item: Item, *, now: int) -> Pause:
    """The pause an item holds; ``CorruptRecord`` when a field is missing, mistyped or forged."""
    key = item_key(item)
    return Pause(
        reason=text(item, "reason", key, max_chars=RECORD_MAX_TEXT_CHARS, empty=True),
        by=text(item, "by", key, max_chars=RECORD_MAX_TEXT_CHARS, empty=True),
        at=epoch(item, "at", key, now=now),
    )


def group_mark_item(mark: GroupMark) -> dict[str, Any]:
    return {
        "pk": {"S": mark.key},
        "fingerprint": {"S": mark.fingerprint},
        "reason": {"S": mark.reason},
        "by": {"S": mark.by},
        "at": {"N": str(mark.at)},
    }


def group_mark_from_key(key: str) -> GroupMark:
    """The operator's decision a group record's key alone carries (action and fingerprint)."""
    if kind_of(key) not in (RecordKind.RETRY, RecordKind.PARK):
        raise CorruptRecord(key, "pk", "not a RETRY# or PARK# key")
    action = GroupAction.PARK if kind_of(key) is RecordKind.PARK else GroupAction.RETRY
    return GroupMark(fingerprint=subject_of(key), action=action)


def group_mark_from_item(item: Item, *, now: int) -> GroupMark:
    """A group mark; one put by hand may hold the key alone. ``CorruptRecord`` when a field it
    holds is mistyped, too long, or forged (the key alone still says what was decided)."""
    key = item_key(item)
    mark = group_mark_from_key(key)
    if "fingerprint" in item and text(item, "fingerprint", key) != mark.fingerprint:
        raise CorruptRecord(key, "fingerprint", "not the fingerprint of its key")
    return GroupMark(
        fingerprint=mark.fingerprint,
        action=mark.action,
        reason=_optional_text(item, "reason", key),
        by=_optional_text(item, "by", key),
        at=epoch(item, "at", key, now=now) if "at" in item else 0,
    )


def _optional_text(item: Item, name: str, key: str) -> str:
    return text(item, name, key, max_chars=RECORD_MAX_TEXT_CHARS, empty=True) if name in item else ""


@dataclass(frozen=True)
class RunHistory:
    """The run history an item holds: its readable summaries (newest first), their lines as
    stored, and the entries skipped as unreadable."""

    summaries: list[dict[str, Any]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    skipped: list[CorruptRecord] = field(default_factory=list)


def runs_item(key: str, lines: list[str]) -> dict[str, Any]:
    return {"pk": {"S": key}, "runs": {"L": [{"S": line} for line in lines]}}


def run_line(summary: Mapping[str, object]) -> str:
    """A run summary as one history entry."""
    return json.dumps(summary, separators=(",", ":"), sort_keys=True)


def runs_from_item(item: Item) -> RunHistory:
    """The history's readable entries; an entry that is not a JSON object is skipped (and named).
    ``CorruptRecord`` when ``runs`` is not a list of at most RECORD_MAX_RUNS entries."""
    key = item_key(item)
    history = RunHistory()
    for index, value in enumerate(values(item, "runs", key, max_items=RECORD_MAX_RUNS)):
        try:
            line = element(value, "S", f"runs[{index}]", key)
            if not isinstance(line, str):
                raise CorruptRecord(key, f"runs[{index}]", "not a string")
            history.summaries.append(json_object(line, f"runs[{index}]", key))
            history.lines.append(line)
        except CorruptRecord as skipped:
            history.skipped.append(skipped)
    return history


# The re-driver's own bookkeeping: when the retention sweep is due (``SWEEP#<DLQ URL>``), the
# pending continuation (``CONTINUATION#<DLQ URL>``), and the consumer kit's verdict counts of a
# run's re-drives (``VERDICTS#<verdict key>``).


VERDICT_COUNTERS = ("ok", "transient", "terminal")


def sweep_item(key: str, due_at: int) -> dict[str, Any]:
    return {"pk": {"S": key}, "due_at": {"N": str(due_at)}}


def sweep_due_from_item(item: Item, *, now: int) -> int:
    """When the next sweep is due; ``CorruptRecord`` when missing, mistyped, or further ahead than
    any sweep interval (a forged time would hold the retention guard off)."""
    return epoch(item, "due_at", item_key(item), now=now, ahead=RECORD_MAX_SWEEP_AHEAD_SECONDS)


def slot_item(key: str, token: str, *, now: int, expires_at: int) -> dict[str, Any]:
    """A slot a run is offered or holds: the chain's continuation slot, or a worker's lease."""
    return {
        "pk": {"S": key},
        "token": {"S": token},
        "offered_at": {"N": str(now)},
        "expires_at": {"N": str(expires_at)},
    }


def continuation_item(dlq_url: str, token: str, *, now: int, stale_after: int) -> dict[str, Any]:
    return slot_item(RecordKind.CONTINUATION.key(dlq_url), token, now=now, expires_at=now + stale_after)


def check_continuation(item: Item, *, now: int) -> None:
    """``CorruptRecord`` unless the item is a continuation an offer wrote (a token, and an offer
    time that is not from the future)."""
    key = item_key(item)
    text(item, "token", key)
    epoch(item, "offered_at", key, now=now)


# A large drain's shared state (``DRAIN#<DLQ URL>``): written by the worker that steps its pace,
# read by every worker before each batch and by the operator's tool.


@dataclass(frozen=True)
class DrainRecord:
    """The pace (messages a second, all workers together; its phase and the rate the consumer last
    fell behind at), the workers it wants, the DLQ's messages and the source queue's visible ones at
    the last step, when, and whether that step found the consumer stalled (``stalled_at`` is then
    ``stepped_at``)."""

    rate: int
    phase: str
    fell_behind_at: int
    workers: int
    messages_left: int
    stepped_at: int
    started_at: int
    ended_at: int = 0  # when a worker found the DLQ empty (0: the drain goes on)
    source_visible: int = 0
    stalled_at: int = 0
    version: int = 0

    @property
    def going(self) -> bool:
        return not self.ended_at


@dataclass(frozen=True)
class FleetView:
    """What a large drain's worker checks before each batch."""

    breaker: Breaker
    paused: bool
    drain: DrainRecord | None
    verdicts: VerdictCounts | None = None  # the kit's verdicts of the worker's re-drives, when asked


DRAIN_NUMBERS = {  # name: (low, high)
    "rate": (1, RECORD_MAX_RATE),
    "fell_behind_at": (0, RECORD_MAX_RATE),
    "workers": (1, RECORD_MAX_WORKERS),
    "messages_left": (0, MAX_COUNT * 1_000),
    "source_visible": (0, MAX_COUNT * 1_000),
}
DRAIN_TIMES = ("stepped_at", "started_at", "ended_at", "stalled_at")


def drain_item(key: str, record: DrainRecord) -> dict[str, Any]:
    numbers = {name: getattr(record, name) for name in (*DRAIN_NUMBERS, *DRAIN_TIMES, "version")}
    return {
        "pk": {"S": key},
        "phase": {"S": record.phase},
        **{name: {"N": str(value)} for name, value in numbers.items()},
    }


def drain_from_item(item: Item, *, now: int) -> DrainRecord:
    """``CorruptRecord`` when a field is missing, mistyped or out of range."""
    key = item_key(item)
    numbers = {
        name: number(item, name, key, low=low, high=high) for name, (low, high) in DRAIN_NUMBERS.items()
    }
    times = {name: epoch(item, name, key, now=now) for name in DRAIN_TIMES}
    return DrainRecord(
        phase=text(item, "phase", key, max_chars=16),
        version=stored_version(item),
        **numbers,
        **times,
    )


# The failure groups held in a partial outage (``HELD#<DLQ URL>``, runtime/held.py): written and
# read by the re-driver's runs alone.

# A record holds at most this many groups (RECORD_MAX_JSON_CHARS bounds it: ~450 characters each).
MAX_HELD_GROUPS = 32
MAX_VERDICT_KEY_CHARS = 256


@dataclass(frozen=True)
class HeldGroup:
    """A failure group (a fingerprint, or a source's error: runtime/held.py) in an outage of its
    own: its messages wait in the DLQ while one canary at a time tests it. ``since``: when it was
    held; ``failed_canaries``: its canaries that failed since; ``canary_at``: when the next may go;
    ``canary`` (an identity, "" when none is out), ``sent_at``, ``verdict_at`` and
    ``verdict_key`` (the kit's, "" without it): the canary out; ``released_at``: when its canary
    passed (0: held), after which its messages are re-driven at once."""

    group: str
    since: int
    failed_canaries: int = 0
    canary_at: int = 0
    canary: str = ""
    sent_at: int = 0
    verdict_at: int = 0
    verdict_key: str = ""
    released_at: int = 0

    @property
    def held(self) -> bool:
        return not self.released_at


HELD_TIMES = ("since", "canary_at", "sent_at", "verdict_at", "released_at")


def held_item(key: str, groups: Sequence[HeldGroup]) -> dict[str, Any]:
    entries = {
        g.group: {
            **{name: getattr(g, name) for name in HELD_TIMES},
            "failed_canaries": g.failed_canaries,
            "canary": g.canary,
            "verdict_key": g.verdict_key,
        }
        for g in groups[:MAX_HELD_GROUPS]
    }
    return {"pk": {"S": key}, "groups": {"S": json.dumps(entries, sort_keys=True)}}


def held_from_item(item: Item, *, now: int) -> tuple[HeldGroup, ...]:
    """The held groups; ``CorruptRecord`` when a field is missing, mistyped or out of range
    (a time later than the longest wait ahead, a group name that is not a fingerprint's)."""
    key = item_key(item)
    entries = json_object(text(item, "groups", key, max_chars=RECORD_MAX_JSON_CHARS), "groups", key)
    if len(entries) > MAX_HELD_GROUPS:
        raise CorruptRecord(key, "groups", f"more than {MAX_HELD_GROUPS} groups")
    # A canary's verdict is due at most its window ahead; the next canary, much less.
    ahead = now + RECORD_MAX_CANARY_WINDOW_SECONDS + MAX_CLOCK_SKEW_SECONDS
    groups = []
    for group, entry in entries.items():
        name = f"groups.{group[:MAX_FINGERPRINT_CHARS]}"
        if len(group) > MAX_FINGERPRINT_CHARS or not FINGERPRINT_PATTERN.fullmatch(group):
            raise CorruptRecord(key, "groups", "a group that is not a fingerprint")
        if not isinstance(entry, Mapping):
            raise CorruptRecord(key, name, "not a JSON object")
        times = {t: integer(entry.get(t), f"{name}.{t}", key, low=0, high=ahead) for t in HELD_TIMES}
        groups.append(
            HeldGroup(
                group=group,
                failed_canaries=integer(
                    entry.get("failed_canaries"), f"{name}.failed_canaries", key, low=0, high=MAX_COUNT
                ),
                canary=checked_text(
                    entry.get("canary"), f"{name}.canary", key, max_chars=MAX_IDENTITY_CHARS, empty=True
                ),
                verdict_key=checked_text(
                    entry.get("verdict_key"),
                    f"{name}.verdict_key",
                    key,
                    max_chars=MAX_VERDICT_KEY_CHARS,
                    empty=True,
                ),
                **times,
            )
        )
    return tuple(groups)


def verdicts_from_item(item: Item) -> VerdictCounts:
    """The verdict counts; a counter never added is 0. ``CorruptRecord`` when one is mistyped or
    out of range."""
    key = item_key(item)
    counts = {
        name: number(item, name, key, low=0, high=RECORD_MAX_VERDICTS) if name in item else 0
        for name in VERDICT_COUNTERS
    }
    return VerdictCounts(**counts)


# The fate of each kind's corrupt record, as its report names it (docs/design.md, "Reading a
# record"); each kind is read through its port (``BreakerStore`` in core/breaker.py, the others in
# runtime/ports.py).
BREAKER_READ_AS_CLOSED = "read as CLOSED; its next transition overwrites it, guarded by what it holds"
CONTINUATION_TAKEN_OVER = "treated as absent: overwritten by this run's continuation"
GROUP_FROM_KEY = "honoured from its key alone (the operator's action on the fingerprint)"
IGNORED_MESSAGE_RECORD = "ignored: the message counts from its content identity; its next record replaces it"
IGNORED_FAILURE_RECORD = "ignored: the message is judged without this failure"
UNSHOWN_PARK_REASON = "ignored: the parking reason is shown as not recorded"
PAUSE_HONOURED = "read as a pause (only an operator writes one)"
EMPTY_HISTORY = "read as an empty history; the next run's summary replaces it"
ENTRY_SKIPPED = "entry skipped; the next run's summary drops it"
SWEEP_DUE = "treated as absent: the retention sweep is due now"
NO_VERDICTS = "read as no verdicts"
NO_DRAIN = "read as no drain: the next pace step starts it over"
NO_HELD_GROUPS = "read as no group held: the next failures of each group hold it again"


# A stored version attribute that is not a valid one, as it was read (None: there was none).
_ABSENT: dict[str, Any] | None = None


class StateTable(DynamoTable):
    """The state table: breakers, message and failure records, group marks, verdicts, the pause,
    the run history, the sweep's due time and the continuation slot. Message records expire
    ``ttl_seconds`` after they are written. The consumer kit's records are those of the re-driver
    of ``kit_scope`` (its DLQ URL) alone; without one, none is read."""

    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient,
        *,
        ttl_seconds: int,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        logger: logging.Logger | Any = None,
        metrics: Any = None,
        kit_scope: str | None = None,
    ) -> None:
        super().__init__(table_name, client, clock=clock, sleep=sleep, logger=logger, metrics=metrics)
        # The DLQ URL whose consumer kit's records (FAILURE#, VERDICTS#) are read and forgotten;
        # None: a re-driver whose consumers have no kit (dead letters of another kind) reads none.
        self.kit_scope = kit_scope
        # Breakers read from a record whose version was not valid: the raw version attribute, the
        # guard of the write that overwrites the record (an absent one is guarded as absent).
        self._unversioned: dict[str, dict[str, Any] | None] = {}
        self._lock = threading.Lock()
        self._ttl_seconds = ttl_seconds

    # The breaker records, written conditionally on the version read.

    def load_breaker(self, key: str) -> Breaker:
        """The stored breaker, or a fresh CLOSED one (version 0) when none was written yet. A
        corrupt record is read as CLOSED (never OPEN) and reported."""
        item = self._get_item(key)
        with self._lock:
            self._unversioned.pop(key, None)  # what was read before no longer guards a write
        if not item:
            return Breaker()
        try:
            return breaker_from_item(item, now=self._now())
        except CorruptRecord as corrupt:
            self._report(corrupt, BREAKER_READ_AS_CLOSED)
        try:
            return Breaker(version=stored_version(item))
        except CorruptRecord:
            with self._lock:
                self._unversioned[key] = item.get("version", _ABSENT)
            return Breaker()

    def save_breaker(self, key: str, breaker: Breaker, *, expected_version: int) -> bool:
        """Write the breaker if the stored version is still ``expected_version`` (or, over a
        record read without a valid version, if that version attribute is still as read).

        Returns False when another run changed it first (ConditionalCheckFailed).
        """
        condition = "attribute_not_exists(pk) OR version = :expected"
        values: dict[str, Any] = {":expected": {"N": str(expected_version)}}
        with self._lock:
            unversioned = key in self._unversioned and expected_version == 0
            raw = self._unversioned.get(key)
        if unversioned and raw is _ABSENT:
            condition, values = "attribute_exists(pk) AND attribute_not_exists(version)", {}
        elif unversioned:
            condition, values = "version = :stored", {":stored": raw}
        written = self._write_if(
            "PutItem (breaker)",
            self._client.put_item,
            Item=breaker_item(key, breaker),
            ConditionExpression=condition,
            **({"ExpressionAttributeValues": values} if values else {}),
        )
        if written is not None and unversioned:
            with self._lock:
                self._unversioned.pop(key, None)
        return written is not None

    # The pause record.

    def load_pause(self, key: str) -> Pause | None:
        """The pause an operator recorded, if any (a corrupt one still pauses)."""
        item = self._get_item(key)
        if not item:
            return None
        try:
            return pause_from_item(item, now=self._now())
        except CorruptRecord as corrupt:
            self._report(corrupt, PAUSE_HONOURED)
            return UNREADABLE_PAUSE

    def save_pause(self, key: str, pause: Pause) -> None:
        """Pause the re-driver: every run from now on honours it."""
        self._put_item(pause_item(key, pause))

    def clear_pause(self, key: str) -> None:
        """Resume: the next run re-drives again."""
        self._call("DeleteItem", self._client.delete_item, TableName=self.table_name, Key={"pk": {"S": key}})

    # The group records: one per fingerprint and action, parking winning over retrying.

    def load_group_marks(self, fingerprints: Iterable[str]) -> dict[str, GroupMark]:
        """An operator's retry or park mark of each of these fingerprints that has one (one
        BatchGetItem of both keys of each); when both are found, parking wins, and it is logged.
        A record with corrupt fields still counts by its key (and is reported)."""
        return self.load_failure_groups(fingerprints, None)[0]

    def load_failure_groups(
        self, fingerprints: Iterable[str], held_key: str | None
    ) -> tuple[dict[str, GroupMark], tuple[HeldGroup, ...]]:
        """The operator's marks of these fingerprints and, when ``held_key`` is given, the groups
        held in a partial outage (``load_held``), in one BatchGetItem."""
        wanted = sorted(set(fingerprints))
        keys = [group_record_key(action, fp) for fp in wanted for action in GroupAction]
        now = self._now()
        found: list[GroupMark] = []
        held: tuple[HeldGroup, ...] = ()
        for item in self._get_items([*keys, *([held_key] if held_key else [])]):
            key = item_key(item)
            if key == held_key:
                held = self._held(item)
                continue
            try:
                if not expired(item, key, now=now):
                    found.append(group_mark_from_item(item, now=now))
            except CorruptRecord as corrupt:
                self._report(corrupt, GROUP_FROM_KEY)
                found.append(group_mark_from_key(key))
        marks, both = prevailing(found)
        for fingerprint in both:
            self._log.warning(
                "failure group marked both for retry and for parking: parked",
                extra={"fingerprint": fingerprint},
            )
        return marks, held

    def save_group_mark(self, mark: GroupMark) -> None:
        """Record an operator's retry or park of a failure group; the other action's record of
        the fingerprint is deleted in the same transaction (a fingerprint is retried or parked)."""
        self._transact(
            {"Put": {"TableName": self.table_name, "Item": group_mark_item(mark)}},
            {"Delete": {"TableName": self.table_name, "Key": {"pk": {"S": mark.other_key}}}},
        )

    def clear_group_mark(self, fingerprint: str) -> None:
        """Forget an operator's mark of a failure group: both records, in one transaction."""
        keys = [{"pk": {"S": group_record_key(action, fingerprint)}} for action in GroupAction]
        self._transact(*({"Delete": {"TableName": self.table_name, "Key": key}} for key in keys))

    def _transact(self, *items: dict[str, Any]) -> None:
        self._call("TransactWriteItems", self._client.transact_write_items, TransactItems=list(items))

    # Message and failure records; message records expire ``ttl_seconds`` after they are written.

    def load_marks(self, subjects: Iterable[str]) -> dict[str, Mark]:
        """Marks recorded under these subjects (an identity, or a dead letter's trip; absent ones
        are omitted), by subject, expired ones ignored, with the failure the consumer kit recorded
        for a message that had no room for it (with a ``kit_scope`` only). A corrupt record is
        reported and ignored."""
        return self.read_marks(subjects).marks

    def load_trips(self, identities: Iterable[str]) -> dict[str, MarksRead]:
        """By identity, every message record of it: its own and each trip's, whatever request id
        made it, as the identity index lists their keys (a Query each, eventually consistent),
        then read as ``load_marks`` reads them (a BatchGetItem a hundred). ``AwsCallError`` when
        the index cannot be read whole (a table without it, a grant without Query on it)."""
        subjects = {identity: self._trip_subjects(identity) for identity in sorted(set(identities))}
        read = self.read_marks(subject for found in subjects.values() for subject in found)
        return {
            identity: MarksRead(
                {s: read.marks[s] for s in found if s in read.marks},
                {s: read.unreadable[s] for s in found if s in read.unreadable},
            )
            for identity, found in subjects.items()
        }

    def _trip_subjects(self, identity: str) -> list[str]:
        """The subjects of ``identity``'s message records, as the identity index lists them."""
        subjects: list[str] = []
        start: dict[str, Any] = {}
        for _ in range(MAX_INDEX_PAGES):
            page = self._call(
                "Query",
                self._client.query,
                TableName=self.table_name,
                IndexName=IDENTITY_INDEX,
                KeyConditionExpression="#identity = :identity",
                ExpressionAttributeNames={"#identity": IDENTITY_ATTRIBUTE},
                ExpressionAttributeValues={":identity": {"S": identity}},
                **start,
            )
            keys = [item_key(item) for item in page.get("Items", [])]
            # The index holds every item with the attribute: only this identity's message records.
            subjects += [
                subject_of(key)
                for key in keys
                if kind_of(key) is RecordKind.MESSAGE and is_trip_of(subject_of(key), identity)
            ]
            if not page.get("LastEvaluatedKey"):
                return subjects
            start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
        raise AwsCallError(
            f"DynamoDB Query of {self.table_name}'s identity index: over {MAX_INDEX_PAGES} pages"
        )

    def read_marks(self, subjects: Iterable[str]) -> MarksRead:
        """``load_marks``, with the records that failed parsing (reported) named too."""
        wanted = sorted(set(subjects))
        kit = {self._failure_key(s): s for s in wanted} if self.kit_scope is not None else {}
        keys = [RecordKind.MESSAGE.key(s) for s in wanted] + sorted(kit)
        now = self._now()
        marks: dict[str, Mark] = {}
        failures: dict[str, Failure] = {}
        unreadable: dict[str, CorruptRecord] = {}
        for item in self._get_items(keys):
            try:
                key = item_key(item)
                if expired(item, key, now=now):
                    continue
                if key in kit:
                    failures[kit[key]] = failure_from_item(item, now=now)
                else:
                    marks[subject_of(key)] = mark_from_item(item, now=now)
            except CorruptRecord as corrupt:
                of_failure = corrupt.kind is RecordKind.FAILURE
                self._report(corrupt, IGNORED_FAILURE_RECORD if of_failure else IGNORED_MESSAGE_RECORD)
                unreadable[kit.get(corrupt.key, subject_of(corrupt.key))] = corrupt
        for subject, failure in failures.items():
            mark = marks.get(subject) or Mark(identity=subject, first_failed_at=failure.at)
            marks[subject] = replace(mark, failure=failure)
        return MarksRead(marks, unreadable)

    def _failure_key(self, identity: str) -> str:
        assert self.kit_scope is not None, "the kit's records are read with a kit scope"
        return kit_record_key(RecordKind.FAILURE, self.kit_scope, identity)

    def load_park_reasons(self, identities: Iterable[str]) -> dict[str, ParkReason]:
        """The parking reasons recorded for these identities (one BatchGetItem a hundred; none: no
        call); a missing, expired or unparked record gives none, a corrupt one is reported and
        gives none."""
        keys = [RecordKind.MESSAGE.key(identity) for identity in sorted(set(identities))]
        now = self._now()
        reasons: dict[str, ParkReason] = {}
        for item in self._get_items(keys):
            try:
                reason = park_reason_from_item(item, now=now)
            except CorruptRecord as corrupt:
                self._report(corrupt, UNSHOWN_PARK_REASON)
                continue
            if reason is not None:
                reasons[subject_of(item_key(item))] = reason
        return reasons

    def save_records(self, records: Sequence[MessageRecord]) -> None:
        """Write message records with BatchWriteItem, retrying unprocessed items (none: no call)."""
        now = self._now()
        items = [{"PutRequest": {"Item": message_item(record, now, self._ttl_seconds)}} for record in records]
        self._write_batches(items)

    def forget_marks(self, identities: Iterable[str]) -> None:
        """Delete the message records and the consumer kit's failure records of these identities
        (BatchWriteItem, unprocessed ones retried; none: no call): a message with no room for a
        mark then starts again at count 0, with no failure from before (which could park it). The
        kit's failure records with a ``kit_scope`` only (a DLQ of another kind has none)."""
        wanted = sorted(set(identities))
        kit = [self._failure_key(i) for i in wanted] if self.kit_scope is not None else []
        keys = [key for key in [*(RecordKind.MESSAGE.key(i) for i in wanted), *kit] if storable(key)]
        self._write_batches([{"DeleteRequest": {"Key": {"pk": {"S": key}}}} for key in keys])

    # The verdict records the consumer kit adds to (the re-driver only reads them).

    def load_verdicts(self, verdict_key: str) -> VerdictCounts:
        """The consumer kit's verdicts reported under ``verdict_key`` (zeros while there are none,
        or when the record is corrupt: a forged count never opens a breaker). Without a
        ``kit_scope`` there are none, and nothing is read."""
        if self.kit_scope is None:
            return VerdictCounts()
        return self._verdicts(
            self._get_item(kit_record_key(RecordKind.VERDICTS, self.kit_scope, verdict_key))
        )

    def _verdicts(self, item: Item | None) -> VerdictCounts:
        if not item:
            return VerdictCounts()
        try:
            return verdicts_from_item(item)
        except CorruptRecord as corrupt:
            self._report(corrupt, NO_VERDICTS)
            return VerdictCounts()

    # The continuation slot, offered and taken with conditional writes.

    def offer_continuation(
        self, key: str, token: str, *, stale_after: int, holder: str | None = None
    ) -> bool:
        """Take the one continuation slot of ``key`` for ``token``; False while another run's
        continuation is pending or runs (its offer or hold has not expired: then it was lost). The
        run that holds the slot (``holder``) hands it to its own continuation. A corrupt slot (no
        token, times missing, mistyped or from the future) is taken."""
        now = self._now()
        condition = (
            "attribute_not_exists(pk) OR expires_at < :now OR offered_at > :future"
            " OR NOT attribute_type(expires_at, :number) OR NOT attribute_type(offered_at, :number)"
            " OR NOT attribute_type(#token, :string)"
        )
        values = {
            ":now": {"N": str(now)},
            ":future": {"N": str(now + MAX_CLOCK_SKEW_SECONDS)},
            ":number": {"S": "N"},
            ":string": {"S": "S"},
        }
        if holder is not None:
            condition += " OR #token = :holder"
            values[":holder"] = {"S": holder}
        written = self._write_if(
            "PutItem (continuation)",
            self._client.put_item,
            Item=continuation_item(key, token, now=now, stale_after=stale_after),
            ConditionExpression=condition,
            ExpressionAttributeNames={"#token": "token"},
            ExpressionAttributeValues=values,
            ReturnValues="ALL_OLD",
        )
        if written is None:
            return False
        if written.get("Attributes"):
            try:
                check_continuation(written["Attributes"], now=now)
            except CorruptRecord as corrupt:
                self._report(corrupt, CONTINUATION_TAKEN_OVER)
        return True

    def take_continuation(self, key: str, token: str, *, hold_seconds: int) -> bool:
        """The run started with ``token`` holds the slot for ``hold_seconds`` (its Lambda timeout
        and the margin): no other run may offer a continuation while it runs. False for a
        continuation already taken or superseded."""
        expires_at = self._now() + hold_seconds
        return self._hold(
            RecordKind.CONTINUATION.key(key), token, None, "PutItem (continuation)", expires_at=expires_at
        )

    def _hold(self, key: str, token: str, successor: str | None, operation: str, *, expires_at: int) -> bool:
        """A slot's item rewritten for the run that takes it (``held_at``: a second take of the same
        token is refused) or for its successor (offered, not yet held), if ``token`` still has it."""
        now = self._now()
        item = slot_item(key, successor or token, now=now, expires_at=expires_at)
        condition = "#token = :token"
        if successor is None:
            item["held_at"] = {"N": str(now)}
            condition += " AND attribute_not_exists(held_at)"
        written = self._write_if(
            operation,
            self._client.put_item,
            Item=item,
            ConditionExpression=condition,
            ExpressionAttributeNames={"#token": "token"},
            ExpressionAttributeValues={":token": {"S": token}},
        )
        return written is not None

    def release_continuation(self, key: str, token: str) -> None:
        """Free the slot if ``token`` still holds it (its run does not go on, or its start failed)."""
        self._release(RecordKind.CONTINUATION.key(key), token, "DeleteItem (continuation)")

    def _release(self, key: str, token: str, operation: str) -> None:
        """Delete a slot's item if ``token`` still holds it."""
        self._write_if(
            operation,
            self._client.delete_item,
            Key={"pk": {"S": key}},
            ConditionExpression="#token = :token",
            ExpressionAttributeNames={"#token": "token"},
            ExpressionAttributeValues={":token": {"S": token}},
        )

    # A large drain's worker leases (``WORKER#<DLQ URL>#<n>``): offered by a fan-out, held by the
    # worker's run, released at its end; a lease not held or freed in time expires.

    def offer_worker(self, key: str, token: str, *, expires_at: int) -> bool:
        """Offer the lease ``key`` to ``token``; False while another worker's offer or run holds it."""
        now = self._now()
        return (
            self._write_if(
                "PutItem (worker lease)",
                self._client.put_item,
                Item=slot_item(key, token, now=now, expires_at=expires_at),
                ConditionExpression=(
                    "attribute_not_exists(pk) OR expires_at < :now OR NOT attribute_type(expires_at, :number)"
                ),
                ExpressionAttributeValues={":now": {"N": str(now)}, ":number": {"S": "N"}},
            )
            is not None
        )

    def hold_worker(self, key: str, token: str, *, expires_at: int, successor: str | None = None) -> bool:
        """The run started with ``token`` holds the lease offered to it until ``expires_at``; with
        ``successor``, the run that holds it hands it to its continuation. False when the lease is
        not ``token``'s, or (taking it) a run holds it already."""
        return self._hold(key, token, successor, "PutItem (worker lease)", expires_at=expires_at)

    def release_worker(self, key: str, token: str) -> None:
        """Free the lease if ``token`` still holds it."""
        self._release(key, token, "DeleteItem (worker lease)")

    # A large drain's shared state.

    def load_drain(self, key: str) -> DrainRecord | None:
        item = self._get_item(key)
        return self._drain(item) if item else None

    def save_drain(self, key: str, record: DrainRecord, *, expected_version: int | None) -> bool:
        """Write the drain's state if its version is still ``expected_version``; None: over what is
        there (nothing, or a record that could not be read)."""
        version = expected_version or 0
        condition: dict[str, Any] = {}
        if expected_version is not None:
            condition = {
                "ConditionExpression": "attribute_not_exists(pk) OR version = :expected",
                "ExpressionAttributeValues": {":expected": {"N": str(expected_version)}},
            }
        written = self._write_if(
            "PutItem (drain)",
            self._client.put_item,
            Item=drain_item(key, replace(record, version=version + 1)),
            **condition,
        )
        return written is not None

    def load_fleet_view(
        self, breaker_key: str, pause_key: str, drain_key: str, verdict_key: str | None = None
    ) -> FleetView:
        """What a worker checks before each batch, in one BatchGetItem: the breaker, the pause,
        the drain's state and, with ``verdict_key``, the consumer kit's verdicts of its re-drives
        (as ``load_verdicts`` reads them)."""
        keys = [breaker_key, pause_key, drain_key]
        verdicts_at = (
            kit_record_key(RecordKind.VERDICTS, self.kit_scope, verdict_key)
            if verdict_key is not None and self.kit_scope is not None
            else None
        )
        items = {
            item_key(item): item for item in self._get_items(keys + ([verdicts_at] if verdicts_at else []))
        }
        now = self._now()
        breaker = Breaker()
        if breaker_key in items:
            try:
                breaker = breaker_from_item(items[breaker_key], now=now)
            except CorruptRecord as corrupt:
                self._report(corrupt, BREAKER_READ_AS_CLOSED)
        drain = self._drain(items[drain_key]) if drain_key in items else None
        verdicts = None if verdicts_at is None else self._verdicts(items.get(verdicts_at))
        return FleetView(breaker=breaker, paused=pause_key in items, drain=drain, verdicts=verdicts)

    def _drain(self, item: Item) -> DrainRecord | None:
        try:
            return drain_from_item(item, now=self._now())
        except CorruptRecord as corrupt:
            self._report(corrupt, NO_DRAIN)
            return None

    # The failure groups held in a partial outage (runtime/held.py).

    def load_held(self, key: str) -> tuple[HeldGroup, ...]:
        """The held groups (none: none recorded, or a corrupt record)."""
        item = self._get_item(key)
        return self._held(item) if item else ()

    def _held(self, item: Item) -> tuple[HeldGroup, ...]:
        try:
            return held_from_item(item, now=self._now())
        except CorruptRecord as corrupt:
            self._report(corrupt, NO_HELD_GROUPS)
            return ()

    def save_held(self, key: str, groups: Sequence[HeldGroup]) -> None:
        """Record the held groups (unconditional: runs rarely overlap, and an update lost to an
        overlap costs one more canary or one run's delay of a release, nothing more)."""
        self._put_item(held_item(key, groups))

    # The retention sweep's due time.

    def load_sweep_due(self, key: str) -> int:
        """When the next retention sweep is due (0: now; none was recorded, or a corrupt one)."""
        item = self._get_item(key)
        if not item:
            return 0
        try:
            return sweep_due_from_item(item, now=self._now())
        except CorruptRecord as corrupt:
            self._report(corrupt, SWEEP_DUE)
            return 0

    def save_sweep_due(self, key: str, due_at: int) -> None:
        """Record when the next retention sweep is due."""
        self._put_item(sweep_item(key, due_at))

    # The run history item: the last runs' summaries, newest first.

    def record_run(self, key: str, summary: Mapping[str, object], keep: int = RUN_HISTORY_LENGTH) -> None:
        """Put a run's summary first in the history item ``key`` and keep the ``keep`` newest
        (unreadable entries are dropped).

        GetItem, then PutItem, unconditional: the runs that write history (the chain's and the
        ticks'; a large drain's workers write none) rarely overlap, and an update lost to an overlap
        loses one line of history, nothing more.
        """
        lines = self._history(key).lines
        self._put_item(runs_item(key, [run_line(summary), *lines][: max(keep, 1)]))

    def load_runs(self, key: str) -> list[dict[str, Any]]:
        """The recorded run summaries, newest first (an entry that is not a JSON object is skipped)."""
        return self._history(key).summaries

    def _history(self, key: str) -> RunHistory:
        item = self._get_item(key)
        if not item:
            return RunHistory()
        try:
            history = runs_from_item(item)
        except CorruptRecord as corrupt:
            self._report(corrupt, EMPTY_HISTORY)
            return RunHistory()
        for skipped in history.skipped:
            self._report(skipped, ENTRY_SKIPPED)
        return history
