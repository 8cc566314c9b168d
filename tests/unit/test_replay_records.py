"""The records of what replays sent: written in parts and read back whole, and any item read is a
record or a ``CorruptReplay`` naming the field, never another error."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.console.errors import CorruptReplay
from sqs_redriver.console.outcomes import (
    IDENTITIES_PER_PART,
    REPLAY_TTL_SECONDS,
    ReplayKind,
    ReplayRecord,
    ReplayRecords,
    Sent,
    new_replay_id,
)
from sqs_redriver.protocol.keys import RecordKind, replay_record_key

DLQ = "https://sqs.eu-west-1.amazonaws.com/111122223333/orders-dlq"
SOURCES = ["https://sqs.eu-west-1.amazonaws.com/111122223333/orders", "https://sqs/x/payments"]
AT = 1_800_000_000


class FakeDynamoDB:
    """Items by key: the calls DynamoTable makes, with no conditions checked but existence."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    def get_item(self, Key: dict[str, Any], **_: Any) -> dict[str, Any]:
        item = self.items.get(Key["pk"]["S"])
        return {"Item": item} if item is not None else {}

    def put_item(self, Item: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.items[Item["pk"]["S"]] = Item
        return {}

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        for request in next(iter(RequestItems.values())):
            self.put_item(request["PutRequest"]["Item"])
        return {}

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        table, request = next(iter(RequestItems.items()))
        found = [self.items[k["pk"]["S"]] for k in request["Keys"] if k["pk"]["S"] in self.items]
        return {"Responses": {table: found}}


def test_a_large_replay_is_written_in_parts_and_read_back_whole() -> None:
    client = FakeDynamoDB()
    records = ReplayRecords("state", client, DLQ)
    sent = tuple(
        Sent(f"id-{n}", "fp-a" if n % 2 else None, SOURCES[n % 2]) for n in range(IDENTITIES_PER_PART * 2 + 5)
    )
    record = ReplayRecord(
        new_replay_id(AT), ReplayKind.REPLAY, "arn:aws:sts::1:assumed-role/on-call", AT, "all", sent
    )

    records.save(record)

    assert len(client.items) == 4  # three parts and the index
    assert records.load(record.replay_id, now=AT + 60) == record
    assert records.load(record.replay_id, now=AT + REPLAY_TTL_SECONDS) is None  # expired
    assert [e.replay_id for e in records.recent(now=AT + 60)] == [record.replay_id]


def test_replays_of_the_same_second_are_listed_the_later_first() -> None:
    records = ReplayRecords("state", FakeDynamoDB(), DLQ)
    second = new_replay_id(AT)[:-4]
    in_order_done = [second + tail for tail in ("ffff", "0000", "8888")]  # their random tails, unsorted
    for replay_id in in_order_done:
        records.save(ReplayRecord(replay_id, ReplayKind.REPLAY, "arn:aws:iam::1:user/on-call", AT, "all", ()))

    assert [e.replay_id for e in records.recent(now=AT)] == in_order_done[::-1]


def test_a_missing_part_is_named() -> None:
    client = FakeDynamoDB()
    records = ReplayRecords("state", client, DLQ)
    sent = tuple(Sent(f"id-{n}", None, SOURCES[0]) for n in range(IDENTITIES_PER_PART + 1))
    record = ReplayRecord(new_replay_id(AT), ReplayKind.EDIT, "me", AT, "", sent)
    records.save(record)
    del client.items[replay_record_key(DLQ, record.replay_id, 1)]

    try:
        records.load(record.replay_id, now=AT)
    except CorruptReplay as exc:
        assert "part 1 of 2 is missing" in str(exc)
    else:
        raise AssertionError("a record with a part missing was read")


attribute_values = st.recursive(
    st.builds(lambda s: {"S": s}, st.text(max_size=30) | st.sampled_from(["id-1 fp-a 0", "id-1  0", "x y 9"]))
    | st.builds(lambda n: {"N": n}, st.sampled_from(["1", "0", "-3", "1e3", str(AT), "2", "x"]))
    | st.just({"NULL": True}),
    lambda inner: st.builds(lambda items: {"L": items}, st.lists(inner, max_size=3)),
    max_leaves=8,
)
NAMES = ["kind", "who", "at", "detail", "sources", "parts", "sent", "expires_at", "replays", "version"]


@given(st.dictionaries(st.sampled_from(NAMES), attribute_values), st.sampled_from(list(ReplayKind)))
def test_any_item_is_a_record_or_a_rejection_naming_its_key(item: dict[str, Any], kind: ReplayKind) -> None:
    client = FakeDynamoDB()
    records = ReplayRecords("state", client, DLQ)
    replay_id = new_replay_id(AT)
    client.put_item({**item, "pk": {"S": replay_record_key(DLQ, replay_id)}})
    client.put_item({**item, "pk": {"S": RecordKind.REPLAY_INDEX.key(DLQ)}})

    for read in (lambda: records.load(replay_id, now=AT), lambda: records.recent(now=AT)):
        try:
            value = read()
        except CorruptReplay as rejection:
            assert "REPLAY" in str(rejection)
        else:
            assert value is None or isinstance(value, (ReplayRecord, list))
