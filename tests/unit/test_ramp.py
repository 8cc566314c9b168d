"""decide.ramp and sqs_redriver.runtime.run.wave: slow start on the consumer's verdicts, or on time."""

from __future__ import annotations

import logging

import pytest

from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.runtime.decide.breaker import BreakerPolicy
from sqs_redriver.runtime.decide.ramp import Phase, judge_probes, seconds_until_allowed, time_allowance
from sqs_redriver.runtime.model.intents import WaveTag
from sqs_redriver.runtime.run.wave import VERDICT_CHECK_EVERY, Admission, SlowStart, Wave
from tests.support.fakes import FakeStateStore

POLICY = BreakerPolicy(failure_ratio=0.5, minimum_volume=3)
KEY = "run/1/abc"


@pytest.mark.parametrize(
    ("verdicts", "probes_sent", "trip", "phase"),
    [
        (VerdictCounts(transient=3), 3, True, None),  # a broken consumer: trip after three
        (VerdictCounts(transient=2), 3, False, None),  # not yet the minimum volume: wait for the third
        (VerdictCounts(ok=1), 3, False, Phase.FULL),  # a success: full rate
        (VerdictCounts(ok=1, transient=2), 3, False, Phase.PROBING),  # unclear: another step
        (VerdictCounts(terminal=3), 3, False, Phase.PROBING),  # poison says nothing of the consumer
        (VerdictCounts(), 3, False, None),
    ],
)
def test_probes_are_judged_by_the_breakers_ratio_rule(
    verdicts: VerdictCounts, probes_sent: int, trip: bool, phase: Phase | None
) -> None:
    result = judge_probes(verdicts, probes_sent=probes_sent, policy=POLICY)
    assert (result.trip, result.phase) == (trip, phase)


