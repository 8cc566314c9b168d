"""sqs_redriver.core.table: an operator's retry or park mark of a failure group."""

from __future__ import annotations

from sqs_redriver.core.table import GroupAction, GroupMark, prevailing

PARK = GroupMark("fp-1", GroupAction.PARK, "bug 42", "alice", 100)
RETRY = GroupMark("fp-1", GroupAction.RETRY, "fixed", "bob", 200)


def test_each_action_has_its_key_and_names_the_other() -> None:
    assert (PARK.key, PARK.other_key) == ("PARK#fp-1", "RETRY#fp-1")
    assert (RETRY.key, RETRY.other_key) == ("RETRY#fp-1", "PARK#fp-1")


def test_parking_wins_when_a_fingerprint_has_both_marks_in_either_order() -> None:
    other = GroupMark("fp-2", GroupAction.RETRY)

    assert prevailing([RETRY, PARK, other]) == ({"fp-1": PARK, "fp-2": other}, ["fp-1"])
    assert prevailing([PARK, RETRY]) == ({"fp-1": PARK}, ["fp-1"])


def test_one_mark_per_fingerprint_is_no_conflict() -> None:
    assert prevailing([RETRY]) == ({"fp-1": RETRY}, [])
