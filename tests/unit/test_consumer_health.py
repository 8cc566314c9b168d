"""decide/consumer_health.py, decide/suspicion.py and the metric verdicts of decide/canary.py:
what a source queue's minutes say about its consumer, example by example and for any minutes
(Hypothesis)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Canary, Evidence, State, expects_verdicts
from sqs_redriver.core.message import Tracked
from sqs_redriver.protocol.envelope import DlqMessage
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.canary import after_health, heard_elsewhere, heard_in_returns
from sqs_redriver.runtime.consumer_health import (
    ConsumerSignal,
    Context,
    Health,
    Minute,
    QueueActivity,
    failure_context,
    health,
    judge,
    suspect_reason_text,
)

T0 = 1_800_000_000 - 1_800_000_000 % 60
URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
WINDOW = 180 * 6  # visibility timeout 180 s, maxReceiveCount 5


def minute(offset: int, received: int = 0, deleted: int = 0, **lambda_counts: int) -> Minute:
    return Minute(at=T0 + 60 * offset, received=received, deleted=deleted, **lambda_counts)


def activity(*minutes: Minute, until: int = 30) -> QueueActivity:
    return QueueActivity(URL, T0 - 3 * 3600, T0 + 60 * until, tuple(minutes))


# -- the consumer's health now -----------------------------------------------------------------


def test_no_minute_with_activity_is_idle_never_a_verdict() -> None:
    assert health(activity(), since=T0).health is Health.IDLE
    assert after_health(half_open(), health(activity(), since=T0), T0 + 1800) is None


def test_deletes_in_the_latest_active_minute_mean_healthy() -> None:
    reading = health(activity(minute(1, received=5), minute(4, received=3, deleted=1)), since=T0)
    assert reading.health is Health.HEALTHY and reading.minute == minute(4, received=3, deleted=1)


def test_receives_never_deleted_with_a_quiet_minute_after_mean_down() -> None:
    reading = health(activity(minute(1, deleted=9), minute(4, received=1)), since=T0)
    assert reading.health is Health.DOWN


def test_a_failing_minute_whose_next_is_not_published_is_unsettled() -> None:
    # its deletes may be in the next minute, which CloudWatch has not published yet
    assert health(activity(minute(28, received=1), until=29), since=T0).health is Health.UNSETTLED


def test_minutes_before_since_are_not_judged_again() -> None:
    assert health(activity(minute(1, received=4)), since=T0 + 120).health is Health.IDLE


def test_a_function_failing_every_invocation_or_throttled_is_failing() -> None:
    assert health(activity(minute(2, invocations=3, errors=3)), since=T0).health is Health.DOWN
    assert health(activity(minute(2, throttles=1)), since=T0).health is Health.DOWN
    assert health(activity(minute(2, invocations=3, errors=1)), since=T0).health is Health.IDLE


def test_metrics_reopen_a_half_open_breaker_and_remember_what_they_judged() -> None:
    reading = health(activity(minute(4, received=1)), since=T0)
    after = after_health(half_open(), reading, T0 + 1800)
    assert after is not None and after.state is State.OPEN
    assert (after.evidence, after.judged_until) == (Evidence.METRICS, T0 + 1800)


def test_deletes_flowing_again_close_a_half_open_breaker() -> None:
    after = after_health(half_open(), health(activity(minute(4, deleted=1)), since=T0), T0 + 1800)
    assert after is not None and (after.state, after.evidence) == (State.CLOSED, Evidence.METRICS)


def test_the_metrics_never_move_a_closed_or_open_breaker() -> None:
    down = health(activity(minute(4, received=1)), since=T0)
    assert after_health(Breaker(), down, T0 + 1800) is None
    assert after_health(Breaker(State.OPEN, changed_at=T0), down, T0 + 1800) is None


minutes = st.lists(
    st.builds(
        Minute,
        at=st.integers(0, 40).map(lambda i: T0 + 60 * i),
        received=st.integers(0, 50),
        deleted=st.integers(0, 50),
        invocations=st.integers(0, 5),
        errors=st.integers(0, 5),
        throttles=st.integers(0, 2),
    ),
    max_size=12,
    unique_by=lambda m: m.at,
).map(lambda ms: tuple(sorted(ms, key=lambda m: m.at)))


@given(minutes, st.integers(0, 45), st.integers(0, 45))
def test_only_receives_never_deleted_can_reopen_and_only_deletes_can_close(
    published: tuple[Minute, ...], since: int, until: int
) -> None:
    reading = health(activity(*published, until=until), since=T0 + 60 * since)
    after = after_health(half_open(), reading, T0 + 3600)
    judged = [m for m in published if m.at >= T0 + 60 * since and m.at + 60 <= T0 + 60 * until]
    if after is not None and after.state is State.OPEN:
        assert judged and all(m.deleted == 0 for m in judged[-1:])
    if after is not None and after.state is State.CLOSED:
        assert any(m.deleted for m in judged)
    if not any(m.received or m.deleted or m.invocations or m.throttles for m in judged):
        assert after is None


# -- why one message failed ----------------------------------------------------------------------


def context(*published: Minute) -> Context:
    found = failure_context(
        activity(*published), sent_at=T0, span_end=T0 + WINDOW, max_receive_count=5, failure_ratio=0.5
    )
    return found.context


def test_failing_while_the_consumer_processed_many_others_is_a_suspect() -> None:
    # 10 poison received 5 times each, 40 good deleted: the failures are a small share
    assert context(minute(0, received=50, deleted=40), *(minute(i, received=10) for i in (3, 6, 9, 12))) is (
        Context.SUSPECT
    )


def test_failing_while_the_consumer_deleted_nothing_is_an_outage() -> None:
    assert context(minute(0, received=300), minute(3, received=300)) is Context.OUTAGE


def test_failing_with_half_of_what_the_consumer_handled_is_an_outage_not_poison() -> None:
    # 50 good and 50 failing messages: 50 deleted, 250 failed receives (50 messages x 5)
    assert context(minute(0, received=100, deleted=50), minute(3, received=200)) is Context.OUTAGE


def test_no_datapoints_or_a_span_before_the_reading_is_unknown() -> None:
    assert context() is Context.UNKNOWN
    early = failure_context(
        activity(), sent_at=T0 - 4 * 3600, span_end=T0, max_receive_count=5, failure_ratio=0.5
    )
    assert early.context is Context.UNKNOWN


POISON_SPAN = (minute(0, received=50, deleted=40), minute(3, received=10), minute(6, received=10))
QUIET_SPAN = (minute(0, received=10), minute(3, received=10), minute(6, received=10))


def test_a_first_failure_among_processed_messages_makes_a_suspect() -> None:
    judged = judge(first_failure(), signal(*POISON_SPAN), Breaker(), failure_ratio=0.5)
    assert (judged.tracked.mark.suspected, judged.tracked.mark.processed_meanwhile) == (1, 40)
    assert not judged.outage


def test_a_suspect_failing_again_in_a_quiet_queue_counts_unless_the_breaker_moved_meanwhile() -> None:
    suspect = redriven(Mark("m-1", count=1, first_failed_at=T0 - 900, redriven_at=(T0,), suspected=1))
    again = judge(suspect, signal(*QUIET_SPAN), Breaker(), failure_ratio=0.5)
    assert again.tracked.mark.suspected == 2 and not again.outage
    moved = judge(suspect, signal(*QUIET_SPAN), Breaker(State.OPEN, changed_at=T0 + 60), failure_ratio=0.5)
    assert moved.tracked.mark.suspected == 1 and not moved.outage


def test_a_first_failure_in_an_outage_counts_against_the_breaker_only_after_its_last_change() -> None:
    assert judge(first_failure(), signal(*QUIET_SPAN), Breaker(), failure_ratio=0.5).outage
    later = Breaker(State.CLOSED, changed_at=T0 + WINDOW + 60)
    assert not judge(first_failure(), signal(*QUIET_SPAN), later, failure_ratio=0.5).outage


def test_the_kits_own_classification_and_a_missing_reading_are_left_alone() -> None:
    failed = Failure(FailureKind.TRANSIENT, "Timeout", "slow", "0123456789abcdef", T0 + 60, 5, "")
    with_kit = replace(first_failure(), mark=replace(first_failure().mark, failure=failed))
    assert judge(with_kit, signal(*POISON_SPAN), Breaker(), failure_ratio=0.5).tracked == with_kit
    assert judge(first_failure(), None, Breaker(), failure_ratio=0.5).tracked == first_failure()


def test_the_suspects_reason_says_how_often_and_how_many_others_were_processed() -> None:
    tracked = redriven(Mark("m-1", suspected=3, processed_meanwhile=412))
    assert suspect_reason_text(tracked) == "failed 3 times while the consumer processed 412 others"


def test_a_suspicion_survives_the_mark_and_a_replay_clears_it() -> None:
    mark = Mark("m-1", count=2, redriven_at=(T0, T0 + 60), suspected=2, processed_meanwhile=99)
    assert Mark.from_json(mark.after_redrive(T0 + 900).to_json()).suspected == 2
    assert Mark.from_json(mark.to_json()) == mark
    assert mark.replayed(T0 + 999).suspected == 0


# -- consumer verdicts expected but never given ------------------------------------------------


def test_probes_judged_elsewhere_while_verdicts_were_expected_stop_the_waiting() -> None:
    breaker = half_open()
    once = heard_elsewhere(breaker, breaker, from_kit=False)
    twice = heard_elsewhere(once, once, from_kit=False)
    assert expects_verdicts(once, True) and not expects_verdicts(twice, True)
    assert heard_elsewhere(twice, twice, from_kit=True).silent_probes == 0
    assert not expects_verdicts(Breaker(), False)


POLICY = BreakerPolicy(minimum_volume=3)
SILENT = Breaker(silent_probes=2, version=4)


def failures(unheard: int, heard: int) -> list[Tracked]:
    """``unheard`` failures that reached the DLQ without the kit's word, ``heard`` with it."""
    word = Failure(FailureKind.TRANSIENT, "Timeout", "slow", "0123456789abcdef", T0, 5, "")
    return [
        Tracked(DlqMessage(f"u-{i}", f"r-u-{i}", "{}"), Mark(f"u-{i}", count=1, verdict_key="RUN#1#a"))
        for i in range(unheard)
    ] + [Tracked(DlqMessage(f"h-{i}", f"r-h-{i}", "{}"), Mark(f"h-{i}", failure=word)) for i in range(heard)]


