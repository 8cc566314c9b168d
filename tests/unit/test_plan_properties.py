"""Invariants of the planner (decide.plan) for any batch, mode, breaker and operator marks.

Whatever arrives, a plan accounts for every received message exactly once (re-driven, parked,
held, left or claimed as a canary), never re-drives past the limit, keeps delays within what SQS
takes, and only moves the breaker in the modes that judge the consumer.
"""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Canary, Mode, State
from sqs_redriver.core.message import track
from sqs_redriver.core.table import GroupAction, GroupMark, ParkCause
from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.limits import SQS_MAX_DELAY_SECONDS
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.backoff import MAX_HOLD_SECONDS
from sqs_redriver.runtime.plan import BatchPlan, BatchState, Planner, PlanRules, VerdictTag
from sqs_redriver.runtime.report import Tally
from sqs_redriver.runtime.retention import Retention
from sqs_redriver.runtime.routing import Routes
from tests.support.fakes import dlq_message, queue_url

NOW = 1_800_000_000
ORDERS, PAYMENTS = queue_url("orders"), queue_url("payments")
MAX_REDRIVE_COUNT = 3
FINGERPRINTS = ("fp-a", "fp-b", "fp-c")
MODES = (Mode.REDRIVE, Mode.PROBE, Mode.WATCH, Mode.VERDICT, Mode.SWEEP)


@st.composite
def failures(draw: st.DrawFn) -> Failure | None:
    if not draw(st.booleans()):
        return None
    return Failure(
        kind=draw(st.sampled_from(FailureKind)),
        error_class="ValueError",
        message="bad",
        fingerprint=draw(st.sampled_from(FINGERPRINTS)),
        at=NOW - draw(st.integers(0, 7 * 86_400)),
        attempt=draw(st.integers(1, 5)),
        source=f"arn:aws:sqs:us-east-1:123456789012:{draw(st.sampled_from(['orders', 'payments']))}",
    )


@st.composite
def messages(draw: st.DrawFn, fifo: bool) -> DlqMessage:
    identity = draw(st.sampled_from([f"id-{i}" for i in range(8)]))  # repeats: redelivered copies
    mark = None
    if draw(st.booleans()):
        count = draw(st.integers(0, MAX_REDRIVE_COUNT + 2))
        last = NOW - draw(st.integers(0, 3 * 86_400))
        history = tuple(last - 60 * (count - 1 - i) for i in range(count))
        mark = Mark(identity, count, last - 86_400, history, failure=draw(failures()))
    return dlq_message(
        f"body-{identity}",
        mark=mark,
        group=draw(st.sampled_from(["g1", "g2"])) if fifo else None,
        source=draw(st.sampled_from([None, "orders", "payments", "unknown"])),
        sent_at=NOW - draw(st.integers(0, 14 * 86_400)),
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple[Planner, list[DlqMessage], BatchState]:
    fifo = draw(st.booleans())
    rules = PlanRules(
        max_redrive_count=MAX_REDRIVE_COUNT,
        fifo=fifo,
        canary_size=draw(st.integers(1, 3)),
        base_delay_seconds=draw(st.sampled_from([30, 60, 1200])),
        max_delay_seconds=draw(st.sampled_from([900, 3600, 86_400])),
        breaker=BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2),
        routes=Routes((ORDERS, PAYMENTS)),
    )
    batch = draw(st.lists(messages(fifo), min_size=1, max_size=10))
    mode = draw(st.sampled_from(MODES))
    breaker = Breaker(
        state=State.CLOSED if mode is Mode.REDRIVE else State.HALF_OPEN,
        failures=draw(st.integers(0, 2)) if mode is Mode.REDRIVE else 0,
        changed_at=NOW - draw(st.integers(0, 86_400)),
        version=draw(st.integers(0, 50)),
    )
    if mode in (Mode.WATCH, Mode.VERDICT):
        breaker = Breaker(
            state=State.HALF_OPEN,
            changed_at=breaker.changed_at,
            version=breaker.version,
            canary=Canary(identities=("id-0",), verdict_at=NOW, sent_at=breaker.changed_at),
        )
    groups = {
        fp: GroupMark(fp, draw(st.sampled_from(GroupAction)), "why", "on-call", NOW)
        for fp in draw(st.sets(st.sampled_from(FINGERPRINTS)))
    }
    state = BatchState(
        mode,
        breaker,
        Tally(received=draw(st.integers(len(batch), 200)), returned=draw(st.integers(0, 100))),
        NOW,
        groups,
        tag=draw(st.sampled_from([None, VerdictTag("w"), VerdictTag("w", trial=True)])),
        retention=draw(st.sampled_from([None, Retention(4 * 86_400, 3600), Retention(60, 30)])),
        source=draw(st.sampled_from([None, ORDERS, PAYMENTS])),
    )
    return Planner(rules, random.Random(draw(st.integers()))), batch, state


def accounted(plan: BatchPlan) -> Counter[str]:
    """How many times the plan names each received message."""
    named = (
        [r.tracked for r in plan.redrive] + [p.tracked for p in plan.park] + [h.tracked for h in plan.hold]
    )
    return Counter(t.message_id for t in [*named, *plan.leave, *plan.canaries])


@settings(max_examples=200, deadline=None)
@given(cases())
def test_every_received_message_is_accounted_for_exactly_once(
    case: tuple[Planner, list[DlqMessage], BatchState],
) -> None:
    planner, batch, state = case
    plan = planner.plan(track(batch, {}, NOW), state)
    assert accounted(plan) == Counter(m.message_id for m in batch)


@settings(max_examples=200, deadline=None)
@given(cases())
def test_a_plan_keeps_the_limits_whatever_the_batch(
    case: tuple[Planner, list[DlqMessage], BatchState],
) -> None:
    planner, batch, state = case
    plan = planner.plan(track(batch, {}, NOW), state)

    for redrive in plan.redrive:
        assert redrive.tracked.mark.count < MAX_REDRIVE_COUNT, "re-driven past the limit"
        assert 0 <= redrive.delay_seconds <= SQS_MAX_DELAY_SECONDS
        assert redrive.delay_seconds == 0 or not planner.rules.fifo, "FIFO refuses per-message delays"
    for hold in plan.hold:
        assert 0 < hold.seconds <= MAX_HOLD_SECONDS
    for park in plan.park:
        assert park.reason.why, "a parked message always says why"
    assert 0 <= plan.returned <= len(batch)
    assert len(plan.canaries) <= planner.rules.canary_size


@settings(max_examples=200, deadline=None)
@given(cases())
def test_only_the_modes_that_judge_the_consumer_move_the_breaker(
    case: tuple[Planner, list[DlqMessage], BatchState],
) -> None:
    planner, batch, state = case
    plan = planner.plan(track(batch, {}, NOW), state)

    if plan.open_breaker:
        assert state.mode in (Mode.REDRIVE, Mode.WATCH, Mode.VERDICT)
        assert not plan.redrive, "a plan that opens the breaker re-drives nothing"
    if state.mode is not Mode.REDRIVE:
        assert not plan.redrive and not plan.hold, f"{state.mode} re-drives nothing itself"
    if state.mode is Mode.SWEEP:
        assert {p.reason.cause for p in plan.park} <= {ParkCause.EXPIRING}
        assert not plan.open_breaker and plan.returned == 0
