"""sqs_redriver.runtime.plan: what a run does with each message of a batch, decided with no AWS."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace

import pytest

from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Canary, Mode, State
from sqs_redriver.core.message import Tracking, track
from sqs_redriver.core.table import GroupAction, GroupMark, ParkCause
from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.backoff import MAX_HOLD_SECONDS
from sqs_redriver.runtime.plan import BatchPlan, BatchState, Planner, PlanRules, VerdictTag
from sqs_redriver.runtime.report import StopReason, Tally
from sqs_redriver.runtime.routing import Routes
from tests.support.fakes import dlq_message, marked, queue_url

NOW = 1_800_000_000
ORDERS = queue_url("orders")
PAYMENTS = queue_url("payments")
POLICY = BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2, failure_ratio=0.5)


def rules(**overrides: object) -> PlanRules:
    values: dict[str, object] = {
        "max_redrive_count": 3,
        "fifo": False,
        "canary_size": 1,
        "base_delay_seconds": 60,
        "max_delay_seconds": 900,
        "breaker": POLICY,
        "routes": Routes((ORDERS, PAYMENTS)),
    }
    values.update(overrides)
    return PlanRules(**values)  # type: ignore[arg-type]


def plan(
    batch: list[DlqMessage],
    mode: Mode = Mode.REDRIVE,
    breaker: Breaker | None = None,
    so_far: Tally | None = None,
    groups: Mapping[str, GroupMark] | None = None,
    tag: VerdictTag | None = None,
    source: str | None = None,
    **rule_overrides: object,
) -> BatchPlan:
    tracking = track(batch, {}, NOW)
    so_far = so_far or Tally(received=len(batch))
    state = BatchState(mode, breaker or Breaker(), so_far, NOW, groups or {}, tag, source=source)
    return Planner(rules(**rule_overrides), random.Random(7)).plan(tracking, state)


def bodies(tracked: object) -> list[str]:
    return [t.message.body for t in tracked]  # type: ignore[attr-defined]


# -- parking ------------------------------------------------------------------------------------


def test_a_message_at_its_limit_is_parked_with_the_reason_and_the_rest_redriven() -> None:
    result = plan([marked(3, last_at=NOW - 10, body="poison"), dlq_message("fresh")])

    [park] = result.park
    assert park.tracked.message.body == "poison"
    assert park.reason.cause is ParkCause.OVER_LIMIT
    assert park.reason.why == "failed after 3 re-drives (limit 3)"
    assert (park.reason.redrive_count, park.reason.last_failed_at, park.reason.source_queue) == (
        3,
        NOW,
        ORDERS,
    )
    assert bodies(r.tracked for r in result.redrive) == ["fresh"]


@pytest.mark.parametrize("mode", [Mode.PROBE, Mode.WATCH, Mode.VERDICT])
def test_poison_is_parked_in_every_mode_that_reads_the_dlq(mode: Mode) -> None:
    breaker = Breaker(State.HALF_OPEN, canary=Canary(("id-elsewhere",), NOW + 60))
    result = plan([marked(3, body="poison")], mode=mode, breaker=breaker)

    assert bodies(p.tracked for p in result.park) == ["poison"]
    assert result.redrive == ()


def test_a_message_from_a_source_not_configured_is_parked_and_a_known_one_routed() -> None:
    result = plan([dlq_message("legacy", source="legacy-orders"), dlq_message("pay", source="payments")])

    [park] = result.park
    assert park.reason.cause is ParkCause.UNKNOWN_SOURCE
    assert park.reason.why == "no configured source queue is arn:aws:sqs:us-east-1:123456789012:legacy-orders"
    assert park.reason.source_queue == "arn:aws:sqs:us-east-1:123456789012:legacy-orders"
    assert bodies(r.tracked for r in result.redrive) == ["pay"]


def test_a_second_copy_of_an_identity_is_left_for_a_later_run() -> None:
    first = marked(1, identity="id-same", body="copy-1")
    second = marked(1, identity="id-same", body="copy-2")

    result = plan([first, second])

    assert bodies(result.leave) == ["copy-2"]
    assert bodies(r.tracked for r in result.redrive) == ["copy-1"]


# -- a breaker per source: the part of one source of a shared DLQ ----------------------------------


def test_a_sources_part_leaves_the_other_sources_messages_whole_and_parks_unknown_ones() -> None:
    batch = [
        dlq_message("order", source="orders"),
        dlq_message("no-source"),
        dlq_message("pay", source="payments"),
        marked(3, body="pay-poison", source="payments"),
        dlq_message("legacy", source="legacy-orders"),
    ]

    result = plan(batch, source=ORDERS)

    assert bodies(r.tracked for r in result.redrive) == ["order", "no-source"]
    assert bodies(result.leave) == ["pay", "pay-poison"] and result.others == 2
    assert bodies(p.tracked for p in result.park) == ["legacy"]


def test_a_message_without_a_named_source_belongs_to_the_source_queue_only() -> None:
    result = plan([dlq_message("no-source")], source=PAYMENTS)

    assert (bodies(result.leave), result.redrive, result.others) == (["no-source"], (), 1)


def test_another_sources_returns_neither_trip_a_sources_breaker_nor_count_as_its_volume() -> None:
    breaker = Breaker(changed_at=NOW - 600)
    back = [marked(1, last_at=NOW - 60, body=f"pay-back-{i}", source="payments") for i in range(4)]
    fresh = [dlq_message(f"order-{i}", source="orders") for i in range(2)]

    orders = plan(back + fresh, breaker=breaker, source=ORDERS)
    payments = plan(back + fresh, breaker=breaker, source=PAYMENTS)

    assert (orders.open_breaker, orders.returned, len(orders.redrive)) == (False, 0, 2)
    # 4 of payments' own 4 came back: its breaker opens, though 4 of 6 received is not all
    assert (payments.open_breaker, payments.returned) == (True, 4)


def test_a_sources_ratio_counts_only_its_own_messages_received_so_far() -> None:
    # 3 of orders' messages came back among 20 received, 16 of them payments' (earlier batches)
    breaker = Breaker(changed_at=NOW - 600)
    batch = [marked(1, last_at=NOW - 60, source="orders") for _ in range(3)] + [dlq_message(source="orders")]

    shared = plan(batch, breaker=breaker, so_far=Tally(received=20), source=ORDERS)
    own = plan(batch, breaker=breaker, so_far=Tally(received=20, others=16), source=ORDERS)

    assert (shared.open_breaker, own.open_breaker) == (False, True)


def test_a_sources_canary_is_one_of_its_own_messages() -> None:
    breaker = Breaker(State.HALF_OPEN)
    batch = [dlq_message("pay", source="payments"), marked(2, body="order", source="orders")]

    result = plan(batch, mode=Mode.PROBE, breaker=breaker, source=ORDERS)

    assert bodies(result.canaries) == ["order"] and bodies(result.leave) == ["pay"]


# -- REDRIVE: backoff, the returned count, the breaker ------------------------------------------


@pytest.mark.parametrize(("count", "low", "high"), [(0, 30, 60), (1, 60, 120), (3, 240, 480), (4, 450, 900)])
def test_the_delay_is_the_exponential_step_with_equal_jitter_capped_at_900(
    count: int, low: int, high: int
) -> None:
    for seed in range(20):
        tracking = track([marked(count) if count else dlq_message()], {}, NOW)
        planner = Planner(rules(max_redrive_count=10), random.Random(seed))
        [redrive] = planner.plan(
            tracking, BatchState(Mode.REDRIVE, Breaker(), Tally(received=1), NOW)
        ).redrive
        assert low <= redrive.delay_seconds <= high


def test_a_large_drain_delays_a_re_drive_only_by_what_is_left_of_its_step() -> None:
    waited = marked(1, last_at=NOW - 3_600)  # its step (60-120 s) long over
    recent = marked(1, last_at=NOW - 30)  # 30 s into it
    tracking = track([waited, recent], {}, NOW)
    state = BatchState(Mode.REDRIVE, Breaker(), Tally(received=2), NOW, drain=True)

    delays = {
        r.tracked.message.message_id: r.delay_seconds
        for r in Planner(rules(), random.Random(7)).plan(tracking, state).redrive
    }

    assert delays[waited.message_id] == 0
    assert 30 <= delays[recent.message_id] <= 90


def test_returned_counts_messages_redriven_since_the_breaker_last_changed() -> None:
    breaker = Breaker(changed_at=NOW - 100)
    batch = [
        marked(1, last_at=NOW - 50),
        marked(1, last_at=NOW - 100),
        marked(1, last_at=NOW - 101),
        dlq_message(),
    ]

    assert plan(batch, breaker=breaker).returned == 2


def test_a_batch_that_makes_the_run_the_one_that_opens_the_breaker_is_not_redriven() -> None:
    # GIVEN two failed runs behind us, and a batch whose every message came back
    breaker = Breaker(failures=2, changed_at=NOW - 600)
    batch = [marked(1, last_at=NOW - 60, body=f"back-{i}") for i in range(4)] + [marked(3, body="poison")]

    result = plan(batch, breaker=breaker)

    assert result.open_breaker and result.stop is StopReason.BREAKER_OPENED
    assert result.redrive == () and sorted(bodies(result.leave)) == [f"back-{i}" for i in range(4)]
    assert bodies(p.tracked for p in result.park) == ["poison"]  # parking never touches the consumer


def test_returns_below_the_minimum_volume_are_still_redriven() -> None:
    # two messages that keep coming back are 100 % of the run, but may be poison, not an outage
    breaker = Breaker(failures=1, changed_at=NOW - 600)
    batch = [marked(1, last_at=NOW - 60) for _ in range(2)]

    result = plan(batch, breaker=breaker)

    assert not result.open_breaker and len(result.redrive) == 2


def test_a_batch_that_fails_by_ratio_opens_the_breaker_and_stays_in_the_dlq() -> None:
    batch = [marked(1, last_at=NOW - 60) for _ in range(3)]

    result = plan(batch, breaker=Breaker(changed_at=NOW - 600))

    assert result.open_breaker and not result.redrive and len(result.leave) == 3


def test_the_trip_counts_the_run_so_far_not_only_the_batch() -> None:
    # 1 returned of 10 in this batch, but 9 of the 10 received before came back too: 10 of 20
    breaker = Breaker(failures=2, changed_at=NOW - 600)
    batch = [marked(1, last_at=NOW - 60)] + [dlq_message() for _ in range(9)]

    alone = plan(batch, breaker=breaker)
    after_a_bad_batch = plan(batch, breaker=breaker, so_far=Tally(received=20, returned=9))

    assert not alone.open_breaker
    assert after_a_bad_batch.open_breaker


# -- the consumer kit's verdicts ----------------------------------------------------------------


def failed(kind: FailureKind, *, count: int = 1, fingerprint: str = "fp-1", body: str = "x") -> DlqMessage:
    """A message the consumer kit dead-lettered, re-driven ``count`` times before (the last at
    NOW - 60, after the breaker's last change)."""
    failure = Failure(kind, "InvalidOrder", "missing field 'items'", fingerprint, NOW - 5, 1, "arn:src")
    history = tuple(range(NOW - 60 - count + 1, NOW - 59)) if count else ()
    return dlq_message(body, mark=Mark(f"id-{body}", count, NOW - 900, history, failure))


@pytest.mark.parametrize("mode", [Mode.REDRIVE, Mode.PROBE, Mode.VERDICT])
def test_a_terminal_failure_is_parked_on_first_sight_with_the_consumers_error(mode: Mode) -> None:
    breaker = Breaker(State.HALF_OPEN, canary=Canary(("id-c",), NOW), version=3)
    result = plan([failed(FailureKind.TERMINAL, count=0)], mode=mode, breaker=breaker)

    [parked] = result.park
    assert parked.reason.cause is ParkCause.TERMINAL and result.redrive == () and result.canaries == ()
    assert "InvalidOrder: missing field 'items' (fingerprint fp-1)" in parked.reason.why
    assert parked.reason.failure == parked.tracked.mark.failure


def test_a_terminal_failure_whose_fingerprint_is_marked_for_retry_is_redriven() -> None:
    batch = [
        failed(FailureKind.TERMINAL, fingerprint="fixed", body="a"),
        failed(FailureKind.TERMINAL, body="b"),
    ]

    result = plan(batch, groups={"fixed": group("fixed", GroupAction.RETRY)})

    assert bodies(r.tracked for r in result.redrive) == ["a"]
    assert bodies(p.tracked for p in result.park) == ["b"]


def test_a_sweep_parks_only_the_expiring_and_gives_back_poison_and_parked_groups() -> None:
    # GIVEN a HALF_OPEN breaker whose canary came back terminal, of a group an operator parked
    breaker = Breaker(State.HALF_OPEN, canary=Canary(("id-c",), NOW), version=3)
    batch = [
        failed(FailureKind.TERMINAL, count=0, fingerprint="bad", body="canary"),
        failed(FailureKind.TERMINAL, count=0, body="terminal"),
    ]

    # WHEN the retention sweep (a WATCH run's) reads them
    result = plan(batch, mode=Mode.SWEEP, breaker=breaker, groups={"bad": group("bad", GroupAction.PARK)})

    # THEN it parks none: the VERDICT run must find the canary, and parks the rest then
    assert result.park == ()
    assert sorted(bodies(result.leave)) == ["canary", "terminal"]


def group(fingerprint: str, action: GroupAction) -> GroupMark:
    return GroupMark(fingerprint, action, reason="bug 42: fix deploying", by="alice", at=NOW - 100)


@pytest.mark.parametrize("mode", [Mode.REDRIVE, Mode.PROBE, Mode.VERDICT])
@pytest.mark.parametrize("kind", list(FailureKind))
def test_a_failure_of_a_group_an_operator_parked_is_parked_on_sight_saying_by_whom_and_why(
    mode: Mode, kind: FailureKind
) -> None:
    breaker = Breaker(State.HALF_OPEN, canary=Canary(("id-c",), NOW), version=3)
    batch = [failed(kind, count=0, fingerprint="bad", body="a"), failed(kind, count=0, body="b")]

    result = plan(batch, mode=mode, breaker=breaker, groups={"bad": group("bad", GroupAction.PARK)})

    [parked] = [p for p in result.park if p.tracked.message.body == "a"]
    assert parked.reason.cause is ParkCause.OPERATOR
    assert parked.reason.why.startswith(
        "an operator parked its failure group (by alice: bug 42: fix deploying)"
    )
    assert "(fingerprint bad)" in parked.reason.why
    assert "a" not in bodies(r.tracked for r in result.redrive) + bodies(result.canaries)


def test_an_operators_park_wins_over_the_breaker_that_the_batch_trips() -> None:
    # GIVEN a batch whose transient returns trip the breaker, one of them of a parked group
    batch = [failed(FailureKind.TRANSIENT, fingerprint="bad", body="a")]
    batch += [failed(FailureKind.TRANSIENT, body=f"r{i}") for i in range(4)]

    result = plan(
        batch, breaker=Breaker(changed_at=NOW - 600), groups={"bad": group("bad", GroupAction.PARK)}
    )

    # THEN the breaker opens on the others, and the parked group's message is parked all the same
    assert result.open_breaker and result.returned == 4
    assert bodies(p.tracked for p in result.park) == ["a"]


def test_messages_of_a_parked_group_do_not_dilute_the_breakers_ratio() -> None:
    # GIVEN an outage: 3 re-driven messages came back, among 6 of a group an operator parked
    batch = [failed(FailureKind.TRANSIENT, fingerprint="bad", body=f"p{i}") for i in range(6)]
    batch += [failed(FailureKind.TRANSIENT, body=f"r{i}") for i in range(3)]

    result = plan(
        batch, breaker=Breaker(changed_at=NOW - 600), groups={"bad": group("bad", GroupAction.PARK)}
    )

    # THEN the ratio is 3 of 3 judged, not 3 of 9: the breaker opens
    assert result.unjudged == 6 and result.returned == 3
    assert result.open_breaker


def test_a_failure_of_a_parked_group_is_not_counted_as_returned() -> None:
    batch = [failed(FailureKind.TRANSIENT, fingerprint="bad", body=f"p{i}") for i in range(5)]
    batch += [failed(FailureKind.TRANSIENT, body=f"r{i}") for i in range(2)]

    result = plan(
        batch, breaker=Breaker(changed_at=NOW - 600), groups={"bad": group("bad", GroupAction.PARK)}
    )

    assert result.returned == 2 and not result.open_breaker
    assert len(result.park) == 5 and len(result.redrive) == 2


def test_a_retry_mark_leaves_a_transient_failure_to_the_usual_rules() -> None:
    batch = [failed(FailureKind.TRANSIENT, fingerprint="fixed", count=3)]
    marked_for_retry = plan(batch, groups={"fixed": group("fixed", GroupAction.RETRY)})
    unmarked = plan(batch)

    # at its limit, held with its failure group (held.py) rather than parked, mark or not
    assert marked_for_retry.park == () == unmarked.park
    assert [h.tracked for h in marked_for_retry.hold] == [h.tracked for h in unmarked.hold]
    assert marked_for_retry.held == unmarked.held != ()


def test_another_sources_message_of_a_parked_group_is_left_for_its_own_part() -> None:
    message = failed(FailureKind.TRANSIENT, count=0, fingerprint="bad")
    message = replace(
        message, system_attributes={"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:123456789012:payments"}
    )

    result = plan([message], source=ORDERS, groups={"bad": group("bad", GroupAction.PARK)})

    assert result.park == () and result.others == 1


def test_terminal_failures_are_not_counted_as_returned_but_transient_ones_are() -> None:
    batch = [failed(FailureKind.TERMINAL, body=f"t{i}") for i in range(5)]
    batch += [failed(FailureKind.TRANSIENT, body=f"r{i}") for i in range(2)]

    result = plan(batch, breaker=Breaker(changed_at=NOW - 600))

    assert result.returned == 2 and not result.open_breaker
    assert len(result.park) == 5 and len(result.redrive) == 2


def test_a_message_over_its_limit_is_parked_with_the_consumers_last_error() -> None:
    retried = failed(FailureKind.TERMINAL, count=3, fingerprint="fixed")
    result = plan([retried], groups={"fixed": group("fixed", GroupAction.RETRY)})

    [parked] = result.park
    assert parked.reason.cause is ParkCause.OVER_LIMIT
    assert parked.reason.why.startswith("failed after 3 re-drives (limit 3); consumer's terminal error")


def test_a_trial_goes_with_no_delay_and_the_rest_of_a_run_backs_off_with_its_tag() -> None:
    trial = plan([marked(2)], tag=VerdictTag("run/1", trial=True))
    rest = plan([marked(2)], tag=VerdictTag("run/1"))

    assert [(r.delay_seconds, r.tag) for r in trial.redrive] == [(0, VerdictTag("run/1", trial=True))]
    [redrive] = rest.redrive
    assert redrive.delay_seconds >= 60 and redrive.tag == VerdictTag("run/1")


# -- FIFO ---------------------------------------------------------------------------------------


def test_fifo_messages_backing_off_are_held_and_due_ones_go_without_delay() -> None:
    waiting = marked(1, last_at=NOW, group="g", body="waits")
    due = marked(1, last_at=NOW - 3600, group="h", body="due")

    result = plan([waiting, due], fifo=True)

    [hold] = result.hold
    assert hold.tracked.message.body == "waits" and 60 <= hold.seconds <= 120
    assert [(r.tracked.message.body, r.delay_seconds) for r in result.redrive] == [("due", 0)]


def test_fifo_messages_behind_a_waiting_groupmate_wait_as_long() -> None:
    first = marked(1, last_at=NOW, group="g", body="first")
    second = dlq_message("second", group="g", sent_at=NOW - 3600)

    result = plan([first, second], fifo=True)

    assert [h.tracked.message.body for h in result.hold] == ["first", "second"]
    assert result.hold[0].seconds == result.hold[1].seconds


def test_a_fifo_message_backing_off_is_not_counted_as_returned_until_it_is_acted_on() -> None:
    breaker = Breaker(changed_at=NOW - 600)

    assert plan([marked(1, last_at=NOW - 10, group="g")], breaker=breaker, fifo=True).returned == 0
    assert plan([marked(1, last_at=NOW - 10, group="g")], breaker=breaker).returned == 1


# -- standard queues: steps past 900 s wait in the DLQ --------------------------------------------

LONG = {"max_delay_seconds": 86_400, "max_redrive_count": 20}
STATE = BatchState(Mode.REDRIVE, Breaker(), Tally(received=1), NOW)


def test_a_standard_step_past_900_seconds_is_held_in_the_dlq_for_the_rest_of_its_wait() -> None:
    # GIVEN its 8th re-drive (base 60: a step of 7,680 s, due 3,840-7,680 s after the 7th)
    result = plan([marked(7, last_at=NOW - 100, body="long")], **LONG)

    [hold] = result.hold
    assert hold.tracked.message.body == "long" and 3_840 - 100 <= hold.seconds <= 7_680 - 100
    assert result.redrive == ()


def test_a_standard_long_step_that_is_due_is_redriven_with_no_delay() -> None:
    result = plan([marked(7, last_at=NOW - 7_680, body="due")], **LONG)

    assert [(r.tracked.message.body, r.delay_seconds) for r in result.redrive] == [("due", 0)]
    assert result.hold == ()


@pytest.mark.parametrize(("count", "base"), [(0, 60), (3, 60), (0, 900)])
def test_a_standard_step_up_to_900_seconds_keeps_its_delay_seconds_and_its_jitter(
    count: int, base: int
) -> None:
    def delays(max_delay: int) -> list[int]:
        batch = [marked(count, last_at=NOW) if count else dlq_message() for _ in range(5)]
        result = plan(batch, base_delay_seconds=base, max_delay_seconds=max_delay, max_redrive_count=20)
        assert result.hold == ()
        return [r.delay_seconds for r in result.redrive]

    assert delays(86_400) == delays(900) and all(0 < d <= 900 for d in delays(900))


def test_a_wait_longer_than_sqs_allows_is_held_as_long_as_allowed_then_held_again() -> None:
    # GIVEN a step of 86,400 s, due at least 43,200 s after its last re-drive
    message = marked(11, last_at=NOW, body="day", identity="day")
    [first] = plan([message], **LONG).hold
    assert first.seconds == MAX_HOLD_SECONDS

    # WHEN it reappears at the end of each hold, it is held again (never longer than SQS allows)
    # until it is due, then re-driven with no delay, within its step of its last re-drive. How
    # many holds that takes depends on its jitter, drawn from its identity.
    later = Planner(rules(**LONG), random.Random(7))
    now, holds = NOW + first.seconds, 1
    while hold := later.plan(track([message], {}, NOW), replace(STATE, now=now)).hold:
        assert 0 < hold[0].seconds <= MAX_HOLD_SECONDS and holds < 3
        now, holds = now + hold[0].seconds, holds + 1
    redrive = later.plan(track([message], {}, NOW), replace(STATE, now=now)).redrive
    assert [r.delay_seconds for r in redrive] == [0] and now <= NOW + 86_400


def test_a_standard_message_waiting_in_the_dlq_is_not_counted_as_returned_until_it_is_acted_on() -> None:
    breaker = Breaker(changed_at=NOW - 600)
    waiting = marked(7, last_at=NOW - 10)

    assert plan([waiting], breaker=breaker, **LONG).returned == 0
    assert plan([waiting], breaker=breaker, max_redrive_count=20).returned == 1  # capped at 900: re-driven


# -- HALF_OPEN: the probe and the watch ---------------------------------------------------------


HALF_OPEN = Breaker(State.HALF_OPEN, changed_at=NOW - 60, version=5)


def test_the_canary_is_the_message_that_failed_least_often_and_the_rest_stay() -> None:
    batch = [marked(2, body="twice"), dlq_message("never"), marked(1, body="once")]

    result = plan(batch, mode=Mode.PROBE, breaker=HALF_OPEN)

    assert bodies(result.canaries) == ["never"]
    assert sorted(bodies(result.leave)) == ["once", "twice"]
    assert result.redrive == ()  # nothing goes before the claim is written


def test_a_claimed_probe_sends_its_canaries_with_no_delay_and_a_lost_one_leaves_them() -> None:
    planned = plan([dlq_message("c")], mode=Mode.PROBE, breaker=HALF_OPEN)

    claimed = planned.with_claimed_canaries("canary/1/id")
    lost = planned.with_probe_taken()

    assert [(r.tracked.message.body, r.delay_seconds) for r in claimed.redrive] == [("c", 0)]
    assert {r.tag for r in claimed.redrive} == {VerdictTag("canary/1/id", trial=True)}
    assert claimed.stop is StopReason.CANARY_SENT
    assert bodies(lost.leave) == ["c"] and lost.redrive == () and lost.stop is StopReason.PROBE_TAKEN


def test_a_fifo_canary_is_a_group_head_and_a_group_alone_goes_first() -> None:
    batch = [
        dlq_message("g-1", group="g"),
        dlq_message("g-2", group="g"),
        marked(2, group="solo", body="solo"),
    ]

    result = plan(batch, mode=Mode.PROBE, breaker=HALF_OPEN, fifo=True, canary_size=2)

    assert bodies(result.canaries) == ["solo", "g-1"]


@pytest.mark.parametrize("mode", [Mode.WATCH, Mode.VERDICT])
def test_a_canary_found_back_opens_the_breaker_even_when_it_is_parked(mode: Mode) -> None:
    canary = marked(3, identity="id-canary", body="canary")
    breaker = Breaker(State.HALF_OPEN, canary=Canary(("id-canary",), NOW + 60), version=6)

    result = plan([dlq_message("other"), canary], mode=mode, breaker=breaker)

    assert result.open_breaker and result.stop is StopReason.CANARY_FAILED
    assert bodies(result.canaries_back) == ["canary"] and bodies(p.tracked for p in result.park) == ["canary"]
    assert bodies(result.leave) == ["other"] and result.redrive == ()


def test_watching_without_the_canary_in_sight_changes_nothing() -> None:
    breaker = Breaker(State.HALF_OPEN, canary=Canary(("id-canary",), NOW + 60), version=6)

    result = plan([dlq_message("a"), dlq_message("b")], mode=Mode.WATCH, breaker=breaker)

    assert not result.open_breaker and result.stop is StopReason.NONE
    assert bodies(result.leave) == ["a", "b"] and not result.canary_may_hide


def test_a_fifo_canary_may_hide_behind_a_groupmate_in_the_batch() -> None:
    breaker = Breaker(State.HALF_OPEN, canary=Canary(("id-canary",), NOW + 60, groups=("g",)), version=6)

    beside = plan([dlq_message("mate", group="g")], mode=Mode.WATCH, breaker=breaker, fifo=True)
    elsewhere = plan([dlq_message("x", group="h")], mode=Mode.WATCH, breaker=breaker, fifo=True)

    assert beside.canary_may_hide and not elsewhere.canary_may_hide


def test_an_empty_tracking_plans_nothing() -> None:
    result = Planner(rules(), random.Random(1)).plan(
        Tracking([], []), BatchState(Mode.REDRIVE, Breaker(), Tally(), NOW)
    )
    assert (result.redrive, result.park, result.leave, result.returned) == ((), (), (), 0)