def test_failures_past_the_kit_in_a_closed_breaker_stop_the_waiting_before_the_batch_is_planned() -> None:
    after = heard_in_returns(
        Breaker(version=4), failures(3, 0), consumer_verdicts=True, fifo=False, policy=POLICY
    )

    assert after is not None and not expects_verdicts(after, True)
    assert (after.state, after.version) == (State.CLOSED, 5)


def test_fewer_failures_past_the_kit_than_the_minimum_volume_or_than_in_its_words_say_nothing() -> None:
    assert (
        heard_in_returns(Breaker(), failures(2, 0), consumer_verdicts=True, fifo=False, policy=POLICY) is None
    )
    assert (
        heard_in_returns(Breaker(), failures(3, 4), consumer_verdicts=True, fifo=False, policy=POLICY) is None
    )


def test_a_silent_consumer_whose_failures_are_all_in_the_kits_words_again_is_waited_for_again() -> None:
    back = heard_in_returns(SILENT, failures(0, 3), consumer_verdicts=True, fifo=False, policy=POLICY)

    assert back is not None and expects_verdicts(back, True)
    assert heard_in_returns(SILENT, failures(0, 2), consumer_verdicts=True, fifo=False, policy=POLICY) is None
    assert heard_in_returns(SILENT, failures(1, 5), consumer_verdicts=True, fifo=False, policy=POLICY) is None
    assert heard_in_returns(SILENT, failures(4, 0), consumer_verdicts=True, fifo=False, policy=POLICY) is None


