"""redriver.decide.canary: the probe's record and the verdict its absence gives."""

from __future__ import annotations

from redriver.decide.breaker import Canary
from redriver.decide.canary import Verdict, claim, judge
from redriver.decide.identity import track
from tests.fakes import dlq_message

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
