"""sqs_redriver.runtime.pace: a large drain's rate climbs while the consumer keeps up and falls as
soon as it does not (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.protocol.limits import DRAIN_STALE_SECONDS
from sqs_redriver.runtime.pace import (
    BACKLOG_FLOOR,
    CONTROL_SECONDS,
    DECREASE,
    MIN_RATE,
    Pace,
    PaceLimits,
    PacePhase,
    keeps_up,
    next_pace,
    resumed,
    stalled,
    starting_pace,
)

LIMITS = PaceLimits(start_rate=50, max_rate=5000, backlog_limit=1000)


def test_the_pace_doubles_while_the_consumer_keeps_up_until_it_first_falls_behind() -> None:
    pace = starting_pace(LIMITS)
    rates = []
    for _ in range(4):
        pace = next_pace(pace, 0, LIMITS)
        rates.append(pace.rate)

    assert rates == [100, 200, 400, 800] and pace.phase is PacePhase.CLIMB


def test_falling_behind_cuts_the_rate_and_the_climb_becomes_a_steady_step() -> None:
    behind = next_pace(Pace(1600), visible=5000, limits=LIMITS)
    after = next_pace(behind, visible=0, limits=LIMITS)

    assert behind == Pace(1600 * DECREASE, PacePhase.STEADY, fell_behind_at=1600)
    assert after.rate == behind.rate + 1600 * 0.05


def test_the_allowance_is_a_tenth_of_a_second_of_the_pace_a_floor_and_the_back_pressure_limit() -> None:
    assert keeps_up(BACKLOG_FLOOR, rate=1) and not keeps_up(BACKLOG_FLOOR + 1, rate=1)
    assert keeps_up(200, rate=2000) and not keeps_up(201, rate=2000)
    assert not keeps_up(1001, rate=40_000, backlog_limit=1000)


def test_past_the_rate_it_fell_behind_at_the_pace_doubles_what_it_is_past_it() -> None:
    limits = PaceLimits(start_rate=50, max_rate=5000)
    below, past = Pace(900, PacePhase.STEADY, 1000), Pace(1200, PacePhase.STEADY, 1000)

    assert next_pace(below, 0, limits).rate == 950  # a twentieth of 1,000
    assert next_pace(past, 0, limits).rate == 1200 + 50 + 200
    assert next_pace(Pace(4900, PacePhase.STEADY, 1000), 0, limits).rate == 5000  # MAX_DRAIN_RATE


def test_a_pace_nobody_stepped_for_a_minute_starts_over() -> None:
    fast = Pace(3000, PacePhase.STEADY, 3200)

    assert resumed(fast, stepped_at=0, now=DRAIN_STALE_SECONDS, limits=LIMITS) == fast
    assert resumed(fast, stepped_at=0, now=DRAIN_STALE_SECONDS + 1, limits=LIMITS) == starting_pace(LIMITS)


def test_a_stored_pace_over_max_drain_rate_is_brought_within_it() -> None:
    lowered = PaceLimits(start_rate=50, max_rate=500)

    assert resumed(Pace(5000), stepped_at=0, now=1, limits=lowered).rate == 500


def test_a_drain_stalls_on_a_backlog_over_the_limit_that_gained_half_of_what_the_pace_sent() -> None:
    assert stalled(1500, 4000, rate=1000, backlog_limit=1000)  # gained 2,500 of 5,000 sent
    assert not stalled(1500, 3900, rate=1000, backlog_limit=1000)  # the consumer took over half
    assert not stalled(900, 4000, rate=1000, backlog_limit=1000)  # over at one step only
    assert not stalled(10**6, 2 * 10**6, rate=10, backlog_limit=0)  # back-pressure off


@given(capacity=st.floats(10, 5000), start=st.floats(1, 5000))
def test_a_consumer_that_keeps_up_at_the_start_never_stalls_the_climb(capacity: float, start: float) -> None:
    """The pace's own overshoot, step by step against a consumer of ``capacity``, never stalls."""
    limits = PaceLimits(start_rate=min(start, capacity), max_rate=5000, backlog_limit=1000)
    pace, visible = starting_pace(limits), 0.0
    for _ in range(40):
        before = visible
        visible = max(0.0, visible + (pace.rate - capacity) * CONTROL_SECONDS)
        assert not stalled(int(before), int(visible), rate=pace.rate, backlog_limit=1000)
        pace = next_pace(pace, int(visible), limits)


@given(
    rate=st.floats(MIN_RATE, 5000),
    phase=st.sampled_from(PacePhase),
    fell=st.floats(0, 5000),
    visible=st.integers(0, 10**7),
)
def test_the_pace_stays_within_its_limits_and_falls_whenever_the_consumer_is_behind(
    rate: float, phase: PacePhase, fell: float, visible: int
) -> None:
    pace = Pace(rate, phase, fell)
    after = next_pace(pace, visible, LIMITS)

    assert MIN_RATE <= after.rate <= LIMITS.max_rate
    if not keeps_up(visible, rate, LIMITS.backlog_limit):
        assert after.rate <= max(MIN_RATE, rate) and after.phase is PacePhase.STEADY
    else:
        assert after.rate >= min(rate, LIMITS.max_rate)
