"""The recovery benchmark's model of a drain (bench.recovery_model)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from bench.recovery_model import (
    Drainer,
    drain_seconds,
    redrive_seconds,
    run_capacity,
    run_seconds,
    runs_needed,
)

SCHEDULED = Drainer(per_run=500, rate=50, schedule_seconds=300, delay_step_seconds=0)


def test_a_scheduled_drain_waits_a_tick_per_run() -> None:
    # 1,000 messages, 500 a run: the second run starts at 300 s and sends for 10 s
    assert runs_needed(1000, SCHEDULED) == 2
    assert drain_seconds(1000, SCHEDULED, consumer_rate=math.inf) == pytest.approx(310)


def test_continuation_runs_back_to_back() -> None:
    continued = SCHEDULED.continued(overhead_seconds=1)
    # 10 s a run, 1 s between runs: the fourth run starts at 33 s
    assert drain_seconds(2000, continued, consumer_rate=math.inf) == pytest.approx(43)


def test_a_slow_consumer_bounds_the_drain() -> None:
    continued = SCHEDULED.continued()
    assert drain_seconds(2000, continued, consumer_rate=10) == pytest.approx(200)


def test_the_delay_and_the_trial_come_after_the_last_send() -> None:
    drainer = Drainer(per_run=100, rate=50, schedule_seconds=300, delay_step_seconds=60, trial_seconds=2)
    # the last message is sent at 2 + 100/50 = 4 s, visible at most 60 s later
    assert drain_seconds(100, drainer, consumer_rate=math.inf) == pytest.approx(64)


def test_slow_start_lengthens_a_run() -> None:
    slow = Drainer(per_run=500, rate=50, schedule_seconds=300, delay_step_seconds=0, slow_start_seconds=60)
    assert run_seconds(500, slow) > run_seconds(500, SCHEDULED) == 10


def test_a_runs_time_budget_caps_what_it_redrives() -> None:
    # 90 s at 50/s after a 2 s trial: 4,400 a run, not the per-run limit of 10,000
    drainer = Drainer(
        per_run=10_000,
        rate=50,
        schedule_seconds=300,
        delay_step_seconds=0,
        trial_seconds=2,
        budget_seconds=90,
    )
    assert run_capacity(drainer) == 4400
    assert runs_needed(40_000, drainer) == 10


def test_only_the_first_run_of_a_chain_slow_starts() -> None:
    slow = Drainer(per_run=10_000, rate=50, schedule_seconds=300, delay_step_seconds=0, slow_start_seconds=60)
    chain = replace(slow, budget_seconds=90).continued(overhead_seconds=1)
    first = run_capacity(replace(slow, budget_seconds=90))
    # the first run slow-starts for 60 s, then 30 s at 50/s; the rest go at 50/s from the start
    rest = 6000 - first
    assert drain_seconds(6000, chain, consumer_rate=math.inf) == pytest.approx(90 + 1 + rest / 50, abs=1)
    assert runs_needed(6000, chain) == 2


def test_the_dlq_is_empty_when_the_last_runs_sending_ends() -> None:
    continued = SCHEDULED.continued(overhead_seconds=1)
    assert redrive_seconds(2000, continued) == pytest.approx(43)
    assert redrive_seconds(1000, SCHEDULED) == pytest.approx(310)
