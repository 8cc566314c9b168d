"""Message records (``MSG#<identity>``) <-> ``Mark``, and the consumer kit's failure records
(``FAILURE#<identity>``) -> ``Failure``: the history of messages with no room for a mark."""

from __future__ import annotations

import json
from typing import Any

from sqs_redriver.protocol.failure import Failure
from sqs_redriver.protocol.keys import message_record_key, subject_of
from sqs_redriver.protocol.limits import (
    MAX_CLOCK_SKEW_SECONDS,
    MAX_COUNT,
    MAX_IDENTITY_CHARS,
    MAX_MARK_HISTORY,
    RECORD_MAX_JSON_CHARS,
)
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.wire import Rejection
from sqs_redriver.runtime.adapters.ports import MessageRecord
from sqs_redriver.runtime.adapters.records.fields import (
    CorruptRecord,
    Item,
    element,
    epoch,
    integer,
    item_key,
    json_object,
    number,
    text,
    values,
)


def message_item(record: MessageRecord, now: int, ttl_seconds: int) -> dict[str, Any]:
    """The item of one message record, written at ``now``, expiring ``ttl_seconds`` later."""
    mark = record.mark
    item: dict[str, Any] = {
        "pk": {"S": message_record_key(mark.identity)},
        "identity": {"S": mark.identity},
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
    identity is not its key's, or a count or time is missing, mistyped, out of range or forged."""
    key = item_key(item)
    identity = text(item, "identity", key, max_chars=MAX_IDENTITY_CHARS)
    if identity != subject_of(key):
        raise CorruptRecord(key, "identity", "not the identity of its key")
    times = values(item, "redriven_at", key, max_items=MAX_MARK_HISTORY)
    return Mark(
        identity=identity,
        count=number(item, "redrive_count", key, low=0, high=MAX_COUNT),
        first_failed_at=epoch(item, "first_failed_at", key, now=now),
        redriven_at=tuple(_time(element(value, "N", "redriven_at", key), key, now) for value in times),
        suspected=_optional_count(item, "suspected", key),
        processed_meanwhile=_optional_count(item, "processed_meanwhile", key),
    )


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
