"""sqs_redriver.runtime.held: a failure named transient is never parked by its count; at its limit its
failure group is held in the DLQ, tested by one canary at a time, released when the canary passes.
Decided with no AWS (the rules, and the plan that applies them); the run's view against a fake store."""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Mode
from sqs_redriver.core.message import track
from sqs_redriver.core.table import GroupAction, GroupMark, HeldGroup, ParkCause
from sqs_redriver.protocol.dead_letters import Cause, DeadLetter
from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.protocol.failure import Failure, FailureKind, VerdictCounts
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.sources import DeadLetterSource, Retries, SourceKind, TargetKind
from sqs_redriver.runtime.held import (
    MAX_CANARY_INTERVAL_SECONDS,
    CanaryRules,
    Held,
    HeldGroups,
    canary_step,
    decide,
    failure_group,
    judged,
    kept,
    not_sent,
)
from sqs_redriver.runtime.plan import BatchPlan, BatchState, Planner, PlanRules, VerdictTag
from sqs_redriver.runtime.report import Tally
from sqs_redriver.runtime.retention import Retention
from sqs_redriver.runtime.routing import Routes
from tests.support.fakes import dlq_message, queue_url

NOW = 1_800_000_000
ORDERS = queue_url("orders")
POLICY = BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2, failure_ratio=0.5)
RULES = CanaryRules(base_seconds=60, max_seconds=900)
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:notifier"
NOTIFIER = DeadLetterSource(SourceKind.FUNCTION, FUNCTION, TargetKind.FUNCTION, FUNCTION, Retries(3, 960))
REFUSED = "mail provider refused alpha.example for order o-00012: Connection refused"


def kit_failure(kind: FailureKind = FailureKind.TRANSIENT, *, fingerprint: str = "fp-mail") -> Failure:
    return Failure(kind, "notifier.DownstreamUnavailable", REFUSED, fingerprint, NOW - 5, 5, "arn:src")


def failed(count: int, *, kind: FailureKind = FailureKind.TRANSIENT, body: str = "x", last_at: int = NOW - 60,
           fingerprint: str = "fp-mail", sent_at: int | None = None) -> DlqMessage:  # fmt: skip
    """A message the kit dead-lettered after ``count`` re-drives, the last at ``last_at``."""
    history = tuple(range(last_at - count + 1, last_at + 1)) if count else ()
    mark = Mark(f"id-{body}", count, NOW - 3600, history, kit_failure(kind, fingerprint=fingerprint))
    return dlq_message(body, mark=mark, sent_at=sent_at)


def plan(
    batch: list[DlqMessage],
    held: Mapping[str, HeldGroup] | None = None,
    *,
    groups: Mapping[str, GroupMark] | None = None,
    retention: Retention | None = None,
    tag: VerdictTag | None = None,
    **overrides: object,
) -> BatchPlan:
    values: dict[str, object] = {
        "max_redrive_count": 3,
        "fifo": False,
        "canary_size": 1,
        "base_delay_seconds": 60,
        "max_delay_seconds": 900,
        "breaker": POLICY,
        "routes": Routes((ORDERS,)),
    }
    values.update(overrides)
    state = BatchState(
        Mode.REDRIVE,
        Breaker(changed_at=NOW - 7200),
        Tally(received=len(batch)),
        NOW,
        groups or {},
        tag,
        retention,
        held=held or {},
    )
    return Planner(PlanRules(**values), random.Random(7)).plan(track(batch, {}, NOW), state)  # type: ignore[arg-type]


def held_group(**fields: object) -> HeldGroup:
    values: dict[str, object] = {"group": "fp-mail", "since": NOW - 600, "canary_at": NOW + 60}
    values.update(fields)
    return HeldGroup(**values)  # type: ignore[arg-type]


# -- the group of a failure -----------------------------------------------------------------------


def test_a_kit_failure_s_group_is_its_fingerprint_when_transient_and_none_when_terminal() -> None:
    [transient, terminal] = track(
        [failed(1, body="a"), failed(1, body="b", kind=FailureKind.TERMINAL)], {}, NOW
    ).unique

    assert failure_group(transient) == "fp-mail" and failure_group(terminal) is None


def dead_letter(
    code: str, message: str, *, body: str = "{}", source: DeadLetterSource = NOTIFIER
) -> DlqMessage:
    letter = DeadLetter(source, body, cause=Cause(code, message))
    return DlqMessage(f"m-{body}-{code}", "rh", body, dead_letter=letter)


