"""The whole loop on the real template: `python -m demo` with a short scenario, its report checked,
the operator's part with the real tool (status, groups, a fix and its group's replay) included; a
Lambda function's asynchronous failures on the same local AWS; and the second act, a consumer
without the kit in simulated time, from the same run's report.

The first act plays in real time (a 1 s schedule), so this test checks only what the demo promises
at any speed: the books, exactly-once, parking, the operator's part, and the breaker opened by the
outage, its transitions in order, closed at the end (the act holds its outage until the breaker has
opened and ends when the breaker has closed, however slow the machine). How soon it opened, whether a
probe heard its canary within its run, and closing and draining in one run depend on the machine's
speed; they are asserted in simulated time (tests/e2e/test_recovery.py's kit outage,
tests/integration/test_consumer_verdicts.py). Speed is measured by `make bench`, never here. Every
bound on time (the act's time limit, the process's timeout) only detects a hang."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# 3 poison orders: two with a quantity-0 line (messages differ in numbers), one without a customer;
# the operator fixes the quantity-0 bug and replays its two orders.
SHORT_SCENARIO = [
    "--orders", "12", "--poison", "3", "--produce-seconds", "2",
    "--outage-start", "0.5", "--outage-seconds", "8", "--tick-seconds", "1", "--time-limit", "600",
]  # fmt: skip
HANG_SECONDS = 1800  # the whole demo (each part of an act bounded by 600 s) on the busiest machine
GOOD_ORDERS = 9
POISON_BUGS = 2
FIXED_BUG, UNFIXED_BUG = "a line with quantity 0", "no customer_id"
REPLAYED = 2
FINGERPRINT = re.compile(r"[0-9a-f]{16}")
# The second act's defaults: 20 good orders, 5 poison; a suspect is parked at its 3rd failure.
NO_KIT_GOOD, NO_KIT_POISON = 20, 5
# The function act: notifications for orders, one without an e-mail address; its re-driver parks at 3.
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:orders-notifier"
FUNCTION_LIMIT = 3
FUNCTION_REASON = re.compile(
    rf"failed after {FUNCTION_LIMIT} re-drives \(limit {FUNCTION_LIMIT}\); source's error NoEmailAddress: "
    r"order p-[0-9]{4} has no e-mail address to notify"
)
SUSPECT_REASON = re.compile(
    r"failed 3 times while the consumer processed [1-9][0-9,]* others \(limit 3\): poison, not an outage"
)


@pytest.fixture(scope="module")
def report() -> dict:
    # A process of its own: the demo runs moto's threaded server, which must not share a process
    # with the suite's in-process mock_aws.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    completed = subprocess.run(
        [sys.executable, "-m", "demo", "--json", *SHORT_SCENARIO],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    # Nothing on stdout: the demo ended before its report; what it said is on stderr.
    assert completed.stdout, f"exit code {completed.returncode}:\n{completed.stderr[-5000:]}"
    result: dict = json.loads(completed.stdout)
    assert completed.returncode == (0 if result["balanced"] else 1)
    return result


def test_nothing_is_lost_and_the_books_balance(report: dict) -> None:
    assert report["lost"] == [] and report["unexpected"] == []
    assert report["balanced"], report["problems"]
    assert report["queues_empty"] and report["finished_in_time"]


def test_every_good_order_and_every_replayed_fixed_one_is_fulfilled_exactly_once(report: dict) -> None:
    assert report["good_orders"] == GOOD_ORDERS
    assert report["fulfilled_once"] == GOOD_ORDERS + REPLAYED
    assert report["fulfilled_more_than_once"] == []


def test_poison_is_parked_at_its_first_failure_on_the_consumers_terminal_error(report: dict) -> None:
    poison = report["poison_parked"]
    assert len(poison) == report["poison_orders"] == 3
    for parked in poison:
        assert parked["cause"] == "terminal"
        assert parked["error_class"] == "consumer.orders.InvalidOrder"
        assert FINGERPRINT.fullmatch(parked["fingerprint"])
        assert parked["redriven"] == 0  # the parked mark's n
        assert parked["attempt"] == 1 and parked["deliveries"] == 1


def test_the_operator_sees_the_status_and_the_parking_lots_groups_by_stack_name(report: dict) -> None:
    status, groups, _replay = report["operator_runs"]
    assert "--stack SqsSmartRedriver" in status["command"] and status["command"].endswith("status --json")
    assert status["exit_code"] == 1  # it found something to look at: the parked poison
    assert status["data"]["problems"] == ["3 message(s) in the parking lot"]
    assert status["data"]["queues"]["parking_lot"]["visible"] == 3
    assert groups["command"].endswith("groups --queue parking-lot --json") and groups["exit_code"] == 0
    counts = {g["group"]: g["count"] for g in groups["data"]}
    assert counts == report["fingerprints"]


def test_after_the_fix_its_group_is_replayed_and_fulfilled_exactly_once(report: dict) -> None:
    replay = report["operator_runs"][-1]
    fixed = [p for p in report["poison_parked"] if p["bug"] == FIXED_BUG]
    assert report["fix"] == "ORDERS_DROP_ZERO_QUANTITY_LINES=true"
    assert {p["fingerprint"] for p in fixed} == {report["replayed_group"]}
    assert "has quantity 0" in report["replayed_group_label"]
    assert f"replay --group {report['replayed_group']} --yes --json" in replay["command"]
    assert replay["exit_code"] == 0 and replay["data"]["moved"] == REPLAYED
    assert all(p["replayed"] for p in fixed)
    assert report["replayed"] == report["fulfilled_after_replay"] == REPLAYED


def test_the_unfixed_bugs_poison_stays_parked_with_its_reason(report: dict) -> None:
    unfixed = [p for p in report["poison_parked"] if p["bug"] == UNFIXED_BUG]
    assert unfixed and not any(p["replayed"] for p in unfixed)
    assert sorted(report["parked"]) == sorted(p["order_id"] for p in unfixed)
    for parked in unfixed:
        assert parked["fingerprint"] in report["parked"][parked["order_id"]]  # in the reason too


def test_poison_makes_one_fingerprint_per_bug(report: dict) -> None:
    fingerprints_of_bug: dict[str, set[str]] = {}
    for parked in report["poison_parked"]:
        fingerprints_of_bug.setdefault(parked["bug"], set()).add(parked["fingerprint"])
    assert report["poison_bugs"] == len(fingerprints_of_bug) == POISON_BUGS
    assert all(len(fingerprints) == 1 for fingerprints in fingerprints_of_bug.values())
    assert len(report["fingerprints"]) == POISON_BUGS
    assert sum(report["fingerprints"].values()) == report["poison_orders"]


def test_the_outages_failures_are_redriven_and_fulfilled_exactly_once(report: dict) -> None:
    assert report["outage_failed_orders"] > 0
    assert set(report["transient_errors"]) == {"DownstreamUnavailable"}
    assert report["redriven_orders"] == report["outage_failed_orders"]
    assert report["redriven_fulfilled_once"] == report["redriven_orders"]


def test_the_outage_opens_the_breaker_and_it_closes_only_after_the_outage(report: dict) -> None:
    assert report["opened_during_outage"]
    assert report["closed_after_outage_seconds"] >= 0
    assert report["breaker_timeline"][-1][1] == "CLOSED"


def test_the_breakers_transitions_follow_each_other_from_closed_to_closed(report: dict) -> None:
    # "CLOSED->OPEN", or "orders: CLOSED->OPEN" where a run has parts of several sources
    moves = [transition.split()[-1].split("->") for transition in report["breaker_transitions"]]
    assert moves[0] == ["CLOSED", "OPEN"] and moves[-1] == ["HALF_OPEN", "CLOSED"]
    assert all(before[1] == after[0] for before, after in zip(moves, moves[1:], strict=False))
    assert {tuple(move) for move in moves} <= {
        ("CLOSED", "OPEN"),
        ("OPEN", "HALF_OPEN"),
        ("HALF_OPEN", "OPEN"),
        ("HALF_OPEN", "CLOSED"),
    }


def test_a_functions_failed_events_are_redriven_to_it_and_delivered_exactly_once(report: dict) -> None:
    act = report["function_act"]
    good = [event for event in act["events"] if not event["poison"]]
    assert act["function_arn"] == FUNCTION_ARN
    assert len(good) >= 1 and act["delivered_once"] == len(good)
    for event in good:
        # failed its first attempt and Lambda's two retries, one record in the DLQ, one re-drive
        assert (event["fate"], event["records"], event["redriven"], event["attempts"]) == (
            "delivered",
            1,
            1,
            4,
        )
    assert act["redriven"] >= len(good)
    assert act["settled"] and act["problems"] == []


def test_a_functions_poison_event_is_parked_with_the_functions_error(report: dict) -> None:
    act = report["function_act"]
    [parked] = [event for event in act["events"] if event["fate"] == "parked"]
    assert parked["poison"] and act["parked"] == 1
    assert FUNCTION_REASON.fullmatch(parked["parked_reason"]), parked["parked_reason"]
    # each invocation's failure came back in a new record, with a new request id
    assert (parked["redriven"], parked["records"]) == (FUNCTION_LIMIT, FUNCTION_LIMIT + 1)
    assert act["request_ids"] == sum(event["records"] for event in act["events"])
    assert parked["parked_request_id"] and parked["parked_message_id"]


def test_without_the_kit_every_poison_order_is_parked_on_its_queues_metrics(report: dict) -> None:
    act = report["no_kit_act"]
    parked = act["parked"]
    assert act["poison_orders"] == NO_KIT_POISON
    assert len(parked) == NO_KIT_POISON and all(p["poison"] for p in parked)
    for order in parked:
        assert order["cause"] == "suspect"
        assert SUSPECT_REASON.fullmatch(order["why"]), order["why"]
        assert order["redrives"] == 2  # failed at delivery, then twice more after a re-drive each


def test_without_the_kit_every_good_order_is_fulfilled_once_and_nothing_is_lost(report: dict) -> None:
    act = report["no_kit_act"]
    fates = act["fates"]
    assert act["good_orders"] == NO_KIT_GOOD and len(fates) == NO_KIT_GOOD + NO_KIT_POISON
    assert sorted(fates.values()) == ["fulfilled"] * NO_KIT_GOOD + ["parked"] * NO_KIT_POISON
    assert {p["order_id"] for p in act["parked"]} == {i for i, fate in fates.items() if fate == "parked"}
    assert act["fulfilled_more_than_once"] == []
    assert act["settled"] and act["problems"] == []


def test_without_the_kit_the_act_runs_in_simulated_time_on_the_default_schedule(report: dict) -> None:
    act = report["no_kit_act"]
    assert act["schedule"] == "rate(5 minutes)"
    assert act["simulated_minutes"] >= 30 and act["runs"] >= 6  # the metrics' verdicts take runs


def test_without_the_kit_the_suspects_never_move_the_breaker(report: dict) -> None:
    breaker = report["no_kit_act"]["breaker"]
    assert (breaker["state"], breaker["evidence"], breaker["version"]) == ("CLOSED", "none", 0)
    assert report["no_kit_act"]["breaker_changes"] == []
