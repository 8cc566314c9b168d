"""sqs_redriver.runtime.fifo: send rounds that keep group order, deduplication ids, due times."""

from __future__ import annotations

from sqs_redriver.core.message import deduplication_id, track
from sqs_redriver.protocol.envelope import HASH_IDENTITY_PREFIX
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.backoff import due_at
from sqs_redriver.runtime.fifo import send_rounds
from tests.support.fakes import dlq_message

NOW = 1_800_000_000


def test_round_k_holds_each_groups_kth_message() -> None:
    assert send_rounds(["a", "b", "a", "c", "a", "b"]) == [[0, 1, 3], [2, 5], [4]]


def test_standard_messages_are_their_own_groups_and_go_in_one_round() -> None:
    assert send_rounds(["id-1", "id-2", "id-3"]) == [[0, 1, 2]]


def test_the_deduplication_id_is_new_for_each_redrive_and_the_same_for_its_retry() -> None:
    [tracked] = track([dlq_message(mark=Mark("id-1", 2))], {}, NOW).unique

    assert deduplication_id(tracked, "3") == deduplication_id(tracked, "3")
    assert deduplication_id(tracked, "4") != deduplication_id(tracked, "3")


def test_after_a_replay_each_step_gets_an_id_of_its_own_though_the_count_starts_again() -> None:
    before = Mark("id-1", 5, 1, (10, 20, 30, 40, 50))
    after = before.replayed(NOW)
    [old] = track([dlq_message(mark=before)], {}, NOW).unique
    [new] = track([dlq_message(mark=after)], {}, NOW).unique
    [again] = track([dlq_message(mark=after.replayed(NOW + 60))], {}, NOW).unique

    # parked again, or re-driven with the same count as before the replay: a new id (a reused one
    # within 5 minutes would make SQS drop the message, which the sender then deletes)
    assert deduplication_id(new, "parked") != deduplication_id(old, "parked")
    assert deduplication_id(new, "1") != deduplication_id(old, "1")
    assert deduplication_id(again, "replay") != deduplication_id(new, "replay")


def test_a_content_identity_uses_the_dlq_message_id_so_twins_are_not_dropped() -> None:
    twins = [
        dlq_message("same", mark=Mark(HASH_IDENTITY_PREFIX + "f" * 64, 1), message_id=f"m-twin-{i}")
        for i in (1, 2)
    ]
    first, second = (track([m], {}, NOW).unique[0] for m in twins)

    assert deduplication_id(first, "parked") != deduplication_id(second, "parked")


def test_the_due_time_counts_from_the_last_redrive_and_is_the_same_in_every_run() -> None:
    [tracked] = track([dlq_message(mark=Mark("id-1", 1, 1, (NOW - 30,)))], {}, NOW).unique

    due = due_at(tracked, now=NOW, base_seconds=60, max_seconds=900)

    assert NOW - 30 + 60 <= due <= NOW - 30 + 120
    assert due_at(tracked, now=NOW + 500, base_seconds=60, max_seconds=900) == due


def test_a_message_never_redriven_counts_from_its_original_send() -> None:
    [tracked] = track([dlq_message(sent_at=NOW - 1000)], {}, NOW).unique

    assert NOW - 1000 + 30 <= due_at(tracked, now=NOW, base_seconds=60, max_seconds=900) <= NOW - 1000 + 60
