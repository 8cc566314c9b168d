"""The gate a target's own Powertools breaker sets on re-drives (runtime/consumer_breaker.py): the
pure rule over any record, and the reading of a DynamoDB item into it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.protocol.sources import ConsumerBreaker
from sqs_redriver.runtime.consumer_breaker import (
    MAX_CLOCK_SKEW_SECONDS,
    ConsumerGate,
    GateReading,
    gate,
    gate_of_item,
)

STATES = ("CLOSED", "OPEN", "HALF_OPEN")
SEND, HOLD, PROBE = ConsumerGate.SEND, ConsumerGate.HOLD, ConsumerGate.PROBE

# Whatever a damaged record, another writer or a misnamed attribute could put where a value is read.
untrusted = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.decimals(),
    st.just(Decimal("sNaN")),
    st.text(max_size=12),
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.sampled_from(["S", "N", "BOOL"]), st.text(max_size=4), max_size=2),
)
states = st.one_of(st.sampled_from(STATES), untrusted)
not_a_state = untrusted.filter(lambda value: value not in STATES)
timeouts = st.integers(min_value=1, max_value=86_400)
times = st.integers(min_value=0, max_value=2**40)
# Not a time: missing, not a number, not finite, or not an epoch second.
not_a_time = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.sampled_from([Decimal("NaN"), Decimal("sNaN"), Decimal("Infinity"), float("nan"), float("-inf")]),
    st.integers(min_value=2**63 + 1),
)


def as_stored(seconds: int, form: int) -> object:
    """The same time as an int, a Decimal (what boto3 reads an N as) or a float."""
    return [seconds, Decimal(seconds), float(seconds)][form]


def at(state: object, opened_at: object, now: int, timeout: int = 30) -> GateReading:
    return gate(state, opened_at, recovery_timeout_seconds=timeout, now=now)


@given(states, untrusted, timeouts, times)
def test_any_record_gets_a_gate_and_a_reason_never_an_error(
    state: object, opened_at: object, timeout: int, now: int
) -> None:
    reading = at(state, opened_at, now, timeout)

    assert reading.gate in set(ConsumerGate)
    assert reading.reason.strip()


@given(untrusted, timeouts, times)
def test_a_closed_breaker_always_lets_the_redriver_send(opened_at: object, timeout: int, now: int) -> None:
    assert at("CLOSED", opened_at, now, timeout).gate is SEND


@given(untrusted, timeouts, times)
def test_a_half_open_breaker_always_gets_canaries_only(opened_at: object, timeout: int, now: int) -> None:
    assert at("HALF_OPEN", opened_at, now, timeout).gate is PROBE


@given(timeouts, times, st.data(), st.integers(0, 2))
def test_an_open_breaker_strictly_before_its_recovery_timeout_holds_everything(
    timeout: int, now: int, data: st.DataObject, form: int
) -> None:
    opened_at = data.draw(st.integers(min_value=now - timeout + 1, max_value=now + MAX_CLOCK_SKEW_SECONDS))

    reading = at("OPEN", as_stored(opened_at, form), now, timeout)

    assert reading.gate is HOLD
    assert str(opened_at + timeout) in reading.reason


@given(timeouts, times, st.integers(min_value=0, max_value=2**40), st.integers(0, 2))
def test_an_open_breaker_from_its_recovery_timeout_on_gets_canaries_only(
    timeout: int, now: int, overdue: int, form: int
) -> None:
    opened_at = now - timeout - overdue

    assert at("OPEN", as_stored(opened_at, form), now, timeout).gate is PROBE


@given(not_a_state, untrusted, timeouts, times)
def test_a_state_powertools_does_not_write_leaves_the_decision_to_the_redrivers_own_breaker(
    state: object, opened_at: object, timeout: int, now: int
) -> None:
    reading = at(state, opened_at, now, timeout)

    assert reading.gate is SEND
    assert "is not CLOSED, OPEN or HALF_OPEN" in reading.reason


@given(not_a_time, timeouts, times)
def test_an_open_breaker_without_a_usable_opened_at_gets_canaries_only(
    opened_at: object, timeout: int, now: int
) -> None:
    assert at("OPEN", opened_at, now, timeout).gate is PROBE


@given(timeouts, times, st.integers(min_value=MAX_CLOCK_SKEW_SECONDS + 1, max_value=2**62))
def test_an_opened_at_further_ahead_than_clock_skew_gets_canaries_only(
    timeout: int, now: int, ahead: int
) -> None:
    reading = at("OPEN", now + ahead, now, timeout)

    assert reading.gate is PROBE
    assert "in the future" in reading.reason


@st.composite
def records_as_powertools_writes_them(draw: st.DrawFn) -> tuple[object, object, int, int, int]:
    """A record read at ``first``, then at ``later``: an opened_at at most the clock skew ahead of
    ``first`` (Powertools stamps it with its own clock; mostly within a few recovery timeouts of
    ``first``, where the gate changes), or a value that is not a time."""
    first, timeout = draw(times), draw(timeouts)
    span = 3 * timeout + MAX_CLOCK_SKEW_SECONDS
    later = first + draw(st.one_of(st.integers(0, span), st.integers(min_value=0, max_value=2**33)))
    state = draw(st.one_of(st.sampled_from(STATES), st.just("OPEN"), untrusted))
    seconds = first + draw(st.one_of(st.integers(-span, MAX_CLOCK_SKEW_SECONDS), st.integers(max_value=0)))
    opened_at = draw(st.one_of(st.just(seconds), st.just(Decimal(seconds)), not_a_time))
    return state, opened_at, timeout, first, later


@given(records_as_powertools_writes_them())
def test_time_only_moves_a_record_from_hold_to_probe_never_back(
    record: tuple[object, object, int, int, int],
) -> None:
    state, opened_at, timeout, first, later = record

    before, after = at(state, opened_at, first, timeout).gate, at(state, opened_at, later, timeout).gate

    assert before is after or (before, after) == (HOLD, PROBE)


def test_an_opened_at_first_seen_far_ahead_is_held_once_the_clock_nears_it() -> None:
    # The one case time moves back to HOLD: the consumer's breaker then refuses calls too.
    opened_at = 1_000_000

    assert at("OPEN", opened_at, opened_at - MAX_CLOCK_SKEW_SECONDS - 1).gate is PROBE
    assert at("OPEN", opened_at, opened_at - MAX_CLOCK_SKEW_SECONDS).gate is HOLD


def test_a_fractional_opened_at_is_truncated_as_powertools_truncates_it() -> None:
    assert at("OPEN", Decimal("100.9"), 129, timeout=30).gate is HOLD
    assert at("OPEN", Decimal("100.9"), 130, timeout=30).gate is PROBE


# The reading of a GetItem's item.

BREAKER = ConsumerBreaker(table="CircuitBreakerState", name="payments", recovery_timeout_seconds=30)


def item(**attributes: Any) -> dict[str, Any]:
    return {"id": {"S": "payments"}, **attributes}


def test_no_record_lets_the_redriver_send() -> None:
    reading = gate_of_item(None, BREAKER, now=1_000)

    assert reading.gate is SEND
    assert reading.reason.startswith("no record")


@given(st.sampled_from(STATES), st.integers(min_value=0, max_value=2**40), times)
def test_an_item_as_powertools_stores_it_reads_as_its_values(state: str, opened_at: int, now: int) -> None:
    stored = item(state={"S": state}, opened_at={"N": str(opened_at)}, failure_count={"N": "5"})

    assert gate_of_item(stored, BREAKER, now=now) == at(state, opened_at, now)


def test_the_attribute_names_the_breaker_is_configured_with_are_read() -> None:
    renamed = ConsumerBreaker(table="t", name="payments", state_attr="circuit", opened_at_attr="since")
    stored = item(circuit={"S": "OPEN"}, since={"N": "1000"}, state={"S": "CLOSED"})

    assert gate_of_item(stored, renamed, now=1_010).gate is HOLD


def test_a_state_stored_as_another_type_is_named_in_the_reason() -> None:
    reading = gate_of_item(item(state={"N": "1"}), BREAKER, now=1_000)

    assert reading.gate is SEND
    assert "{'N': '1'}" in reading.reason


def test_an_item_without_a_state_is_not_taken_for_open() -> None:
    assert gate_of_item(item(opened_at={"N": "1000"}), BREAKER, now=1_000).gate is SEND


def test_an_opened_at_that_is_not_a_number_attribute_gets_canaries_only() -> None:
    for opened_at in ({"S": "1000"}, {"N": "soon"}, {"BOOL": True}, {"N": "NaN"}):
        reading = gate_of_item(item(state={"S": "OPEN"}, opened_at=opened_at), BREAKER, now=1_000)

        assert reading.gate is PROBE, opened_at
        assert "not a time" in reading.reason
