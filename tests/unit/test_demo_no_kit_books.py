"""The books of the demo's second act (demo/no_kit_act.py): what unbalances them, and the report."""

from __future__ import annotations

import json
from dataclasses import replace

from demo.no_kit_act import BreakerReading, NoKitAct, ParkedOrder, problems
from demo.report import Report

GOOD, POISON = {"o-1", "o-2"}, {"p-1"}
WHY = "failed 3 times while the consumer processed 2 others (limit 3): poison, not an outage"


def act(fates: dict[str, str], parked: list[str], *, settled: bool = True) -> NoKitAct:
    return NoKitAct(
        good_orders=len(GOOD),
        poison_orders=len(POISON),
        schedule="rate(5 minutes)",
        suspect_limit=3,
        metrics_lag_seconds=120,
        simulated_minutes=55.0,
        wall_seconds=3.0,
        runs=11,
        redrives=2,
        deliveries=7,
        fates=fates,
        fulfilled_more_than_once=[],
        parked=[ParkedOrder(i, i in POISON, "suspect", WHY, 2, 55.0) for i in parked],
        breaker=BreakerReading(55.0),
        breaker_changes=[],
        settled=settled,
    )


BALANCED = act({"o-1": "fulfilled", "o-2": "fulfilled", "p-1": "parked"}, ["p-1"])


def empty_report() -> Report:
    return Report(0, 0, 0, 0, [], {}, [], [], [], 0, 0, 0.0, True, True)


def test_good_fulfilled_and_poison_parked_balance() -> None:
    assert problems(BALANCED, GOOD, POISON) == []


def test_a_lost_order_unbalances_the_books() -> None:
    lost = act({"o-1": "fulfilled", "o-2": "lost", "p-1": "parked"}, ["p-1"])
    assert problems(lost, GOOD, POISON) == ["1 order(s) lost: ['o-2']"]


def test_a_parked_good_order_unbalances_the_books() -> None:
    parked = act({"o-1": "fulfilled", "o-2": "parked", "p-1": "parked"}, ["o-2", "p-1"])
    assert problems(parked, GOOD, POISON) == ["good orders parked: ['o-2']"]


def test_poison_still_waiting_at_the_cap_unbalances_the_books() -> None:
    waiting = act({"o-1": "fulfilled", "o-2": "fulfilled", "p-1": "in a queue"}, [], settled=False)
    assert problems(waiting, GOOD, POISON) == ["not settled after 55 simulated minutes: ['p-1'] waiting"]


def test_the_acts_problems_unbalance_the_demos_report_and_it_carries_the_act() -> None:
    report = empty_report()
    report.add_no_kit_act(replace(BALANCED, problems=["1 order(s) lost: ['o-2']"]))
    assert not report.balanced
    assert report.problems == ["without the kit: 1 order(s) lost: ['o-2']"]
    data = json.loads(report.to_json())
    assert data["balanced"] is False
    assert data["no_kit_act"]["parked"][0]["why"] == WHY
