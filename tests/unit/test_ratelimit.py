"""The token bucket, on a fake clock: its achieved rate, never asserted with real time."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.transfer import TokenBucket


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def bucket(rate: float, burst: float = 10) -> tuple[TokenBucket, FakeTime]:
    time = FakeTime()
    return TokenBucket(rate, burst=burst, clock=time.clock, sleep=time.sleep), time


def test_a_full_bucket_lets_a_burst_through_without_waiting() -> None:
    limiter, time = bucket(rate=50)
    assert limiter.acquire(10) == 0 and time.now == 0


@given(rate=st.integers(min_value=1, max_value=500), batches=st.integers(min_value=5, max_value=200))
def test_the_achieved_rate_matches_the_setting_within_ten_percent(rate: int, batches: int) -> None:
    limiter, time = bucket(rate=rate)
    for _ in range(batches):
        limiter.acquire(10)
    # the first burst is free; every later token waits its turn
    achieved = (batches * 10 - 10) / time.now
    assert achieved == pytest.approx(rate, rel=0.10)


def test_tokens_refill_with_time() -> None:
    limiter, time = bucket(rate=10)
    limiter.acquire(10)
    time.now += 0.5
    assert limiter.acquire(5) == 0


def test_asking_for_more_than_the_bucket_holds_is_an_error() -> None:
    limiter, _ = bucket(rate=10, burst=10)
    with pytest.raises(ValueError, match="cannot take 11"):
        limiter.acquire(11)


def test_prepaid_tokens_are_waited_for_ahead_and_the_acquire_that_follows_does_not_wait() -> None:
    limiter, time = bucket(rate=50)
    limiter.acquire(10)  # the burst is gone

    assert limiter.prepay(10) == pytest.approx(0.2) and time.now == pytest.approx(0.2)
    assert limiter.prepay(10) == 0  # held already: nothing more is taken
    assert limiter.acquire(10) == 0 and time.now == pytest.approx(0.2)
    assert limiter.acquire(10) == pytest.approx(0.2)  # nothing held any more: it waits again


def test_a_prepaid_batch_sent_short_keeps_the_rest_for_the_next_one() -> None:
    limiter, time = bucket(rate=50)
    limiter.acquire(10)
    limiter.prepay(10)

    assert limiter.acquire(4) == 0
    assert limiter.prepay(10) == pytest.approx(4 / 50)  # tops up to a batch: four more


@given(rate=st.integers(min_value=1, max_value=500), batches=st.integers(min_value=5, max_value=100))
def test_prepaying_each_batch_keeps_the_achieved_rate(rate: int, batches: int) -> None:
    limiter, time = bucket(rate=rate)
    for _ in range(batches):
        limiter.prepay(10)
        limiter.acquire(10)
    achieved = (batches * 10 - 10) / time.now
    assert achieved == pytest.approx(rate, rel=0.10)
