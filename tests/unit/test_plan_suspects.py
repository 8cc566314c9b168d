"""decide/plan.py with the source queue's metrics (decide/suspicion.py): a suspect is parked at its
limit with the metric-based reason, never held against the breaker, never a canary; a first
failure in an outage counts against the breaker, and the breaker opens on it naming the metrics."""

from __future__ import annotations

import random
from dataclasses import replace

from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Canary, Evidence, Mode, State
from sqs_redriver.core.message import track
from sqs_redriver.core.table import ParkCause
from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.consumer_health import ConsumerSignal, Minute, QueueActivity
from sqs_redriver.runtime.plan import BatchPlan, BatchState, Planner, PlanRules
from sqs_redriver.runtime.report import StopReason, Tally
from sqs_redriver.runtime.routing import Routes
from tests.support.fakes import dlq_message, queue_url

NOW = 1_800_000_000 - 1_800_000_000 % 60
SENT = NOW - 1200  # sent 20 minutes ago: its span (delay + 18 minutes) is over
ORDERS = queue_url("orders")
POLICY = BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2, failure_ratio=0.5)
RULES = PlanRules(
    max_redrive_count=5,
    fifo=False,
    canary_size=1,
    base_delay_seconds=60,
    max_delay_seconds=900,
    breaker=POLICY,
    routes=Routes((ORDERS,)),
    suspect_limit=3,
)


def signal(*minutes: Minute) -> dict[str, ConsumerSignal]:
    activity = QueueActivity(ORDERS, NOW - 3 * 3600, NOW - 180, minutes)
    return {ORDERS: ConsumerSignal(activity, max_receive_count=5, visibility_timeout_seconds=180)}


BUSY = signal(Minute(SENT, received=50, deleted=40), Minute(SENT + 180, received=10))
DOWN = signal(Minute(SENT, received=30), Minute(SENT + 180, received=30), Minute(SENT + 360, received=30))


def plan(
    batch: list[DlqMessage], signals: dict[str, ConsumerSignal], mode: Mode = Mode.REDRIVE, **state: object
) -> BatchPlan:
    breaker = state.pop("breaker", Breaker())
    so_far = Tally(received=len(batch))
    batch_state = BatchState(mode, breaker, so_far, NOW, signals=signals)  # type: ignore[arg-type]
    return Planner(RULES, random.Random(7)).plan(track(batch, {}, NOW), batch_state)


def first_failure(body: str) -> DlqMessage:
    return dlq_message(body, sent_at=SENT)


def suspect(body: str, failures: int) -> DlqMessage:
    mark = Mark(
        f"id-{body}", count=failures, first_failed_at=SENT - 3600, redriven_at=(SENT,), suspected=failures
    )
    return dlq_message(body, mark=mark)


def test_a_suspect_at_its_limit_is_parked_saying_what_the_consumer_did_meanwhile() -> None:
    result = plan([suspect("poison", 2), first_failure("fresh")], BUSY)
    [park] = result.park
    assert park.tracked.message.body == "poison" and park.reason.cause is ParkCause.SUSPECT
    assert (
        park.reason.why
        == "failed 3 times while the consumer processed 40 others (limit 3): poison, not an outage"
    )
    [redrive] = result.redrive
    assert redrive.tracked.mark.suspected == 1  # the fresh one failed among processed messages: a suspect


def test_suspects_never_count_against_the_breaker() -> None:
    result = plan([suspect(f"p{i}", 1) for i in range(10)], BUSY)
    assert (result.returned, result.open_breaker, len(result.redrive)) == (0, False, 10)


def test_first_failures_in_an_outage_open_the_breaker_before_any_redrive_naming_the_metrics() -> None:
    result = plan([first_failure(f"o{i}") for i in range(10)], DOWN)
    assert result.open_breaker and result.stop is StopReason.BREAKER_OPENED and not result.redrive
    assert (result.returned, result.evidence) == (10, Evidence.METRICS)


def test_without_a_reading_first_failures_are_redriven_as_before() -> None:
    result = plan([first_failure(f"o{i}") for i in range(10)], {})
    assert (result.returned, result.open_breaker, len(result.redrive)) == (0, False, 10)


def test_a_suspect_is_never_chosen_as_a_canary() -> None:
    half_open = Breaker(State.HALF_OPEN, changed_at=NOW - 60, version=4)
    # no reading this run: the suspect is known from its mark
    result = plan([suspect("poison", 1), first_failure("good")], {}, mode=Mode.PROBE, breaker=half_open)
    assert [t.message.body for t in result.canaries] == ["good"]
    only_suspects = plan([suspect("poison", 1)], {}, mode=Mode.PROBE, breaker=half_open)
    assert only_suspects.canaries == ()


def test_a_watch_scan_does_not_count_suspects_or_park_a_canary_early() -> None:
    canary = Canary(("id-good",), NOW + 600, sent_at=NOW - 60)
    watching = Breaker(State.HALF_OPEN, changed_at=NOW - 60, version=5, canary=canary)
    result = plan([suspect("poison", 1)], BUSY, mode=Mode.WATCH, breaker=watching)
    assert not result.open_breaker and result.redrive == ()


def test_a_failure_back_before_the_breakers_last_change_is_not_counted_again() -> None:
    # it opened the breaker; the breaker closed on the metrics a few minutes later
    closed_since = Breaker(State.CLOSED, changed_at=SENT + 960, version=3)
    result = plan([first_failure(f"o{i}") for i in range(10)], DOWN, breaker=closed_since)
    assert (result.returned, result.open_breaker) == (0, False)


def test_on_fifo_a_suspect_at_the_head_of_its_group_keeps_the_group_from_giving_a_canary() -> None:
    half_open = Breaker(State.HALF_OPEN, changed_at=NOW - 60, version=4)
    head = Mark("id-head", count=1, first_failed_at=SENT, redriven_at=(SENT,), suspected=1)
    batch = [dlq_message("head", mark=head, group="g"), dlq_message("behind", group="g", sent_at=SENT)]
    fifo = replace(RULES, fifo=True)
    state = BatchState(Mode.PROBE, half_open, Tally(received=2), NOW)
    result = Planner(fifo, random.Random(7)).plan(track(batch, {}, NOW), state)
    assert result.canaries == ()


def test_a_canary_found_back_opens_the_breaker_naming_the_returns_not_the_metrics() -> None:
    canary = Canary(("id-c",), NOW + 600, sent_at=NOW - 1200)
    watching = Breaker(State.HALF_OPEN, changed_at=NOW - 1200, version=5, canary=canary)
    back = Mark("id-c", count=1, first_failed_at=SENT, redriven_at=(NOW - 1200,))
    batch = [dlq_message("c", mark=back), *(first_failure(f"o{i}") for i in range(5))]
    result = plan(batch, DOWN, mode=Mode.VERDICT, breaker=watching)
    assert result.open_breaker and result.evidence is Evidence.RETURNS
