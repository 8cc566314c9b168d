"""sqs_redriver.core.table: a run's summary for the run history, and reading it back."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.breaker import Mode, State
from sqs_redriver.core.table import RunSummary
from sqs_redriver.protocol.limits import MAX_EPOCH_SECONDS
from sqs_redriver.runtime.report import RunReport, StopReason, Tally, combine
from sqs_redriver.runtime.run import run_summary
from tests.support.fakes import queue_url

ORDERS = queue_url("orders")
PAYMENTS = queue_url("payments")
TALLY = Tally(
    received=12,
    redriven=7,
    parked=3,
    expiring=1,
    returned=2,
    canaries=1,
    errors=1,
    unparkable=1,
    unarchived=1,
)


def test_a_single_source_runs_summary_has_its_counts_breaker_and_source() -> None:
    report = RunReport(
        Mode.REDRIVE,
        State.OPEN,
        TALLY,
        StopReason.BREAKER_OPENED,
        breaker_transitions=["CLOSED->OPEN"],
    )

    summary = run_summary(
        report, at=1_800_000_000, duration_ms=2_500, continuation=True, source_queue_url=ORDERS
    )

    assert summary == {
        "at": 1_800_000_000,
        "duration_ms": 2_500,
        "mode": "REDRIVE",
        "breaker_state": "OPEN",
        "stopped_because": "breaker opened",
        "received": 12,
        "redriven": 7,
        "parked": 3,
        "returned": 2,
        "canaries": 1,
        "expiring": 1,
        "errors": 1,
        "unparkable": 1,
        "unarchived": 1,
        "breaker_transitions": ["CLOSED->OPEN"],
        "paused": False,
        "continuation": True,
        "sources": {ORDERS: "OPEN"},
    }
    json.dumps(summary)  # it is stored as JSON


def test_a_shared_dlqs_summary_names_every_sources_breaker() -> None:
    parts = [
        RunReport(Mode.REDRIVE, State.CLOSED, Tally(received=1), source=ORDERS),
        RunReport(Mode.SKIP, State.OPEN, stopped_because=StopReason.BREAKER_OPEN, source=PAYMENTS),
    ]

    summary = run_summary(
        combine(parts, ORDERS), at=1, duration_ms=1, continuation=False, source_queue_url=ORDERS
    )

    assert summary["sources"] == {ORDERS: "CLOSED", PAYMENTS: "OPEN"}
    assert (summary["breaker_state"], summary["received"]) == ("OPEN", 1)


def test_a_paused_runs_summary_says_so() -> None:
    report = RunReport(Mode.SKIP, State.CLOSED, stopped_because=StopReason.PAUSED)

    summary = run_summary(report, at=1, duration_ms=0, continuation=False, source_queue_url=ORDERS)

    assert (summary["paused"], summary["stopped_because"], summary["mode"]) == (True, "paused", "SKIP")


def test_a_summary_reads_back_as_it_was_written() -> None:
    report = RunReport(Mode.PROBE, State.HALF_OPEN, TALLY, StopReason.CANARY_SENT, ["OPEN->HALF_OPEN"])
    summary = run_summary(report, at=5, duration_ms=6, continuation=True, source_queue_url=ORDERS)

    assert RunSummary.from_dict(json.loads(json.dumps(summary))).to_dict() == summary


def test_reading_a_summary_ignores_unknown_fields_and_zeroes_missing_or_mistyped_ones() -> None:
    summary = RunSummary.from_dict(
        {"at": 7, "redriven": "many", "paused": "yes", "sources": [1], "from_the_future": {"x": 1}}
    )

    assert summary == RunSummary(at=7)
    assert RunSummary.from_dict({}) == RunSummary()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


@given(
    st.dictionaries(st.sampled_from(["at", "duration_ms", "redriven", "mode", "sources", "x"]), JSON_VALUES)
)
def test_any_stored_summary_reads_into_printable_values(payload: dict[str, object]) -> None:
    # what a corrupt or forged RUNS# entry holds: never an exception, never a time no clock can show
    summary = RunSummary.from_dict(payload)

    assert 0 <= summary.at <= MAX_EPOCH_SECONDS and 0 <= summary.duration_ms <= MAX_EPOCH_SECONDS
    assert 0 <= summary.redriven <= MAX_EPOCH_SECONDS and isinstance(summary.mode, str)
    datetime.fromtimestamp(summary.at, UTC)  # what `status` prints
