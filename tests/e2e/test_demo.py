"""The whole loop on the real template: `python -m demo` with a short scenario, its report checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHORT_SCENARIO = [
    "--orders", "12", "--poison", "1", "--produce-seconds", "2",
    "--outage-start", "0.5", "--outage-seconds", "8", "--tick-seconds", "1", "--time-limit", "120",
]  # fmt: skip


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
        timeout=300,
    )
    result: dict = json.loads(completed.stdout)
    assert completed.returncode == (0 if result["balanced"] else 1)
    return result


def test_nothing_is_lost_and_the_books_balance(report: dict) -> None:
    assert report["lost"] == [] and report["unexpected"] == []
    assert report["balanced"], report["problems"]
    assert report["queues_empty"] and report["finished_in_time"]


def test_every_good_order_is_fulfilled_exactly_once(report: dict) -> None:
    assert report["fulfilled_once"] == report["good_orders"] == 11
    assert report["fulfilled_more_than_once"] == []


def test_poison_is_parked_with_its_reason(report: dict) -> None:
    assert len(report["parked"]) == report["poison_orders"] == 1
    assert all("failed after 5 re-drives" in why for why in report["parked"].values())


def test_the_breaker_opened_during_the_outage_and_closed_after_it(report: dict) -> None:
    transitions = report["breaker_transitions"]
    assert "CLOSED->OPEN" in transitions and "OPEN->HALF_OPEN" in transitions
    assert "HALF_OPEN->CLOSED" in transitions
