"""The books of the demo's function act (demo/function_act.py): what unbalances them, and the report."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from demo.function_act import FunctionAct, NotifiedEvent, problems
from demo.report import Report

REASON = (
    "failed after 3 re-drives (limit 3); source's error NoEmailAddress: "
    "order p-0001 has no e-mail address to notify"
)


def act(*events: NotifiedEvent, settled: bool = True) -> FunctionAct:
    return FunctionAct(
        function_name="orders-notifier",
        function_arn="arn:aws:lambda:us-east-1:123456789012:function:orders-notifier",
        dlq_url="http://localhost/123456789012/orders-notifier-dlq",
        parking_lot_url="http://localhost/123456789012/orders-notifier-parking-lot",
        table_name="orders-notifier-redriver-state",
        max_redrive_count=3,
        events=list(events),
        runs=8,
        redriven=5,
        parked=1,
        delivered_once=1,
        request_ids=5,
        wall_seconds=9.5,
        settled=settled,
    )


GOOD = NotifiedEvent("o-0001", poison=False, fate="delivered", attempts=4, records=1, redriven=1)
POISON = NotifiedEvent(
    "p-0001", poison=True, fate="parked", attempts=12, records=4, redriven=3, parked_reason=REASON
)
ONCE = Counter({"o-0001": 1})


def test_every_good_event_e_mailed_once_and_the_poison_parked_with_its_error_balance() -> None:
    assert problems(act(GOOD, POISON), ONCE) == []


@pytest.mark.parametrize(
    ("events", "emailed", "problem"),
    [
        ((GOOD, POISON), Counter({"o-0001": 2}), "o-0001 e-mailed 2 times, not once (delivered)"),
        ((GOOD, POISON), Counter(), "o-0001 e-mailed 0 times, not once (delivered)"),
        (
            (GOOD, NotifiedEvent("p-0001", poison=True, fate="not settled")),
            ONCE,
            "p-0001 (poison) is not settled, not parked with the function's error",
        ),
        (
            (
                GOOD,
                NotifiedEvent("p-0001", poison=True, fate="parked", parked_reason="failed after 3 re-drives"),
            ),
            ONCE,
            "p-0001 (poison) is parked, not parked with the function's error",
        ),
    ],
)
def test_what_unbalances_the_books(
    events: tuple[NotifiedEvent, ...], emailed: Counter[str], problem: str
) -> None:
    assert problems(act(*events), emailed) == [problem]


def test_an_act_not_settled_in_time_unbalances_them() -> None:
    assert problems(act(GOOD, POISON, settled=False), ONCE) == ["not settled after 9.5 s"]


def test_its_problems_unbalance_the_report_and_it_is_in_the_json() -> None:
    report = Report(0, 0, 0, 0, [], {}, [], [], [], 0, 0, 0.0, True, True)
    unsettled = act(GOOD, POISON, settled=False)
    unsettled.problems = problems(unsettled, ONCE)

    report.add_function_act(unsettled)

    assert not report.balanced
    assert report.problems == ["the function's failures: not settled after 9.5 s"]
    assert json.loads(report.to_json())["function_act"]["events"][1]["parked_reason"] == REASON
