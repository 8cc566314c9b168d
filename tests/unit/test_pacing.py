"""sqs_redriver.runtime.budget and the run's tally: when a run stops taking batches."""

from __future__ import annotations

import pytest

from sqs_redriver.runtime.budget import backlog_check_due, batch_size, limit_reached, out_of_time
from sqs_redriver.runtime.report import StopReason, Tally


def test_the_limit_is_reached_at_the_count_not_past_it() -> None:
    assert not limit_reached(499, 500) and limit_reached(500, 500)


def test_the_last_receive_asks_only_for_what_the_limit_leaves() -> None:
    assert (batch_size(0, 500), batch_size(495, 500)) == (10, 5)


def test_no_batch_is_taken_with_less_time_left_than_the_margin() -> None:
    assert not out_of_time(30_000, margin_seconds=30) and out_of_time(29_999, margin_seconds=30)


@pytest.mark.parametrize(("received", "due"), [(0, True), (9, True), (10, False), (90, False), (100, True)])
def test_backlog_is_checked_before_the_first_batch_and_every_hundred_messages(
    received: int, due: bool
) -> None:
    assert backlog_check_due(received, backlog_limit=1000) is due


def test_a_backlog_limit_of_zero_turns_back_pressure_off() -> None:
    assert not backlog_check_due(0, backlog_limit=0)


def test_tallies_add_up_field_by_field() -> None:
    total = Tally(received=10, redriven=8, errors=1) + Tally(received=5, parked=2, canaries=1, unparkable=1)
    assert total == Tally(received=15, redriven=8, parked=2, returned=0, canaries=1, errors=1, unparkable=1)


@pytest.mark.parametrize(
    ("reason", "stops_all"),
    [
        (StopReason.DLQ_EMPTY, False),
        (StopReason.PER_RUN_LIMIT, False),
        (StopReason.HALTED, False),
        (StopReason.BREAKER_OPENED, True),
        (StopReason.AWS_ERROR, True),
        (StopReason.TIME_BUDGET, True),
        (StopReason.SOURCE_BACKLOG, True),
    ],
)
def test_only_the_end_of_a_workers_share_lets_the_other_workers_go_on(
    reason: StopReason, stops_all: bool
) -> None:
    assert reason.stops_the_run is stops_all
