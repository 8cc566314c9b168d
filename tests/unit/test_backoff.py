"""redriver.decide.backoff.redrive_delay: exponential steps with equal jitter, capped."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redriver.decide.backoff import SQS_MAX_DELAY_SECONDS, redrive_delay


class MaxJitter(random.Random):
    """An rng whose jitter is always the largest possible, so the delay equals the full step."""

    def uniform(self, a: float, b: float) -> float:
        return b


class NoJitter(random.Random):
    def uniform(self, a: float, b: float) -> float:
        return a


def delay(n: int, base: int = 60, cap: int = 900, rng: random.Random | None = None) -> int:
    return redrive_delay(n, base_seconds=base, max_seconds=cap, rng=rng or random.Random(1))


@pytest.mark.parametrize("seed", range(20))
def test_first_redrive_delay_is_between_half_the_base_and_the_base(seed: int) -> None:
    assert 30 <= delay(1, base=60, rng=random.Random(seed)) <= 60


@pytest.mark.parametrize(("n", "step"), [(1, 10), (2, 20), (3, 40), (4, 80), (5, 160)])
def test_step_doubles_with_each_redrive(n: int, step: int) -> None:
    assert delay(n, base=10, rng=MaxJitter()) == step
    assert delay(n, base=10, rng=NoJitter()) == step // 2


def test_delay_is_capped_at_max_seconds() -> None:
    assert delay(10, base=60, cap=300, rng=MaxJitter()) == 300


def test_delay_never_exceeds_the_sqs_limit_even_if_max_seconds_is_larger() -> None:
    assert delay(10, base=60, cap=5_000, rng=MaxJitter()) == SQS_MAX_DELAY_SECONDS


def test_a_huge_redrive_number_is_still_capped() -> None:
    assert delay(10_000, base=1, cap=120, rng=MaxJitter()) == 120


@pytest.mark.parametrize("n", [0, -1])
def test_redrive_number_below_one_is_rejected(n: int) -> None:
    with pytest.raises(ValueError, match="redrive_number"):
        delay(n)


@pytest.mark.parametrize("n", [1, 5, 40])
def test_zero_base_gives_zero_delay(n: int) -> None:
    assert delay(n, base=0, rng=MaxJitter()) == 0


def test_same_seed_gives_same_delay() -> None:
    delays = {delay(3, base=7, rng=random.Random(42)) for _ in range(5)}
    assert len(delays) == 1


@given(
    n=st.integers(min_value=1, max_value=60),
    base=st.integers(min_value=0, max_value=900),
    cap=st.integers(min_value=0, max_value=2_000),
    seed=st.integers(),
)
def test_delay_is_within_half_step_and_cap(n: int, base: int, cap: int, seed: int) -> None:
    capped = min(cap, SQS_MAX_DELAY_SECONDS)
    step = min(capped, base * 2 ** (n - 1))
    assert math.ceil(step / 2) <= delay(n, base=base, cap=cap, rng=random.Random(seed)) <= capped