def test_a_source_s_error_named_transient_groups_by_source_code_and_message_ids_and_numbers_aside() -> None:
    one = dead_letter("DownstreamUnavailable", REFUSED, body='{"n":1}')
    other_order = dead_letter("DownstreamUnavailable", REFUSED.replace("00012", "00977"), body='{"n":2}')
    other_domain = dead_letter("DownstreamUnavailable", REFUSED.replace("alpha", "bravo"), body='{"n":3}')
    poison = dead_letter("InvalidOrder", "items[0] has quantity 0", body='{"n":4}')
    a, b, c, d = track([one, other_order, other_domain, poison], {}, NOW).unique

    assert failure_group(a) == failure_group(b) != failure_group(c)
    assert str(failure_group(a)).startswith("src-") and len(str(failure_group(a))) == 20
    assert failure_group(d) is None


def test_an_sqs_consumer_s_failure_without_the_kit_s_words_has_no_group() -> None:
    [unmarked] = track([dlq_message("plain")], {}, NOW).unique

    assert failure_group(unmarked) is None


# -- the rules --------------------------------------------------------------------------------


@given(st.integers(0, 10_000), st.integers(0, 86_400), st.integers(0, 86_400))
def test_a_group_s_canaries_are_at_most_the_interval_apart_and_at_least_a_second(
    failed_canaries: int, base: int, cap: int
) -> None:
    assert (
        1 <= canary_step(failed_canaries, base_seconds=base, max_seconds=cap) <= MAX_CANARY_INTERVAL_SECONDS
    )


def tracked_of(message: DlqMessage):  # type: ignore[no-untyped-def]
    return track([message], {}, NOW).unique[0]


def test_under_its_limit_a_message_of_a_group_not_held_is_left_to_the_backoff() -> None:
    holding = decide(tracked_of(failed(1)), "fp-mail", None, at_limit=False, now=NOW, rules=RULES)

    assert holding.held is Held.NOT_HELD and holding.group is None


def test_at_its_limit_it_holds_its_group_until_the_first_canary() -> None:
    holding = decide(tracked_of(failed(3)), "fp-mail", None, at_limit=True, now=NOW, rules=RULES)

    assert holding.held is Held.HOLD and holding.group is not None
    assert holding.group.held and holding.group.since == NOW and holding.until == NOW + 60


def test_a_due_canary_makes_the_message_its_group_s_canary_and_the_next_waits_for_its_verdict() -> None:
    group = held_group(canary_at=NOW)
    first = decide(tracked_of(failed(3, body="a")), "fp-mail", group, at_limit=True, now=NOW, rules=RULES)
    assert first.held is Held.CANARY and first.group is not None and first.group.canary == "id-a"

    waiting = replace(first.group, verdict_at=NOW + 180)
    second = decide(tracked_of(failed(1, body="b")), "fp-mail", waiting, at_limit=False, now=NOW, rules=RULES)
    assert (second.held, second.until) == (Held.HOLD, NOW + 180)


def test_a_canary_back_in_the_dlq_failed_and_the_next_goes_a_step_later() -> None:
    group = held_group(canary="id-a", sent_at=NOW - 120, verdict_at=NOW + 60, failed_canaries=2)
    back = failed(4, body="a", last_at=NOW - 120)

    holding = decide(tracked_of(back), "fp-mail", group, at_limit=True, now=NOW, rules=RULES)

    assert holding.held is Held.HOLD and holding.group is not None
    assert (holding.group.failed_canaries, holding.group.canary) == (3, "")
    assert holding.until == holding.group.canary_at == NOW + canary_step(3, base_seconds=60, max_seconds=900)


@pytest.mark.parametrize(
    ("verdicts", "now", "outcome"),
    [
        (VerdictCounts(ok=1), NOW, "released"),
        (VerdictCounts(transient=1), NOW, "failed"),
        (VerdictCounts(terminal=1), NOW, "failed"),
        (None, NOW, "out"),  # not due yet, no verdict
        (None, NOW + 600, "released"),  # not back when due
        (VerdictCounts(), NOW + 600, "released"),
    ],
)
def test_a_canary_out_is_judged_by_the_kit_s_verdict_or_by_not_being_back_when_due(
    verdicts: VerdictCounts | None, now: int, outcome: str
) -> None:
    group = held_group(canary="id-a", sent_at=NOW - 60, verdict_at=NOW + 300, verdict_key="canary/x")

    after = judged(group, verdicts, now=now, rules=RULES)

    expected = {
        "released": (False, ""),
        "failed": (True, ""),
        "out": (True, "id-a"),
    }[outcome]
    assert (after.held, after.canary) == expected
    assert after.failed_canaries == group.failed_canaries + (outcome == "failed")


def test_messages_of_a_released_group_go_at_once_and_one_failing_again_after_the_release_holds_it() -> None:
    group = held_group(released_at=NOW - 300)
    waiting = decide(
        tracked_of(failed(3, last_at=NOW - 900)), "fp-mail", group, at_limit=True, now=NOW, rules=RULES
    )
    again = decide(
        tracked_of(failed(4, last_at=NOW - 200)), "fp-mail", group, at_limit=True, now=NOW, rules=RULES
    )

    assert waiting.held is Held.RELEASED
    assert again.held is Held.HOLD and again.group is not None and again.group.held


