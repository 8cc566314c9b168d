"""The re-driver's own bookkeeping: when the retention sweep is due (``SWEEP#<DLQ URL>``), the
pending continuation (``CONTINUATION#<DLQ URL>``), and the consumer kit's verdict counts of a
run's re-drives (``VERDICTS#<verdict key>``)."""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.protocol.keys import continuation_record_key
from sqs_redriver.protocol.limits import RECORD_MAX_SWEEP_AHEAD_SECONDS, RECORD_MAX_VERDICTS
from sqs_redriver.runtime.adapters.records.fields import Item, epoch, item_key, number, text

VERDICT_COUNTERS = ("ok", "transient", "terminal")


def sweep_item(key: str, due_at: int) -> dict[str, Any]:
    return {"pk": {"S": key}, "due_at": {"N": str(due_at)}}


def sweep_due_from_item(item: Item, *, now: int) -> int:
    """When the next sweep is due; ``CorruptRecord`` when missing, mistyped, or further ahead than
    any sweep interval (a forged time would hold the retention guard off)."""
    return epoch(item, "due_at", item_key(item), now=now, ahead=RECORD_MAX_SWEEP_AHEAD_SECONDS)


def continuation_item(dlq_url: str, token: str, *, now: int, stale_after: int) -> dict[str, Any]:
    return {
        "pk": {"S": continuation_record_key(dlq_url)},
        "token": {"S": token},
        "offered_at": {"N": str(now)},
        "expires_at": {"N": str(now + stale_after)},
    }


def check_continuation(item: Item, *, now: int) -> None:
    """``CorruptRecord`` unless the item is a continuation an offer wrote (a token, and an offer
    time that is not from the future)."""
    key = item_key(item)
    text(item, "token", key)
    epoch(item, "offered_at", key, now=now)


def verdicts_from_item(item: Item) -> VerdictCounts:
    """The verdict counts; a counter never added is 0. ``CorruptRecord`` when one is mistyped or
    out of range."""
    key = item_key(item)
    counts = {
        name: number(item, name, key, low=0, high=RECORD_MAX_VERDICTS) if name in item else 0
        for name in VERDICT_COUNTERS
    }
    return VerdictCounts(**counts)
