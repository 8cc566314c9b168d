"""decide.retention and the planner's guard: a message near the end of the DLQ's retention
is parked in every mode, and holds in the DLQ end before its expiring window; no AWS."""

from __future__ import annotations

import random

import pytest

from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Canary, Mode, State
from sqs_redriver.core.message import Tracked, track
from sqs_redriver.core.table import ParkCause
from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.plan import BatchPlan, BatchState, Planner, PlanRules
from sqs_redriver.runtime.report import Tally
from sqs_redriver.runtime.retention import Retention, capped_hold, expiring, guarded, sweep_interval
from sqs_redriver.runtime.routing import Routes
from tests.support.fakes import dlq_message, marked, queue_url

NOW = 1_800_000_000
DAY = 86_400
RETENTION = Retention(seconds=4 * DAY, margin_seconds=DAY)
ORDERS = queue_url("orders")
# A message this old enters the expiring window now.
WINDOW_AGE = RETENTION.seconds - RETENTION.margin_seconds


def tracked(message: DlqMessage) -> Tracked:
    return Tracked(message, message.mark or Mark(message.message_id))


def aged(age: int, body: str = "{}", **kwargs: object) -> DlqMessage:
    return dlq_message(body, sent_at=NOW - age, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("age", "parked"),
    [
        (0, False),
        (WINDOW_AGE - 1, False),
        (WINDOW_AGE, True),
        (RETENTION.seconds - 1, True),
        (10 * DAY, True),
    ],
)
def test_a_message_is_expiring_from_retention_minus_margin_on(age: int, parked: bool) -> None:
    assert expiring(tracked(aged(age)), RETENTION, now=NOW) is parked


def test_a_message_without_a_sent_timestamp_is_never_expiring() -> None:
    assert not expiring(tracked(dlq_message()), RETENTION, now=NOW)


def test_a_hold_that_would_reach_the_expiring_window_ends_where_it_begins() -> None:
    message = tracked(aged(WINDOW_AGE - 100))

    assert capped_hold(message, 900, RETENTION, now=NOW) == 100
    assert capped_hold(message, 60, RETENTION, now=NOW) == 60
    assert capped_hold(tracked(aged(WINDOW_AGE + 5)), 60, RETENTION, now=NOW) == 0
    assert capped_hold(tracked(dlq_message()), 900, RETENTION, now=NOW) == 900


def test_a_sweep_comes_twice_per_margin() -> None:
    assert sweep_interval(DAY) == DAY // 2


# -- the planner's guard --------------------------------------------------------------------------


def plan(
    batch: list[DlqMessage], mode: Mode, breaker: Breaker | None = None, fifo: bool = False
) -> BatchPlan:
    rules = PlanRules(
        max_redrive_count=3,
        fifo=fifo,
        canary_size=1,
        base_delay_seconds=60,
        max_delay_seconds=900,
        breaker=BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2),
        routes=Routes((ORDERS,)),
    )
    state = BatchState(mode, breaker or Breaker(), Tally(received=len(batch)), NOW, retention=RETENTION)
    return Planner(rules, random.Random(7)).plan(track(batch, {}, NOW), state)


HALF_OPEN = Breaker(State.HALF_OPEN, canary=Canary(("id-elsewhere",), NOW + 60))


@pytest.mark.parametrize(
    ("mode", "breaker"),
    [
        (Mode.REDRIVE, None),
        (Mode.PROBE, Breaker(State.HALF_OPEN)),
        (Mode.WATCH, HALF_OPEN),
        (Mode.VERDICT, HALF_OPEN),
        (Mode.SWEEP, Breaker(State.OPEN)),
    ],
)
def test_an_expiring_message_is_parked_with_its_reason_in_every_mode(
    mode: Mode, breaker: Breaker | None
) -> None:
    result = plan([aged(WINDOW_AGE + 60, "old"), aged(60, "young")], mode, breaker)

    [park] = result.park
    assert (park.tracked.message.body, park.reason.cause) == ("old", ParkCause.EXPIRING)
    assert (
        park.reason.source_queue == ORDERS
        and str(NOW - WINDOW_AGE - 60 + RETENTION.seconds) in park.reason.why
    )
    assert "old" not in {
        t.message.body for t in (*result.leave, *result.canaries, *(r.tracked for r in result.redrive))
    }


def test_an_expiring_message_is_parked_even_when_the_batch_trips_the_breaker() -> None:
    returned = [marked(1, last_at=NOW - 10, body=f"back-{i}") for i in range(3)]
    old = marked(1, last_at=NOW - 10, body="old", sent_at=NOW - WINDOW_AGE)

    result = plan([*returned, old], Mode.REDRIVE)

    assert result.open_breaker
    assert [p.tracked.message.body for p in result.park] == ["old"]


def test_a_sweep_redrives_nothing_and_counts_no_returns() -> None:
    result = plan(
        [aged(60, "young"), marked(1, last_at=NOW - 10, body="back")], Mode.SWEEP, Breaker(State.OPEN)
    )

    assert (result.redrive, result.park, result.canaries, result.returned) == ((), (), (), 0)
    assert sorted(t.message.body for t in result.leave) == ["back", "young"]


def test_a_fifo_backoff_hold_ends_before_the_expiring_window() -> None:
    # re-driven 10 s ago: its next re-drive is due 120-240 s later, but it expires sooner
    message = marked(1, last_at=NOW - 10, body="held", group="g", sent_at=NOW - WINDOW_AGE + 30)

    [hold] = plan([message], Mode.REDRIVE, fifo=True).hold

    assert hold.seconds == 30


def test_a_margin_not_shorter_than_the_retention_falls_back_to_a_quarter_of_it() -> None:
    assert guarded(600, 120) == Retention(600, 120)
    assert guarded(600, 600) == Retention(600, 150)
    assert guarded(60, 86_400) == Retention(60, 15)
