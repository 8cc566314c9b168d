"""The operator's records: the pause (``PAUSE#<DLQ URL>``), failure group marks
(``RETRY#``/``PARK#<fingerprint>``), and the run history the operator's tool reads
(``RUNS#<DLQ URL>``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqs_redriver.protocol.keys import RecordKind, kind_of, subject_of
from sqs_redriver.protocol.limits import RECORD_MAX_RUNS, RECORD_MAX_TEXT_CHARS
from sqs_redriver.runtime.adapters.records.fields import (
    CorruptRecord,
    Item,
    element,
    epoch,
    item_key,
    json_object,
    text,
    values,
)
from sqs_redriver.runtime.model.groups import GroupAction, GroupMark
from sqs_redriver.runtime.model.pause import Pause

# What an unreadable pause is read as: still a pause (see docs/decisions.md).
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