def test_a_canary_the_target_failed_at_once_counts_as_failed_and_one_not_sent_does_not() -> None:
    group = held_group(canary="id-a", sent_at=NOW, verdict_at=NOW + 1, failed_canaries=1)

    failed_now = not_sent(group, failed_at_target=True, now=NOW, rules=RULES)
    unsent = not_sent(group, failed_at_target=False, now=NOW, rules=RULES)

    assert (failed_now.failed_canaries, failed_now.canary) == (2, "")
    assert (unsent.failed_canaries, unsent.canary, unsent.held) == (1, "", True)


def test_a_record_keeps_the_held_groups_first_then_the_recently_released() -> None:
    old_release = held_group(group="old", released_at=NOW - 90_000)
    recent = held_group(group="recent", released_at=NOW - 60)
    holding = [held_group(group=f"g{i}", since=NOW - i) for i in range(40)]

    record = kept([old_release, recent, *holding], now=NOW)

    assert len(record) == 32 and all(g.held for g in record)
    assert [g.group for g in kept([old_release, recent, holding[0]], now=NOW)] == ["g0", "recent"]


# -- the plan -------------------------------------------------------------------------------------


def test_a_transient_failure_at_its_limit_is_held_not_parked_and_the_rest_flows() -> None:
    result = plan([failed(3, body="a"), dlq_message("fresh")])

    assert result.park == ()
    assert [h.tracked.message.body for h in result.hold] == ["a"]
    assert [r.tracked.message.body for r in result.redrive] == ["fresh"]
    [group] = result.held
    assert group.group == "fp-mail" and group.held


def test_a_terminal_or_unclassified_failure_at_its_limit_is_still_parked_as_poison() -> None:
    unclassified = dlq_message("plain", mark=Mark("id-plain", 3, NOW - 3600, (NOW - 62, NOW - 61, NOW - 60)))

    result = plan([failed(3, kind=FailureKind.TERMINAL, body="t"), unclassified])

    assert sorted(p.reason.cause for p in result.park) == sorted([ParkCause.TERMINAL, ParkCause.OVER_LIMIT])
    assert result.held == ()


def test_a_source_s_transient_error_past_the_suspect_limit_is_held() -> None:
    letter = DeadLetter(NOTIFIER, "{}", cause=Cause("DownstreamUnavailable", REFUSED))
    suspect = Mark("id-n", 2, NOW - 3600, (NOW - 900, NOW - 600), suspected=3, processed_meanwhile=40)
    message = DlqMessage("m-n", "rh", "{}", dead_letter=letter, mark=suspect)

    result = plan([message], routes=Routes((FUNCTION,)), waits_in_dlq=True)

    assert result.park == () and len(result.hold) == 1 and result.held[0].group.startswith("src-")


def test_a_due_canary_goes_one_per_group_with_no_delay_tagged_as_a_probe_s_and_the_others_wait() -> None:
    batch = [failed(3, body=name) for name in "abc"] + [failed(3, body="z", fingerprint="fp-other")]
    held = {"fp-mail": held_group(canary_at=NOW), "fp-other": held_group(group="fp-other", canary_at=NOW)}

    result = plan(batch, held)

    assert sorted(r.tracked.message.body for r in result.redrive) == ["a", "z"]
    assert all(r.delay_seconds == 0 and r.tag is not None and r.tag.probe for r in result.redrive)
    # their group's canary is out: given back at the run's end, for a run that knows its verdict
    assert sorted(t.message.body for t in result.leave) == ["b", "c"] and result.hold == ()
    assert {g.group: g.canary for g in result.held} == {"fp-mail": "id-a", "fp-other": "id-z"}
    assert [t.message.body for t in result.group_canaries] == ["a", "z"]


def test_a_held_group_s_returns_do_not_count_against_the_breaker() -> None:
    batch = [failed(2, body=f"m{i}", last_at=NOW - 60) for i in range(5)]

    held = plan(batch, {"fp-mail": held_group()})
    not_held = plan(batch)

    assert held.returned == 0 and not held.open_breaker
    assert not_held.returned == 5 and not_held.open_breaker


def test_the_retention_guard_still_parks_a_held_message_and_caps_the_hold_before_its_window() -> None:
    retention = Retention(seconds=4 * 86_400, margin_seconds=3600)
    expiring = failed(3, body="old", sent_at=NOW - 4 * 86_400 + 1800)
    young = failed(3, body="young", sent_at=NOW - 4 * 86_400 + 3600 + 30)

    result = plan([expiring, young], {"fp-mail": held_group(canary_at=NOW + 300)}, retention=retention)

    assert [p.reason.cause for p in result.park] == [ParkCause.EXPIRING]
    [hold] = result.hold
    assert hold.tracked.message.body == "young" and hold.seconds <= 30


