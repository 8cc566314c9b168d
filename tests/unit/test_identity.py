"""sqs_redriver.core.message and routing: who a message is, its count, and where it goes back."""

from __future__ import annotations

from dataclasses import replace

from sqs_redriver.core.message import counted_in_table, track
from sqs_redriver.core.message import screened as screened_message
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.limits import MAX_MARK_BYTES, SQS_MAX_MESSAGE_BYTES
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.routing import Routes
from tests.support.factories import TEN_ATTRIBUTES
from tests.support.fakes import dlq_message, queue_url

NOW = 1_800_000_000


def test_a_marked_message_keeps_the_identity_and_count_it_carries() -> None:
    mark = Mark("id-original", 2, 5, (10, 20))

    [tracked] = track([dlq_message(mark=mark, message_id="m-new")], {}, NOW).unique

    assert tracked.mark == mark and tracked.carries_mark


def test_a_first_failure_is_known_by_its_message_id_from_now() -> None:
    [tracked] = track([dlq_message(message_id="m-7")], {}, NOW).unique

    assert tracked.mark == Mark("m-7", 0, NOW, ()) and tracked.carries_mark


def test_a_message_with_no_room_for_the_mark_is_counted_by_its_content_in_the_table() -> None:
    full = dlq_message("order", attributes=TEN_ATTRIBUTES)
    recorded = Mark(full.content_identity, 3, 1, (1, 2, 3))

    assert counted_in_table([full, dlq_message("roomy")]) == [full.content_identity]
    [tracked] = track([full], {full.content_identity: recorded}, NOW).unique
    [unseen] = track([dlq_message("other", attributes=TEN_ATTRIBUTES)], {}, NOW).unique

    assert tracked.mark == recorded and not tracked.carries_mark
    assert (unseen.mark.count, unseen.mark.first_failed_at) == (0, NOW)


def test_a_message_goes_back_to_the_source_sqs_names_else_to_the_first() -> None:
    routes = Routes((queue_url("orders"), queue_url("payments")))
    payments, unnamed, unknown = track(
        [dlq_message("p", source="payments"), dlq_message("u"), dlq_message("x", source="legacy")], {}, NOW
    ).unique

    assert routes.source_url(payments) == queue_url("payments")
    assert routes.source_url(unnamed) == queue_url("orders")
    assert routes.source_url(unknown) is None
    assert routes.describe_source(unknown) == "arn:aws:sqs:us-east-1:123456789012:legacy"


def test_a_recorded_failure_older_than_the_last_redrive_belongs_to_an_earlier_delivery() -> None:
    # GIVEN a message counted only in the table, whose failure record outlived its next re-drive
    big = dlq_message("x" * (SQS_MAX_MESSAGE_BYTES - MAX_MARK_BYTES + 1))
    failure = Failure(FailureKind.TERMINAL, "E", "m", "fp", at=100, attempt=1, source="arn")
    old = Mark(big.content_identity, 1, 50, (200,), failure)
    new = replace(old, failure=replace(failure, at=300))

    assert track([big], {old.identity: old}, NOW).unique[0].mark.failure is None
    assert track([big], {new.identity: new}, NOW).unique[0].mark.failure == new.failure


def test_a_carried_failure_stamped_just_before_the_last_redrive_is_this_delivery_s() -> None:
    # GIVEN the kit dead-lettered a re-driven message from the second source within seconds, its
    # consumer's clock 5 s behind the re-driver's: the failure looks older than the re-drive
    routes = Routes((queue_url("orders"), queue_url("payments")))
    source = "arn:aws:sqs:us-east-1:123456789012:payments"
    failure = Failure(FailureKind.TERMINAL, "E", "m", "fp", at=NOW - 65, attempt=1, source=source)

    [tracked] = track([dlq_message(mark=Mark("id-1", 1, 1, (NOW - 60,), failure))], {}, NOW).unique

    # THEN it is kept (every re-drive clears a carried failure): parked as terminal, from payments
    assert tracked.mark.failure == failure
    assert routes.source_url(tracked) == queue_url("payments")


def test_a_mark_from_the_future_is_screened_out_and_the_message_known_by_its_message_id() -> None:
    forged = Mark("id-forged", 1, NOW - 60, (NOW + 86_400,))

    screened = screened_message(dlq_message(mark=forged, message_id="m-9"), NOW)
    [tracked] = track([screened], {}, NOW).unique

    assert screened.mark is None and screened.mark_rejection is not None
    assert screened.mark_rejection.field == "at[0]"
    assert tracked.mark == Mark("m-9", 0, NOW, ()) and not tracked.redriven_since(0)


def test_a_mark_within_the_clock_rule_passes_the_screen_unchanged() -> None:
    message = dlq_message(mark=Mark("id-1", 1, NOW - 60, (NOW - 30,)))
    assert screened_message(message, NOW) is message
