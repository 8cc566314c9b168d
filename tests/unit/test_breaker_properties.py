"""decide/breaker.py: invariants of the circuit breaker over any sequence of runs, outcomes,
probes and verdicts (Hypothesis)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.breaker import (
    Breaker,
    BreakerPolicy,
    Canary,
    Evidence,
    RunOutcome,
    State,
    begin_run,
    canary_passed,
    end_redrive_run,
    is_failed_run,
    trips_now,
    with_canary,
    without_canary,
)
from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.runtime.canary import after_consumer_verdicts
from tests.support.record_strategies import robust

policies = st.builds(
    BreakerPolicy,
    failure_threshold=st.integers(1, 5),
    cooldown_seconds=st.integers(0, 120),
    success_threshold=st.integers(1, 5),
    failure_ratio=st.sampled_from([0.01, 0.25, 0.5, 0.75, 1.0]),
    minimum_volume=st.integers(0, 5),
)
outcomes = st.builds(
    RunOutcome,
    received=st.integers(0, 20),
    returned=st.integers(0, 20),
    errors=st.integers(0, 2),
    ok_verdicts=st.integers(0, 20),
    transient_verdicts=st.integers(0, 20),
)
verdicts = st.builds(
    VerdictCounts, ok=st.integers(0, 3), transient=st.integers(0, 3), terminal=st.integers(0, 3)
)
EMPTY = RunOutcome(received=0, returned=0, errors=0)
ALLOWED = {
    State.CLOSED: {State.CLOSED, State.OPEN},
    State.OPEN: {State.OPEN, State.HALF_OPEN},
    State.HALF_OPEN: {State.HALF_OPEN, State.OPEN, State.CLOSED},
}


def step(
    breaker: Breaker, event: str, data: st.DataObject, policy: BreakerPolicy, now: int
) -> Breaker | None:
    """One event of a run on ``breaker``: the record after it, or None when nothing changes."""
    if event == "tick":
        moved, _ = begin_run(breaker, now, policy)
        return None if moved is breaker else moved
    if breaker.state is State.CLOSED:
        outcome = data.draw(outcomes)
        if event == "trip":
            return breaker.opened(now, Evidence.RETURNS) if trips_now(breaker, outcome, policy) else None
        after = end_redrive_run(breaker, outcome, now, policy)
        assert after is None or after.state is not State.OPEN or is_failed_run(outcome, policy)
        return after
    if breaker.state is State.HALF_OPEN and breaker.canary is None:
        return with_canary(breaker, Canary(("c-1",), verdict_at=now + 60, sent_at=now))
    if breaker.state is State.HALF_OPEN:
        if event == "trip":
            return canary_passed(breaker, now, policy, Evidence.RETURNS)
        if event == "redrive":
            return without_canary(breaker)
        return after_consumer_verdicts(breaker, data.draw(verdicts), now, policy)
    return None


@robust
@given(
    policies,
    st.lists(st.tuples(st.sampled_from(["tick", "redrive", "trip", "verdict"]), st.integers(0, 200))),
    st.data(),
)
def test_any_sequence_keeps_the_breakers_invariants(
    policy: BreakerPolicy, events: list[tuple[str, int]], data: st.DataObject
) -> None:
    breaker, now = Breaker(), 1_000
    for event, elapsed in events:
        now += elapsed
        after = step(breaker, event, data, policy, now)
        if after is None:
            continue
        assert after.state in State and after.state in ALLOWED[breaker.state]
        assert after.version == breaker.version + 1  # each transition: one version more
        assert after.state is not State.CLOSED or after.failures < policy.failure_threshold
        assert after.state is not State.HALF_OPEN or after.successes < policy.success_threshold
        assert after.state is not State.OPEN or after.canary is None
        breaker = after


@robust
@given(policies, st.sampled_from(State), st.integers(0, 5), st.integers(0, 10**6))
def test_an_empty_dlq_never_changes_a_breaker(
    policy: BreakerPolicy, state: State, failures: int, now: int
) -> None:
    breaker = Breaker(state=state, failures=failures, changed_at=now, version=3)
    assert end_redrive_run(breaker, EMPTY, now, policy) is None
    assert not trips_now(breaker, EMPTY, policy)


@robust
@given(policies, st.integers(0, 10**6), st.integers(1, 10**9))
def test_time_alone_never_opens_a_breaker_nor_closes_an_open_one(
    policy: BreakerPolicy, now: int, ahead: int
) -> None:
    for breaker in (
        Breaker(changed_at=now + ahead),
        Breaker().opened(now + ahead, Evidence.RETURNS),
        Breaker().opened(now, Evidence.RETURNS),
    ):
        moved, _ = begin_run(breaker, now + ahead // 2, policy)
        assert moved.state is not State.OPEN or breaker.state is State.OPEN
        assert breaker.state is not State.OPEN or moved.state in (State.OPEN, State.HALF_OPEN)
