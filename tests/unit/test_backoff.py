"""sqs_redriver.runtime.backoff: exponential steps with equal jitter, capped; steps past 900 s waited
out in the DLQ until due."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.message import Tracked, track
from sqs_redriver.protocol.limits import SQS_MAX_DELAY_SECONDS
from sqs_redriver.runtime.backoff import dlq_waits, due_at, redrive_delay, waits_in_dlq
from tests.support.fakes import dlq_message, marked

NOW = 1_800_000_000


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


def test_a_cap_past_the_sqs_delay_limit_lets_steps_grow_past_it() -> None:
    assert delay(10, base=60, cap=5_000, rng=MaxJitter()) == 5_000


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
    cap=st.integers(min_value=0, max_value=86_400),
    seed=st.integers(),
)
def test_delay_is_within_half_step_and_cap(n: int, base: int, cap: int, seed: int) -> None:
    step = min(cap, base * 2 ** (n - 1))
    assert math.ceil(step / 2) <= delay(n, base=base, cap=cap, rng=random.Random(seed)) <= step


# -- steps past 900 s: waited out in the DLQ (standard queues) -------------------------------------


def tracked(count: int, last_at: int = 0, identity: str = "id-1") -> Tracked:
    return track([marked(count, last_at=last_at, identity=identity)], {}, NOW).unique[0]


@pytest.mark.parametrize(("count", "waits"), [(0, False), (3, False), (4, True), (20, True)])
def test_a_message_waits_in_the_dlq_when_its_step_before_jitter_is_past_900_seconds(
    count: int, waits: bool
) -> None:
    # base 60: steps 60, 120, 240, 480, 960 (the 5th re-drive, count 4), ...
    assert waits_in_dlq(tracked(count), base_seconds=60, max_seconds=86_400) is waits


def test_a_cap_of_900_seconds_never_waits_in_the_dlq() -> None:
    assert not waits_in_dlq(tracked(20), base_seconds=60, max_seconds=SQS_MAX_DELAY_SECONDS)


def test_a_long_step_is_due_from_the_last_redrive_the_same_in_every_run() -> None:
    # GIVEN the 8th re-drive with base 60: a step of 7,680 s, so due 3,840-7,680 s after the 7th
    t = tracked(7, last_at=NOW - 100)

    due = due_at(t, now=NOW, base_seconds=60, max_seconds=86_400)

    assert NOW - 100 + 3_840 <= due <= NOW - 100 + 7_680
    assert due_at(t, now=NOW + 3_000, base_seconds=60, max_seconds=86_400) == due


def test_a_send_stamped_ahead_of_the_run_s_clock_is_due_as_if_sent_now() -> None:
    # SQS's clock a second ahead of the run's: a first re-drive with no delay is due now, not later
    (ahead,) = track([dlq_message(sent_at=NOW + 1)], {}, NOW).unique

    assert due_at(ahead, now=NOW, base_seconds=0, max_seconds=0) == NOW


def test_only_messages_with_a_long_step_that_are_not_due_wait_each_on_its_own() -> None:
    short = tracked(1, last_at=NOW, identity="short")  # 120 s step: DelaySeconds
    waiting = tracked(7, last_at=NOW, identity="waiting")
    due = tracked(7, last_at=NOW - 8_000, identity="due")  # its 7,680 s step is over

    waits = dlq_waits([waiting, short, due], now=NOW, base_seconds=60, max_seconds=86_400)

    assert list(waits) == [waiting.message_id] and 3_840 <= waits[waiting.message_id] <= 7_680