def test_on_fifo_failures_without_the_kits_words_say_nothing_the_processor_skips_group_mates() -> None:
    assert (
        heard_in_returns(Breaker(), failures(9, 1), consumer_verdicts=True, fifo=True, policy=POLICY) is None
    )


@given(
    unheard=st.integers(0, 20),
    heard=st.integers(0, 20),
    silent=st.booleans(),
    verdicts=st.booleans(),
    minimum_volume=st.integers(0, 10),
)
def test_the_kit_is_judged_silent_only_by_enough_failures_past_it_and_back_only_by_its_words(
    unheard: int, heard: int, silent: bool, verdicts: bool, minimum_volume: int
) -> None:
    breaker = SILENT if silent else Breaker(version=4)
    policy = BreakerPolicy(minimum_volume=minimum_volume)

    after = heard_in_returns(
        breaker, failures(unheard, heard), consumer_verdicts=verdicts, fifo=False, policy=policy
    )

    if after is None:
        return
    assert verdicts, "without consumer verdicts the kit's silence means nothing"
    assert after.version == breaker.version + 1 and after.state is breaker.state
    if expects_verdicts(after, True):
        assert silent and heard >= max(minimum_volume, 1) and not unheard
    else:
        assert not silent and unheard >= max(minimum_volume, 1) and unheard >= heard


# -- helpers -------------------------------------------------------------------------------------


def half_open() -> Breaker:
    return Breaker(State.HALF_OPEN, changed_at=T0, version=3, canary=Canary(("c",), T0 + WINDOW, sent_at=T0))


def signal(*published: Minute) -> ConsumerSignal:
    return ConsumerSignal(activity(*published), max_receive_count=5, visibility_timeout_seconds=180)


def first_failure() -> Tracked:
    message = DlqMessage("m-1", "rh", "{}", system_attributes={"SentTimestamp": str(T0 * 1000)})
    return Tracked(message, Mark("m-1", first_failed_at=T0 + WINDOW))


def redriven(mark: Mark) -> Tracked:
    return Tracked(DlqMessage("m-1", "rh", "{}", mark=mark), mark)
