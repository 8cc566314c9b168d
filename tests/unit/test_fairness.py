"""Which source of a shared DLQ a run takes first."""

from __future__ import annotations

from collections import Counter

from sqs_redriver.runtime.routing import turn_order


def test_every_source_is_taken_once_per_run() -> None:
    assert sorted(turn_order(3, generation=0, now=1_800_000_000)) == [0, 1, 2]


def test_along_a_chain_of_continuations_the_sources_lead_in_turn() -> None:
    leaders = [turn_order(3, generation=g, now=1_800_000_000)[0] for g in range(1, 7)]

    assert leaders == [1, 2, 0, 1, 2, 0]


def test_scheduled_runs_on_any_period_do_not_always_lead_with_one_source() -> None:
    # A 5-minute schedule with 5 sources: a leader by minute number would never change.
    leaders = Counter(turn_order(5, generation=0, now=1_800_000_000 + 300 * i)[0] for i in range(100))

    assert len(leaders) == 5 and min(leaders.values()) >= 10


def test_one_source_is_always_first() -> None:
    assert turn_order(1, generation=7, now=1_800_000_123) == [0]
