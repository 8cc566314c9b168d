"""sqs_redriver.runtime.canary: the probe's record and the verdict its absence gives."""

from __future__ import annotations

import pytest

from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Canary, State
from sqs_redriver.core.message import track
from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.runtime.canary import Verdict, after_consumer_verdicts, claim, judge
from tests.support.fakes import dlq_message

NOW = 1_800_000_000
CANARY = Canary(("id-1",), verdict_at=NOW, groups=("g",), sent_at=NOW - 90)


def test_the_claim_names_the_canaries_and_their_verdict_time() -> None:
    canaries = track([dlq_message("a", group="g"), dlq_message("b", group="h")], {}, NOW).unique

    fifo = claim(canaries, window_seconds=90, now=NOW, fifo=True)
    standard = claim(canaries, window_seconds=90, now=NOW, fifo=False)

    assert fifo == Canary(tuple(t.mark.identity for t in canaries), NOW + 90, ("g", "h"), NOW)
    assert standard.groups == ()


def test_a_canary_that_stayed_away_and_could_be_seen_passed() -> None:
    assert judge(CANARY, may_have_hidden=False, now=NOW) is Verdict.PASSED


def test_a_canary_that_may_hide_behind_its_group_is_judged_after_a_second_window() -> None:
    window = CANARY.verdict_at - CANARY.sent_at

    assert judge(CANARY, may_have_hidden=True, now=NOW) is Verdict.POSTPONED
    assert judge(CANARY, may_have_hidden=True, now=NOW + window - 1) is Verdict.POSTPONED
    assert judge(CANARY, may_have_hidden=True, now=NOW + window) is Verdict.FAILED


@pytest.mark.parametrize(
    ("verdicts", "state", "successes", "canary_left"),
    [
        (VerdictCounts(ok=1), State.HALF_OPEN, 1, False),  # one success of two
        (VerdictCounts(transient=1), State.OPEN, 0, False),  # still broken
        (VerdictCounts(ok=1, transient=1), State.OPEN, 0, False),  # a failure outweighs
        (VerdictCounts(terminal=1), State.HALF_OPEN, 0, False),  # poison: probe released
    ],
)
def test_the_consumer_kits_verdict_on_a_canary_moves_the_breaker(
    verdicts: VerdictCounts, state: State, successes: int, canary_left: bool
) -> None:
    breaker = Breaker(State.HALF_OPEN, changed_at=0, version=3, canary=Canary(("id-1",), 100, sent_at=10))

    after = after_consumer_verdicts(breaker, verdicts, 50, BreakerPolicy(success_threshold=2))

    assert after is not None
    assert (after.state, after.successes, after.canary is not None) == (state, successes, canary_left)


def test_no_verdict_yet_leaves_the_canary_in_flight() -> None:
    breaker = Breaker(State.HALF_OPEN, version=3, canary=Canary(("id-1",), 100, sent_at=10))
    assert after_consumer_verdicts(breaker, VerdictCounts(), 50, BreakerPolicy()) is None
    assert breaker.canary is not None and breaker.canary.verdict_key == "canary/10/id-1"
