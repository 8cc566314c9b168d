"""The target's own circuit breaker, honoured. A target that guards its work with a Powertools
circuit breaker (``aws_lambda_powertools.utilities.circuit_breaker``, DynamoDB persistence) names it
on its source (``DeadLetterSource.breaker``); before re-driving to it, a run reads the breaker's
record and takes its gate (``ConsumerGate``) on top of the re-driver's own breaker:

- SEND: CLOSED, or no record: the re-driver's own breaker decides, as without a consumer breaker.
- HOLD: OPEN, its recovery timeout not over: nothing, not even canaries (the consumer knows it is
  down, and would refuse them).
- PROBE: OPEN past its recovery timeout, or HALF_OPEN: the consumer's breaker lets a probe through,
  so the re-driver sends only its canaries, never a batch.

The rule (``gate``) is pure; ``gate_of_item`` parses the untrusted DynamoDB item into it; the
``ConsumerBreakerReader`` reads the item with one strongly consistent GetItem per source and run.

Why not Powertools' ``CircuitBreakerDynamoDBPersistence.get_state``, which reads the same record:
it reads eventually consistent; when the read fails, or the record does not parse (an unknown
state, an ``opened_at`` ``int()`` refuses), it answers a synthesized CLOSED that the caller cannot
tell from a real one; its default ``static_pk_value`` comes from *this* function's name, not the
target's; and it registers a user-agent hook on the client it is given. The key layout read here is
Powertools' (``_get_key``), and tests/integration/test_consumer_breaker.py drives the real utility
on the same table to hold the two together."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

if TYPE_CHECKING:
    import logging
    from collections.abc import Mapping

    from mypy_boto3_dynamodb import DynamoDBClient

    from sqs_redriver.protocol.sources import ConsumerBreaker


class ConsumerGate(StrEnum):
    """What the target's own breaker lets the re-driver send it."""

    SEND = "send"  # what the re-driver's own breaker allows
    HOLD = "hold"  # nothing at all
    PROBE = "probe"  # canaries only, never a batch


@dataclass(frozen=True)
class GateReading:
    """A gate and why, for the run's log line."""

    gate: ConsumerGate
    reason: str


CLOSED, OPEN, HALF_OPEN = "CLOSED", "OPEN", "HALF_OPEN"  # Powertools' CircuitState values


# Powertools stamps opened_at with its own clock; Lambda clocks agree within far less. An opened_at
# further ahead than this was not written by a breaker that opened (a damaged value, milliseconds).
MAX_CLOCK_SKEW_SECONDS = 60


# No epoch second is larger; a larger number is not read as one (nor turned into a huge int).
MAX_EPOCH_SECONDS = 2**63


def gate(state: object, opened_at: object, *, recovery_timeout_seconds: int, now: int) -> GateReading:
    """The gate of a breaker whose record holds ``state`` and ``opened_at`` (untrusted: any value,
    ``None`` for an attribute the record lacks), at ``now`` (epoch seconds). Never raises.

    PROBE exists because a Powertools breaker leaves OPEN only when a call arrives after its
    recovery timeout (that call becomes the HALF_OPEN probe, and its successes close the circuit):
    a re-driver that sent nothing while OPEN would keep a consumer with no other traffic OPEN for
    ever. So past the timeout the canaries go; while it is HALF_OPEN they keep the probe going.

    An untrusted record is read so that it can neither flood a consumer that said it is down nor
    stop re-drives for good:

    - a state that is not CLOSED, OPEN or HALF_OPEN (missing, another type, another word): SEND.
      Powertools' own read of such a record fails, and it fails open: the consumer runs every call,
      and the re-driver's own breaker still judges what comes back.
    - OPEN with an ``opened_at`` that is missing, not a finite number, or more than
      ``MAX_CLOCK_SKEW_SECONDS`` ahead of ``now``: PROBE. The record says the consumer is down but
      not since when, so the recovery timeout cannot be counted: HOLD could last for ever (Powertools
      always writes opened_at with OPEN; without one its breaker never probes), SEND could flood it.
      Canaries are bounded and show whether it recovered.

    Time only moves a reading forward (HOLD, then PROBE), for every record Powertools can write; an
    ``opened_at`` first seen beyond the allowed skew is PROBE until the clock nears it, then HOLD
    until its recovery timeout, as the consumer's breaker itself would."""
    known = state if isinstance(state, str) else None
    if known == CLOSED:
        return GateReading(ConsumerGate.SEND, "CLOSED")
    if known == HALF_OPEN:
        return GateReading(ConsumerGate.PROBE, "HALF_OPEN: the consumer's breaker is probing its recovery")
    if known != OPEN:
        return GateReading(
            ConsumerGate.SEND,
            f"state {_shown(state)} is not {CLOSED}, {OPEN} or {HALF_OPEN}: the consumer's breaker "
            "fails open on such a record, so the re-driver's own breaker decides",
        )
    since = _epoch_seconds(opened_at)
    if since is None or since > now + MAX_CLOCK_SKEW_SECONDS:
        problem = "missing" if opened_at is None else "not a time" if since is None else "in the future"
        shown = _shown(opened_at) if since is None else since
        return GateReading(
            ConsumerGate.PROBE, f"OPEN, opened_at {shown} {problem}: since when is unknown, so canaries only"
        )
    probe_from = since + recovery_timeout_seconds
    if now < probe_from:
        return GateReading(
            ConsumerGate.HOLD,
            f"OPEN since {since}: the consumer's breaker lets no call through before {probe_from} "
            f"({probe_from - now} s)",
        )
    return GateReading(
        ConsumerGate.PROBE,
        f"OPEN since {since}, recovery timeout over at {probe_from}: "
        "the consumer's breaker lets a probe through",
    )