def test_an_operator_s_park_of_the_group_still_parks_its_messages() -> None:
    marks = {"fp-mail": GroupMark("fp-mail", GroupAction.PARK, reason="bug 7", by="alice")}

    result = plan([failed(3)], {"fp-mail": held_group()}, groups=marks)

    assert [p.reason.cause for p in result.park] == [ParkCause.OPERATOR]


def test_on_fifo_a_transient_failure_is_judged_by_its_count_as_before() -> None:
    message = failed(3, body="f")
    message = replace(message, system_attributes={**message.system_attributes, "MessageGroupId": "g"})

    result = plan([message], fifo=True)

    assert [p.reason.cause for p in result.park] == [ParkCause.OVER_LIMIT] and result.held == ()


@given(
    st.lists(
        st.tuples(st.integers(0, 60), st.integers(0, 6), st.sampled_from(["fp-1", "fp-2"])), max_size=12
    ),
    st.sampled_from(["none", "held", "due", "released"]),
)
def test_a_named_transient_failure_is_never_parked_by_its_count_whatever_its_group_s_state(
    messages: Sequence[tuple[int, int, str]], held_state: str
) -> None:
    batch = [
        _with_suspect(failed(count, body=f"b{i}", fingerprint=fp), suspected)
        for i, (suspected, count, fp) in enumerate(messages)
    ]
    states = {
        "none": {},
        "held": {"fp-1": held_group(group="fp-1")},
        "due": {"fp-1": held_group(group="fp-1", canary_at=NOW)},
        "released": {"fp-1": held_group(group="fp-1", released_at=NOW - 30)},
    }

    result = plan(batch, states[held_state])

    assert result.park == ()
    decided = len(result.redrive) + len(result.hold) + len(result.leave)
    assert decided == len(batch)


def _with_suspect(message: DlqMessage, suspected: int) -> DlqMessage:
    assert message.mark is not None
    return replace(
        message, mark=replace(message.mark, suspected=suspected, processed_meanwhile=10 * suspected)
    )


# -- the run's view ---------------------------------------------------------------------------------


class FakeStore:
    def __init__(
        self, groups: Sequence[HeldGroup] = (), verdicts: Mapping[str, VerdictCounts] | None = None
    ) -> None:
        self.groups = tuple(groups)
        self.verdicts = dict(verdicts or {})
        self.loads = 0
        self.saves: list[tuple[HeldGroup, ...]] = []

    def load_held(self, key: str) -> tuple[HeldGroup, ...]:
        self.loads += 1
        return self.groups

    def save_held(self, key: str, groups: Sequence[HeldGroup]) -> None:
        self.groups = tuple(groups)
        self.saves.append(self.groups)

    def load_verdicts(self, verdict_key: str) -> VerdictCounts:
        return self.verdicts.get(verdict_key, VerdictCounts())


def view(store: FakeStore, *, reads_verdicts: bool = True) -> HeldGroups:
    return HeldGroups(
        store, key="HELD#d", rules=RULES, reads_verdicts=reads_verdicts, logger=logging.getLogger("test")
    )


def test_the_view_reads_the_record_once_per_run_and_writes_what_a_plan_changed() -> None:
    store = FakeStore([held_group()])
    groups = view(store)

    groups.current(NOW)
    groups.current(NOW + 1)
    groups.update([held_group(failed_canaries=1)], NOW + 1)
    groups.begin_run()
    groups.current(NOW + 300)

    assert store.loads == 2
    assert [g.failed_canaries for g in store.saves[0]] == [1]


def test_the_view_releases_a_group_whose_canary_the_kit_said_ok_and_records_it() -> None:
    out = held_group(canary="id-a", sent_at=NOW - 10, verdict_at=NOW + 900, verdict_key="canary/k")
    store = FakeStore([out], {"canary/k": VerdictCounts(ok=1)})

    current = view(store).current(NOW)

    assert not current["fp-mail"].held and store.saves and not store.saves[-1][0].held


def test_without_consumer_verdicts_the_view_reads_none_and_waits_for_the_verdict_time() -> None:
    out = held_group(canary="id-a", sent_at=NOW - 10, verdict_at=NOW + 900, verdict_key="canary/k")
    store = FakeStore([out], {"canary/k": VerdictCounts(ok=1)})

    assert view(store, reads_verdicts=False).current(NOW)["fp-mail"].held


def test_a_group_that_finds_no_room_in_the_record_is_left_to_the_backoff_never_parked() -> None:
    full = {f"g{i}": held_group(group=f"g{i}") for i in range(32)}

    result = plan([failed(3, body="a")], full)

    assert result.park == () and [r.tracked.message.body for r in result.redrive] == ["a"]
    assert result.held == ()
