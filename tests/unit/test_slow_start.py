"""decide.slow_start and run.slow_start: slow start on the consumer's verdicts, or on time."""

from __future__ import annotations

import logging

import pytest

from sqs_redriver.core.breaker import BreakerPolicy
from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.runtime.plan import VerdictTag
from sqs_redriver.runtime.slow_start import (
    VERDICT_CHECK_EVERY,
    Admission,
    Phase,
    SlowStart,
    SlowStartRules,
    judge_recent,
    judge_trial,
    seconds_until_allowed,
    time_allowance,
)
from tests.support.fakes import FakeStateStore

POLICY = BreakerPolicy(failure_ratio=0.5, minimum_volume=3)
KEY = "run/1/abc"


@pytest.mark.parametrize(
    ("verdicts", "trial_sent", "trip", "phase"),
    [
        (VerdictCounts(transient=3), 3, True, None),  # a broken consumer: trip after three
        (VerdictCounts(transient=2), 3, False, None),  # not yet the minimum volume: wait for the third
        (VerdictCounts(ok=1), 3, False, Phase.FULL),  # a success: full rate
        (VerdictCounts(ok=1, transient=2), 3, False, Phase.TRIAL),  # unclear: another trial
        (VerdictCounts(terminal=3), 3, False, Phase.TRIAL),  # poison says nothing of the consumer
        (VerdictCounts(), 3, False, None),
    ],
)
def test_a_trial_is_judged_by_the_breakers_ratio_rule(
    verdicts: VerdictCounts, trial_sent: int, trip: bool, phase: Phase | None
) -> None:
    result = judge_trial(verdicts, trial_sent=trial_sent, policy=POLICY)
    assert (result.trip, result.phase) == (trip, phase)


def test_the_time_allowance_doubles_from_one_a_second_to_the_rate_limit() -> None:
    pace = {"max_rate": 50, "slow_start_seconds": 60}
    assert time_allowance(0, **pace) == 1  # the first message goes at once
    assert time_allowance(60, **pace) == pytest.approx(1 + 49 * 60 / 5.643856 / 0.693147, rel=1e-3)
    # then the full rate: 50 more a second
    assert time_allowance(70, **pace) - time_allowance(60, **pace) == pytest.approx(500)
    assert time_allowance(10**6, max_rate=50, slow_start_seconds=0) == float("inf")


@pytest.mark.parametrize("wanted", [2, 10, 100, 752, 2_000])
def test_seconds_until_allowed_is_the_inverse_of_the_allowance(wanted: int) -> None:
    pace = {"max_rate": 50, "slow_start_seconds": 60}
    waited = seconds_until_allowed(wanted, 0, **pace)
    assert time_allowance(waited, **pace) == pytest.approx(wanted)
    assert seconds_until_allowed(wanted, waited + 1, **pace) == 0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def slow_start(
    state: FakeStateStore,
    clock: Clock,
    *,
    verdicts: bool = True,
    wait: int = 20,
    full_rate: bool = False,
    drain: bool = False,
) -> SlowStart:
    rules = SlowStartRules(
        consumer_verdicts=verdicts,
        verdict_wait_seconds=wait,
        slow_start_seconds=60,
        max_rate=50,
        breaker=POLICY,
    )
    return SlowStart(
        rules,
        verdict_key=KEY,
        state=state,
        clock=clock,
        sleep=clock.sleep,
        logger=logging.getLogger(),
        full_rate=full_rate,
        drain=drain,
    )


def never() -> bool:
    return False


def test_a_slow_start_with_the_kit_sends_a_trial_then_waits_for_their_verdicts_then_goes_full() -> None:
    clock, state = Clock(), FakeStateStore()
    state.verdicts[KEY] = [VerdictCounts(), VerdictCounts(), VerdictCounts(ok=3)]
    start = slow_start(state, clock)

    trial = start.admit(never)
    start.settle(trial.room, 3)
    after = start.admit(never)

    assert trial == Admission(3, VerdictTag(KEY, trial=True))
    assert after == Admission(10, VerdictTag(KEY, trial=False)) and start.phase is Phase.FULL
    assert clock.slept == [1.0, 1.0]  # polled until the verdicts came


def test_a_slow_start_whose_trial_fails_trips_after_a_handful_of_deliveries() -> None:
    clock, state = Clock(), FakeStateStore()
    state.verdicts[KEY] = [VerdictCounts(transient=3)]
    start = slow_start(state, clock)

    start.settle(start.admit(never).room, 3)

    assert start.admit(never).trip


def test_once_the_trial_tripped_no_worker_of_the_run_sends_more() -> None:
    # GIVEN a slow start whose trial failed, and one worker that read it (and is opening the breaker)
    clock, state = Clock(), FakeStateStore()
    state.verdicts[KEY] = [VerdictCounts(transient=3)]
    start = slow_start(state, clock)
    start.settle(start.admit(never).room, 3)
    assert start.admit(never).trip

    # WHEN another worker asks for room before the run halts (the whole trial has its verdicts now)
    other = start.admit(never)

    # THEN it is told the trial tripped, not given another trial batch into the broken consumer
    assert other == Admission(0, None, trip=True)


def test_a_slow_start_without_verdicts_in_time_falls_back_to_time() -> None:
    clock, state = Clock(), FakeStateStore()
    start = slow_start(state, clock, wait=5)

    start.settle(start.admit(never).room, 3)
    after = start.admit(never)

    assert start.phase is Phase.TIMED and after.room >= 1 and not after.tag.trial  # type: ignore[union-attr]
    # the verdict wait, then until the time allowance allows a whole batch
    assert 5 <= sum(clock.slept) <= 10 and after.room == 10


