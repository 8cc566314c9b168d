"""core/transfer.py's Transfer on in-memory queues: a message leaves its queue only after a send said
it arrived, also when a later send failed, and a failed delete is reported, never raised."""

from __future__ import annotations

from sqs_redriver.core.message import Tracked, track
from sqs_redriver.core.sqs import CALL_FAILED, EntryFailure, outgoing
from sqs_redriver.core.transfer import Transfer
from tests.support.fakes import FakeQueue, dlq_message

NOW = 1_800_000_000


def leaving(*bodies: str) -> list[Tracked]:
    return track([dlq_message(body) for body in bodies], {}, NOW).unique


def send(destination: FakeQueue, messages: list[Tracked], transfer: Transfer) -> None:
    entries = [
        outgoing(str(n), t, t.mark.to_json(), delay=0, deduplication_id="", fifo=False)
        for n, t in enumerate(messages)
    ]
    transfer.book(destination.send(entries), messages)


def test_only_what_arrived_is_deleted_even_when_a_later_send_failed_whole() -> None:
    origin, refusing, failing = FakeQueue("dlq"), FakeQueue("source"), FakeQueue("parking-lot")
    refusing.refuse["b"] = EntryFailure("InternalError", "try again", sender_fault=False)
    failing.fail_calls.add("send")
    a, b, c = leaving("a", "b", "c")
    transfer = Transfer(origin)

    send(refusing, [a, b], transfer)
    send(failing, [c], transfer)
    deleted = transfer.delete_arrived()

    assert origin.deleted == [a.message_id] and deleted.succeeded == [a.message_id]
    assert transfer.arrived == [] and transfer.delete_arrived().succeeded == []  # deleted once


def test_a_delete_call_that_fails_whole_is_reported_for_each_message_it_held() -> None:
    origin = FakeQueue("dlq")
    origin.fail_calls.add("delete")
    a, b = leaving("a", "b")
    transfer = Transfer(origin)

    send(FakeQueue("source"), [a, b], transfer)
    deleted = transfer.delete_arrived()

    assert deleted.call_error and "delete on dlq failed" in deleted.call_error
    assert deleted.succeeded == []
    assert {key: failure.code for key, failure in deleted.failed.items()} == {
        a.message_id: CALL_FAILED,
        b.message_id: CALL_FAILED,
    }


def test_nothing_arrived_means_no_delete_call() -> None:
    origin = FakeQueue("dlq")

    assert Transfer(origin).delete_arrived().succeeded == []
    assert origin.calls == []
