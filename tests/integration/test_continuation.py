"""Continuation against moto: a run that ran out of room hands over to the next at once, and at
most one continuation is ever pending."""

from __future__ import annotations

from local_aws.queues import depth
from sqs_redriver.core.table import Resume
from sqs_redriver.runtime.continuation import CONTINUATION_STALE_SECONDS
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.settings import Settings
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings
from tests.support.factories import FakeClock


def fill_dlq(aws: Aws, count: int) -> None:
    for i in range(count):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"m-{i}")


def test_a_chain_of_continuations_drains_the_dlq_and_ends_when_it_is_empty(
    aws: Aws, clock: FakeClock
) -> None:
    fill_dlq(aws, 25)
    redriver = make_redriver(aws, make_settings(aws, max_messages_per_run=12), clock)

    first = redriver.run(REMAINING)
    second = redriver.run(REMAINING, first.continue_with)
    third = redriver.run(REMAINING, second.continue_with)

    assert [r.redriven for r in (first, second, third)] == [12, 12, 1]
    assert first.continue_with and second.continue_with
    assert (first.continue_with.generation, second.continue_with.generation) == (1, 2)
    assert third.continue_with is None and third.stopped_because == "DLQ empty"
    assert depth(aws.sqs, aws.dlq_url) == 0


def test_a_scheduled_run_does_not_start_a_second_chain_while_one_is_pending(
    aws: Aws, clock: FakeClock
) -> None:
    fill_dlq(aws, 30)
    redriver = make_redriver(aws, make_settings(aws, max_messages_per_run=10), clock)

    chain = redriver.run(REMAINING)
    tick = redriver.run(REMAINING)
    continued = redriver.run(REMAINING, chain.continue_with)

    assert chain.continue_with is not None and tick.continue_with is None
    assert tick.redriven == 10  # the tick still does its own run
    assert continued.redriven == 10 and continued.continue_with is not None


def test_a_continuation_delivered_twice_runs_once(aws: Aws, clock: FakeClock) -> None:
    fill_dlq(aws, 30)
    redriver = make_redriver(aws, make_settings(aws, max_messages_per_run=10), clock)
    resume = redriver.run(REMAINING).continue_with

    once = redriver.run(REMAINING, resume)
    again = redriver.run(REMAINING, resume)

    assert once.redriven == 10
    assert (again.received, again.stopped_because, again.continue_with) == (
        0,
        "continuation already taken",
        None,
    )


def test_a_lost_continuation_blocks_others_only_until_it_is_stale(aws: Aws, clock: FakeClock) -> None:
    fill_dlq(aws, 40)
    redriver = make_redriver(aws, make_settings(aws, max_messages_per_run=10), clock)
    lost = redriver.run(REMAINING).continue_with  # never delivered

    blocked = redriver.run(REMAINING)
    clock.advance(CONTINUATION_STALE_SECONDS + 1)
    after = redriver.run(REMAINING)

    assert lost is not None and blocked.continue_with is None
    assert after.continue_with is not None
    assert redriver.run(REMAINING, lost).stopped_because == "continuation already taken"


def test_a_continuation_that_could_not_be_started_frees_the_slot(aws: Aws, clock: FakeClock) -> None:
    fill_dlq(aws, 30)
    redriver = make_redriver(aws, make_settings(aws, max_messages_per_run=10), clock)
    failed = redriver.run(REMAINING).continue_with
    assert failed is not None

    redriver.release_continuation(failed)

    assert redriver.run(REMAINING).continue_with is not None


def test_no_continuation_when_turned_off(aws: Aws, clock: FakeClock) -> None:
    fill_dlq(aws, 30)
    redriver = make_redriver(aws, make_settings(aws, max_messages_per_run=10, max_continuations=0), clock)

    assert redriver.run(REMAINING).continue_with is None


def chain_pending(aws: Aws, clock: FakeClock, messages: int) -> tuple[Settings, Redriver, Resume]:
    """A DLQ of ``messages``, runs of 10, and the continuation its first run offered."""
    fill_dlq(aws, messages)
    settings = make_settings(aws, max_messages_per_run=10)
    redriver = make_redriver(aws, settings, clock)
    pending = redriver.run(REMAINING).continue_with
    assert pending is not None
    return settings, redriver, pending


def test_a_tick_beside_a_chains_run_never_starts_a_second_chain(aws: Aws, clock: FakeClock) -> None:
    settings, redriver, pending = chain_pending(aws, clock, 40)
    # The continuation's run has started (it holds the slot) when a tick runs beside it.
    assert redriver.state.take_continuation(settings.dlq_url, pending.token, hold_seconds=960)

    tick = redriver.run(REMAINING)

    assert tick.redriven == 10 and tick.continue_with is None
    # the chain's run, at its end, hands the slot to its own continuation
    assert redriver.state.offer_continuation(settings.dlq_url, "next", stale_after=900, holder=pending.token)


def test_the_slot_of_a_chains_run_that_died_is_free_once_its_hold_expired(aws: Aws, clock: FakeClock) -> None:
    settings, redriver, died = chain_pending(aws, clock, 40)
    hold = settings.dlq_visibility_timeout_seconds
    assert redriver.state.take_continuation(settings.dlq_url, died.token, hold_seconds=hold)

    blocked = redriver.run(REMAINING)
    clock.advance(hold + 1)
    after = redriver.run(REMAINING)

    assert blocked.continue_with is None and after.continue_with is not None


def test_a_chains_run_that_does_not_go_on_frees_its_slot(aws: Aws, clock: FakeClock) -> None:
    fill_dlq(aws, 15)
    redriver = make_redriver(aws, make_settings(aws, max_messages_per_run=10), clock)
    first = redriver.run(REMAINING).continue_with

    last = redriver.run(REMAINING, first)
    fill_dlq(aws, 20)
    tick = redriver.run(REMAINING)

    assert last.stopped_because == "DLQ empty" and last.continue_with is None
    assert tick.continue_with is not None


def test_a_continuation_taken_twice_at_once_runs_once(aws: Aws, clock: FakeClock) -> None:
    settings, redriver, resume = chain_pending(aws, clock, 30)
    state = redriver.state

    first = state.take_continuation(settings.dlq_url, resume.token, hold_seconds=960)
    again = state.take_continuation(settings.dlq_url, resume.token, hold_seconds=960)

    assert first and not again