def test_a_slow_start_without_the_kit_paces_by_time_and_tags_nothing() -> None:
    clock, state = Clock(), FakeStateStore()
    start = slow_start(state, clock, verdicts=False)

    sent = 0
    while clock.now < 1_010:
        admission = start.admit(never)
        assert admission.tag is None
        start.settle(admission.room, admission.room)
        sent += admission.room

    assert sent == pytest.approx(time_allowance(10, max_rate=50, slow_start_seconds=60), abs=10)
    assert "load_verdicts" not in state.calls


def test_a_timed_slow_start_admits_whole_batches_after_the_first_message() -> None:
    clock, state = Clock(), FakeStateStore()
    start = slow_start(state, clock, verdicts=False)

    rooms = []
    for _ in range(200):  # about 750 in the 60 s slow start, then the rate limiter alone paces
        admission = start.admit(never)
        start.settle(admission.room, admission.room)
        rooms.append(admission.room)

    assert rooms[0] == 1 and set(rooms[1:]) == {10}
    assert start.at_full_rate and clock.slept


def test_a_slow_start_at_full_rate_reads_the_verdicts_again_and_trips_when_the_consumer_breaks() -> None:
    clock, state = Clock(), FakeStateStore()
    state.verdicts[KEY] = [VerdictCounts(ok=3), VerdictCounts(ok=3, transient=40)]
    start = slow_start(state, clock)
    start.settle(start.admit(never).room, 3)

    admitted = 0
    while not (admission := start.admit(never)).trip:
        start.settle(admission.room, admission.room)
        admitted += admission.room
        assert admitted <= 10 * VERDICT_CHECK_EVERY, "never tripped"

    assert VERDICT_CHECK_EVERY - 10 < admitted <= VERDICT_CHECK_EVERY + 10


def test_a_drains_check_judges_the_verdicts_it_read_since_the_check_before() -> None:
    clock, state = Clock(), FakeStateStore()
    start = slow_start(state, clock, full_rate=True, drain=True)

    assert start.judged_key == KEY
    assert not start.heard(VerdictCounts(ok=500))  # thousands of successes in the run so far...
    assert not start.heard(VerdictCounts(ok=510, transient=2))  # ... two failures: not yet
    assert start.heard(VerdictCounts(ok=512, transient=8))  # six of eight since: broken
    assert start.admit(never).trip  # sticky: every batch of the run is told
    assert state.calls.count("load_verdicts") == 0  # the check read them, not the slow start


def test_a_drains_heard_verdicts_spare_the_slow_starts_own_read() -> None:
    clock, state = Clock(), FakeStateStore()
    start = slow_start(state, clock, full_rate=True, drain=True)
    for _ in range(3 * VERDICT_CHECK_EVERY // 10):
        start.heard(VerdictCounts(ok=1))
        start.settle(start.admit(never).room, 10)

    assert state.calls.count("load_verdicts") == 0


def test_only_a_run_at_full_rate_with_verdicts_has_its_verdicts_read_by_a_drains_check() -> None:
    clock, state = Clock(), FakeStateStore()

    assert slow_start(state, clock).judged_key is None  # its trial reads its own
    assert slow_start(state, clock, verdicts=False, full_rate=True).judged_key is None


def test_a_slow_start_gives_up_waiting_when_the_run_is_out_of_time() -> None:
    clock, state = Clock(), FakeStateStore()
    start = slow_start(state, clock)
    start.settle(start.admit(never).room, 3)

    assert start.admit(lambda: True) == Admission(0, None)


@pytest.mark.parametrize("verdicts", [True, False])
def test_a_slow_start_that_follows_a_run_at_full_rate_starts_at_full_rate(verdicts: bool) -> None:
    clock, state = Clock(), FakeStateStore()
    start = slow_start(state, clock, verdicts=verdicts, full_rate=True)

    first = start.admit(never)

    assert first.room == 10 and not (first.tag and first.tag.trial) and clock.slept == []
    assert start.at_full_rate


def test_a_timed_slow_start_is_at_full_rate_once_its_slow_start_is_over() -> None:
    clock, state = Clock(), FakeStateStore()
    start = slow_start(state, clock, verdicts=False)
    start.admit(never)
    before = start.at_full_rate

    clock.now += 60

    assert (before, start.at_full_rate) == (False, True)


def test_a_slow_start_still_in_its_trial_is_not_at_full_rate() -> None:
    clock, state = Clock(), FakeStateStore()
    start = slow_start(state, clock)

    start.settle(start.admit(never).room, 3)

    assert not start.at_full_rate


def test_a_consumer_that_breaks_after_thousands_of_successes_trips_on_the_failures_since_the_last_read() -> (
    None
):
    before = VerdictCounts(ok=5_000)

    assert judge_recent(VerdictCounts(ok=5_001, transient=3), before, policy=POLICY)
    assert not judge_recent(VerdictCounts(ok=5_040, transient=3), before, policy=POLICY)  # 3 of 43
    assert not judge_recent(VerdictCounts(ok=5_000, transient=2), before, policy=POLICY)  # too few


def test_counts_read_lower_than_before_say_nothing() -> None:
    assert not judge_recent(VerdictCounts(), VerdictCounts(ok=10, transient=10), policy=POLICY)


def test_a_large_drains_re_drives_come_straight_back_at_their_first_failure_and_a_chains_do_not() -> None:
    clock = Clock()
    chain = slow_start(FakeStateStore(), clock, full_rate=True)
    worker = slow_start(FakeStateStore(), clock, full_rate=True, drain=True)

    chain_tag, worker_tag = chain.admit(never).tag, worker.admit(never).tag

    assert chain_tag is not None and not chain_tag.probe and not chain_tag.trial
    assert worker_tag is not None and worker_tag.probe and not worker_tag.trial  # delayed as any re-drive
