"""The held groups' record (``HELD#<DLQ URL>``, runtime/held.py) against moto: written by a run,
read back alone or in the one BatchGetItem of a batch's group marks, and a corrupt one read as none."""

from __future__ import annotations

import time

from sqs_redriver.core.table import GroupAction, GroupMark, HeldGroup, StateTable
from sqs_redriver.protocol.keys import RecordKind
from tests.support.aws import Aws

NOW = int(time.time())


def table(aws: Aws) -> StateTable:
    return StateTable(aws.table_name, aws.dynamodb, ttl_seconds=3600)


def test_held_groups_are_read_back_alone_and_beside_a_batch_s_group_marks(aws: Aws) -> None:
    state, key = table(aws), RecordKind.HELD.key(aws.dlq_url)
    held = HeldGroup("fp-mail", since=NOW - 600, failed_canaries=2, canary_at=NOW + 60)
    park = GroupMark("fp-bad", GroupAction.PARK, "bug 7", "alice", NOW)
    state.save_held(key, [held])
    state.save_group_mark(park)

    assert state.load_held(key) == (held,)
    assert state.load_failure_groups(["fp-bad", "fp-mail"], key) == ({"fp-bad": park}, (held,))
    assert state.load_failure_groups([], key) == ({}, (held,))
    assert state.load_failure_groups(["fp-bad"], None) == ({"fp-bad": park}, ())


def test_a_corrupt_held_record_is_read_as_no_group_held(aws: Aws) -> None:
    key = RecordKind.HELD.key(aws.dlq_url)
    aws.dynamodb.put_item(TableName=aws.table_name, Item={"pk": {"S": key}, "groups": {"S": '{"fp": 7}'}})

    assert table(aws).load_held(key) == ()
    assert table(aws).load_failure_groups([], key) == ({}, ())
