"""The breaker record (``BREAKER#<source queue URL>``) <-> ``Breaker``."""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.limits import (
    RECORD_MAX_BREAKER_COUNT,
    RECORD_MAX_CANARIES,
    RECORD_MAX_CANARY_WINDOW_SECONDS,
    RECORD_MAX_NAME_CHARS,
    RECORD_MAX_VERSION,
)
from sqs_redriver.runtime.adapters.records.fields import (
    CorruptRecord,
    Item,
    checked_text,
    element,
    epoch,
    item_key,
    number,
    text,
    values,
)
from sqs_redriver.runtime.decide.breaker import Breaker, Canary
from sqs_redriver.runtime.model.breaker_state import State
from sqs_redriver.runtime.model.evidence import Evidence


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
