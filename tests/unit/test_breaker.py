"""sqs_redriver.core.breaker: the circuit breaker's pure state machine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from sqs_redriver.core.breaker import (
    Breaker,
    BreakerPolicy,
    Canary,
    Evidence,
    Mode,
    RunOutcome,
    State,
    begin_run,
    canary_passed,
    end_redrive_run,
    is_failed_run,
    ratio_failed,
    trips_now,
    with_canary,
    without_canary,
)

POLICY = BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2, failure_ratio=0.5)
T0 = 1_000
OK = RunOutcome(received=10, returned=0, errors=0)
BAD = RunOutcome(received=10, returned=10, errors=0)
AWS_FAILED = RunOutcome(received=10, returned=0, errors=1)


def half_open(successes: int = 0, verdict_at: int | None = None) -> Breaker:
    canary = None if verdict_at is None else Canary(("id-1",), verdict_at)
    return Breaker(State.HALF_OPEN, successes=successes, changed_at=T0, version=7, canary=canary)


def test_closed_breaker_redrives_unchanged() -> None:
    breaker = Breaker(version=4)
    assert begin_run(breaker, T0, POLICY) == (breaker, Mode.REDRIVE)


def test_open_breaker_within_cooldown_skips_and_keeps_the_same_record() -> None:
    breaker = Breaker(State.OPEN, changed_at=T0, version=3)
    after, mode = begin_run(breaker, T0 + 59, POLICY)
    assert mode is Mode.SKIP
    assert after is breaker


@pytest.mark.parametrize("elapsed", [60, 3_600])
def test_open_breaker_after_cooldown_goes_half_open_and_probes(elapsed: int) -> None:
    breaker = Breaker(State.OPEN, changed_at=T0, version=3)
    after, mode = begin_run(breaker, T0 + elapsed, POLICY)
    assert mode is Mode.PROBE
    assert (after.state, after.version, after.changed_at) == (State.HALF_OPEN, 4, T0 + elapsed)


def test_half_open_without_canary_probes() -> None:
    breaker = half_open()
    assert begin_run(breaker, T0, POLICY) == (breaker, Mode.PROBE)


def test_half_open_with_canary_before_its_verdict_watches() -> None:
    breaker = half_open(verdict_at=T0 + 100)
    assert begin_run(breaker, T0 + 99, POLICY) == (breaker, Mode.WATCH)


def test_canary_past_its_verdict_window_asks_for_a_verdict_without_changing_the_record() -> None:
    breaker = half_open(successes=0, verdict_at=T0 + 100)
    assert begin_run(breaker, T0 + 100, POLICY) == (breaker, Mode.VERDICT)


def test_a_passed_canary_counts_a_success_and_frees_the_probe() -> None:
    breaker = half_open(successes=0, verdict_at=T0 + 100)
    after = canary_passed(breaker, T0 + 100, POLICY, Evidence.RETURNS)
    assert after == replace(breaker, successes=1, canary=None, version=8)


def test_a_passed_canary_reaching_the_threshold_closes_the_breaker() -> None:
    breaker = replace(half_open(successes=1, verdict_at=T0 + 100), failures=2)
    after = canary_passed(breaker, T0 + 200, POLICY, Evidence.RETURNS)
    assert after == Breaker(
        State.CLOSED, failures=0, successes=0, changed_at=T0 + 200, version=8, evidence=Evidence.RETURNS
    )


def test_only_a_canary_in_flight_can_pass() -> None:
    with pytest.raises(ValueError, match="canary in flight"):
        canary_passed(half_open(), T0, POLICY, Evidence.RETURNS)


@pytest.mark.parametrize("state", [State.CLOSED, State.OPEN])
def test_a_canary_needs_a_half_open_breaker(state: State) -> None:
    with pytest.raises(ValueError, match=state.value):
        with_canary(Breaker(state), Canary(("id-1",), T0))


def test_with_canary_records_the_canary_and_bumps_the_version() -> None:
    after = with_canary(half_open(), Canary(("a", "b"), T0 + 90))
    assert (after.canary, after.version) == (Canary(("a", "b"), T0 + 90), 8)


@pytest.mark.parametrize(
    ("received", "returned", "errors", "failed"),
    [
        (10, 0, 1, True),  # any AWS error fails the run
        (0, 0, 1, True),
        (10, 5, 0, True),  # exactly the ratio
        (10, 10, 0, True),
        (10, 4, 0, False),  # below the ratio
        (10, 0, 0, False),
        (0, 0, 0, False),
    ],
)
def test_is_failed_run(received: int, returned: int, errors: int, failed: bool) -> None:
    assert is_failed_run(RunOutcome(received, returned, errors), POLICY) is failed


def test_empty_run_changes_nothing_because_an_empty_dlq_proves_nothing() -> None:
    assert end_redrive_run(Breaker(failures=2, version=5), RunOutcome(0, 0, 0), T0, POLICY) is None


def test_runs_failed_by_aws_errors_accumulate_then_open_the_breaker_at_the_threshold() -> None:
    breaker = Breaker(version=0)
    for expected_failures in (1, 2):
        breaker = end_redrive_run(breaker, AWS_FAILED, T0, POLICY)
        assert (breaker.state, breaker.failures) == (State.CLOSED, expected_failures)
    opened = end_redrive_run(breaker, AWS_FAILED, T0 + 5, POLICY)
    assert opened == Breaker(
        State.OPEN, changed_at=T0 + 5, version=3, evidence=Evidence.ERRORS, judged_until=T0 + 5
    )


def test_a_run_failed_by_ratio_opens_the_breaker_at_once() -> None:
    # the first run whose re-drives returned, not the third: waiting would send the backlog into the
    # outage again
    opened = end_redrive_run(Breaker(version=0), BAD, T0, POLICY)
    assert opened == Breaker(State.OPEN, changed_at=T0, version=1, evidence=Evidence.RETURNS, judged_until=T0)
    assert trips_now(Breaker(version=0), BAD, POLICY)


@pytest.mark.parametrize(
    ("returned", "received", "failed"),
    [
        (1, 1, False),  # a lone poison message: 100 % of the run, but one message proves nothing
        (2, 2, False),
        (3, 3, True),  # the minimum volume (3) is reached
        (3, 7, False),  # and the ratio still applies
    ],
)
def test_the_ratio_needs_a_minimum_volume_of_returned_messages(
    returned: int, received: int, failed: bool
) -> None:
    outcome = RunOutcome(received=received, returned=returned, errors=0)
    assert ratio_failed(outcome, POLICY) is failed
    assert trips_now(Breaker(version=0), outcome, POLICY) is failed


@pytest.mark.parametrize(
    ("ok", "transient", "failed"),
    [(0, 2, False), (0, 3, True), (3, 3, True), (4, 3, False), (10, 0, False)],
)
def test_the_consumer_kits_transient_verdicts_fail_a_run_by_the_same_rule(
    ok: int, transient: int, failed: bool
) -> None:
    outcome = RunOutcome(received=0, returned=0, errors=0, ok_verdicts=ok, transient_verdicts=transient)
    assert ratio_failed(outcome, POLICY) is failed


def test_a_canary_that_proved_nothing_releases_the_probe() -> None:
    released = without_canary(half_open(successes=1, verdict_at=T0))
    assert (released.state, released.canary, released.successes, released.version) == (
        State.HALF_OPEN,
        None,
        1,
        8,
    )
    with pytest.raises(ValueError, match="HALF_OPEN"):
        without_canary(Breaker())


def test_good_run_resets_failures() -> None:
    after = end_redrive_run(Breaker(failures=2, version=5), OK, T0, POLICY)
    assert (after.failures, after.version, after.state) == (0, 6, State.CLOSED)


def test_good_run_without_prior_failures_needs_no_write() -> None:
    assert end_redrive_run(Breaker(version=5), OK, T0, POLICY) is None


@pytest.mark.parametrize("breaker", [Breaker(State.OPEN), half_open()])
def test_end_redrive_run_ignores_a_breaker_that_is_not_closed(breaker: Breaker) -> None:
    assert end_redrive_run(breaker, BAD, T0, POLICY) is None


AT_7 = Breaker(version=7)


@pytest.mark.parametrize(
    "transition",
    [
        pytest.param(lambda: AT_7.opened(T0, Evidence.RETURNS), id="opened"),
        pytest.param(lambda: AT_7.closed(T0, Evidence.OPERATOR), id="closed"),
        pytest.param(lambda: end_redrive_run(AT_7, AWS_FAILED, T0, POLICY), id="failure-counted"),
        pytest.param(
            lambda: end_redrive_run(replace(AT_7, failures=2), AWS_FAILED, T0, POLICY), id="tripped"
        ),
        pytest.param(lambda: end_redrive_run(AT_7, BAD, T0, POLICY), id="tripped-by-ratio"),
        pytest.param(lambda: without_canary(half_open(verdict_at=T0)), id="canary-released"),
        pytest.param(lambda: end_redrive_run(replace(AT_7, failures=1), OK, T0, POLICY), id="reset"),
        pytest.param(lambda: with_canary(half_open(), Canary(("x",), T0)), id="canary"),
        pytest.param(lambda: begin_run(Breaker(State.OPEN, version=7), T0 + 60, POLICY)[0], id="half-open"),
        pytest.param(
            lambda: canary_passed(half_open(verdict_at=T0), T0, POLICY, Evidence.RETURNS),
            id="success-counted",
        ),
        pytest.param(
            lambda: canary_passed(half_open(successes=1, verdict_at=T0), T0, POLICY, Evidence.RETURNS),
            id="recovered",
        ),
    ],
)
def test_every_transition_increments_version_by_exactly_one(transition: Callable[[], Breaker]) -> None:
    assert transition().version == 8


def test_failure_ratio_is_compared_exactly_not_in_floating_point() -> None:
    # 0.07 * 100 is 7.000000000000001 as a float; 7 of 100 must still reach a 7% ratio
    assert is_failed_run(RunOutcome(received=100, returned=7, errors=0), BreakerPolicy(failure_ratio=0.07))