def test_the_time_ramp_doubles_from_one_a_second_to_the_rate_limit() -> None:
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
        self.paused: list[float] = []

    def __call__(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        self.paused.append(seconds)
        self.now += seconds


def wave(
    state: FakeStateStore, clock: Clock, *, verdicts: bool = True, wait: int = 20, ramped: bool = False
) -> Wave:
    rules = SlowStart(
        consumer_verdicts=verdicts,
        verdict_wait_seconds=wait,
        slow_start_seconds=60,
        max_rate=50,
        breaker=POLICY,
    )
    return Wave(
        rules,
        verdict_key=KEY,
        state=state,
        clock=clock,
        pause=clock.pause,
        logger=logging.getLogger(),
        ramped=ramped,
    )


def never() -> bool:
    return False


def test_a_wave_with_the_kit_sends_probes_then_waits_for_their_verdicts_then_goes_full() -> None:
    clock, state = Clock(), FakeStateStore()
    state.verdicts[KEY] = [VerdictCounts(), VerdictCounts(), VerdictCounts(ok=3)]
    ramp = wave(state, clock)

    probes = ramp.admit(never)
    ramp.settle(probes.room, 3)
    after = ramp.admit(never)

    assert probes == Admission(3, WaveTag(KEY, probe=True))
    assert after == Admission(10, WaveTag(KEY, probe=False)) and ramp.phase is Phase.FULL
    assert clock.paused == [1.0, 1.0]  # polled until the verdicts came


def test_a_wave_whose_probes_fail_trips_after_a_handful_of_deliveries() -> None:
    clock, state = Clock(), FakeStateStore()
    state.verdicts[KEY] = [VerdictCounts(transient=3)]
    ramp = wave(state, clock)

    ramp.settle(ramp.admit(never).room, 3)

    assert ramp.admit(never).trip


def test_once_the_probes_tripped_no_worker_of_the_wave_sends_more() -> None:
    # GIVEN a wave whose probes failed, and one worker that read it (and is opening the breaker)
    clock, state = Clock(), FakeStateStore()
    state.verdicts[KEY] = [VerdictCounts(transient=3)]
    ramp = wave(state, clock)
    ramp.settle(ramp.admit(never).room, 3)
    assert ramp.admit(never).trip

    # WHEN another worker asks for room before the run halts (every probe has its verdict now)
    other = ramp.admit(never)

    # THEN it is told the wave tripped, not given another probe batch into the broken consumer
    assert other == Admission(0, None, trip=True)


def test_a_wave_without_verdicts_in_time_falls_back_to_the_time_ramp() -> None:
    clock, state = Clock(), FakeStateStore()
    ramp = wave(state, clock, wait=5)

    ramp.settle(ramp.admit(never).room, 3)
    after = ramp.admit(never)

    assert ramp.phase is Phase.TIMED and after.room >= 1 and not after.tag.probe  # type: ignore[union-attr]
    # the verdict wait, then until the time ramp allows a whole batch
    assert 5 <= sum(clock.paused) <= 10 and after.room == 10


def test_a_wave_without_the_kit_paces_by_time_and_tags_nothing() -> None:
    clock, state = Clock(), FakeStateStore()
    ramp = wave(state, clock, verdicts=False)

    sent = 0
    while clock.now < 1_010:
        admission = ramp.admit(never)
        assert admission.tag is None
        ramp.settle(admission.room, admission.room)
        sent += admission.room

    assert sent == pytest.approx(time_allowance(10, max_rate=50, slow_start_seconds=60), abs=10)
    assert "load_verdicts" not in state.calls


def test_a_timed_wave_admits_whole_batches_after_the_first_message() -> None:
    clock, state = Clock(), FakeStateStore()
    ramp = wave(state, clock, verdicts=False)

    rooms = []
    for _ in range(200):  # about 750 in the 60 s slow start, then the rate limiter alone paces
        admission = ramp.admit(never)
        ramp.settle(admission.room, admission.room)
        rooms.append(admission.room)

    assert rooms[0] == 1 and set(rooms[1:]) == {10}
    assert ramp.at_full_rate and clock.paused


def test_a_full_wave_reads_the_verdicts_again_and_trips_when_the_consumer_breaks() -> None:
    clock, state = Clock(), FakeStateStore()
    state.verdicts[KEY] = [VerdictCounts(ok=3), VerdictCounts(ok=3, transient=40)]
    ramp = wave(state, clock)
    ramp.settle(ramp.admit(never).room, 3)

    admitted = 0
    while not (admission := ramp.admit(never)).trip:
        ramp.settle(admission.room, admission.room)
        admitted += admission.room
        assert admitted <= 10 * VERDICT_CHECK_EVERY, "never tripped"

    assert VERDICT_CHECK_EVERY - 10 < admitted <= VERDICT_CHECK_EVERY + 10


def test_a_wave_gives_up_waiting_when_the_run_is_out_of_time() -> None:
    clock, state = Clock(), FakeStateStore()
    ramp = wave(state, clock)
    ramp.settle(ramp.admit(never).room, 3)

    assert ramp.admit(lambda: True) == Admission(0, None)


@pytest.mark.parametrize("verdicts", [True, False])
def test_a_wave_that_follows_a_ramped_run_starts_at_full_rate(verdicts: bool) -> None:
    clock, state = Clock(), FakeStateStore()
    ramp = wave(state, clock, verdicts=verdicts, ramped=True)

    first = ramp.admit(never)

    assert first.room == 10 and not (first.tag and first.tag.probe) and clock.paused == []
    assert ramp.at_full_rate


def test_a_timed_wave_is_at_full_rate_once_its_slow_start_is_over() -> None:
    clock, state = Clock(), FakeStateStore()
    ramp = wave(state, clock, verdicts=False)
    ramp.admit(never)
    before = ramp.at_full_rate

    clock.now += 60

    assert (before, ramp.at_full_rate) == (False, True)


def test_a_wave_still_probing_is_not_at_full_rate() -> None:
    clock, state = Clock(), FakeStateStore()
    ramp = wave(state, clock)

    ramp.settle(ramp.admit(never).room, 3)

    assert not ramp.at_full_rate