def gate_of_item(item: Mapping[str, Any] | None, breaker: ConsumerBreaker, *, now: int) -> GateReading:
    """The gate of a GetItem's ``Item`` (DynamoDB's typed attribute values; ``None``: no record)."""
    if item is None:
        return GateReading(ConsumerGate.SEND, "no record: the consumer's breaker has not opened")
    return gate(
        _string(item.get(breaker.state_attr)),
        _number(item.get(breaker.opened_at_attr)),
        recovery_timeout_seconds=breaker.recovery_timeout_seconds,
        now=now,
    )


class ConsumerBreakerReader:
    """Reads a target's breaker record: one GetItem, strongly consistent (a run reads each source's
    once, and an exact state is worth its read unit).

    A read that fails (access denied, throttled, no such table, a key the table does not have) is
    SEND with the reason ``breaker unreadable: <error>``, and a warning: a breaker the re-driver
    cannot read must not stop re-drives for ever, nor pass silently for a CLOSED one."""

    def __init__(self, client: DynamoDBClient | Any, logger: logging.Logger | Any) -> None:
        self._client = client
        self._log = logger

    def read(self, breaker: ConsumerBreaker, now: int) -> GateReading:
        try:
            response = self._client.get_item(
                TableName=breaker.table, Key=_record_key(breaker), ConsistentRead=True
            )
        except ClientError as exc:
            error = exc.response.get("Error", {})
            return self._unreadable(breaker, f"{error.get('Code', 'error')}: {error.get('Message', '')}")
        except BotoCoreError as exc:
            return self._unreadable(breaker, f"{type(exc).__name__}: {exc}")
        item = response.get("Item")
        if item is not None and not isinstance(item, dict):
            return self._unreadable(breaker, "GetItem's Item is not a map")
        return gate_of_item(item, breaker, now=now)

    def _unreadable(self, breaker: ConsumerBreaker, error: str) -> GateReading:
        error = error[:300]
        self._log.warning(
            "consumer breaker unreadable: its gate is SEND, the re-driver's own breaker decides",
            extra={"table": breaker.table, "circuit": breaker.name, "error": error},
        )
        return GateReading(ConsumerGate.SEND, f"breaker unreadable: {error}")


def _record_key(breaker: ConsumerBreaker) -> dict[str, Any]:
    """The record's key, laid out as Powertools lays it out: the circuit's name is the partition key
    or, with a sort key, the sort key under the partition ``static_pk_value``."""
    if breaker.sort_key_attr:
        return {breaker.key_attr: {"S": breaker.static_pk_value}, breaker.sort_key_attr: {"S": breaker.name}}
    return {breaker.key_attr: {"S": breaker.name}}


def _epoch_seconds(value: object) -> int | None:
    """A finite number as whole seconds, truncated as Powertools' ``int()`` truncates it."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    number: int | float | Decimal = value
    finite = number.is_finite() if isinstance(number, Decimal) else math.isfinite(number)
    return int(number) if finite and -MAX_EPOCH_SECONDS <= number <= MAX_EPOCH_SECONDS else None


def _string(attribute: object) -> object:
    """A string attribute's text; any other attribute as it is (the gate names it), or None."""
    if isinstance(attribute, dict) and set(attribute) == {"S"}:
        return attribute["S"]
    return attribute


def _number(attribute: object) -> object:
    """A number attribute's value; any other attribute as it is (the gate names it), or None."""
    if isinstance(attribute, dict) and set(attribute) == {"N"} and isinstance(attribute["N"], str):
        try:
            return Decimal(attribute["N"])
        except InvalidOperation:
            return attribute["N"]
    return attribute


def _shown(value: object) -> str:
    """An untrusted value, short, for a log line."""
    return repr(value)[:60]
