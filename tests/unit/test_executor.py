"""The re-driver's Executor (runtime/batch.py) on in-memory queues and table: nothing leaves the
DLQ before it arrived."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import pytest

from sqs_redriver.core.message import Tracked, deduplication_id, track
from sqs_redriver.core.sqs import EntryFailure
from sqs_redriver.core.table import ParkCause, RecordStatus
from sqs_redriver.core.transfer import TokenBucket
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.batch import Executor
from sqs_redriver.runtime.parking import UNPARKABLE_HIDE_SECONDS, Parker, over_limit_reason
from sqs_redriver.runtime.plan import BatchPlan, Hold, Park, Redrive
from sqs_redriver.runtime.redrive import RedriveSender
from sqs_redriver.runtime.routing import Routes
from tests.support.factories import TEN_ATTRIBUTES
from tests.support.fakes import FakeArchive, FakeQueue, FakeStateStore, dlq_message

NOW = 1_800_000_000
REFUSED = EntryFailure("InvalidParameterValue", "MessageBody holds characters SQS refuses", sender_fault=True)
SERVER_FAULT = EntryFailure("InternalError", "try again", sender_fault=False)
SILENT = logging.getLogger("executor-tests")


class World:
    def __init__(self, *, fifo: bool = False, archive: FakeArchive | None = None) -> None:
        suffix = ".fifo" if fifo else ""
        self.dlq = FakeQueue(f"orders-dlq{suffix}")
        self.orders = FakeQueue(f"orders{suffix}")
        self.payments = FakeQueue(f"payments{suffix}")
        self.parking_lot = FakeQueue(f"parking-lot{suffix}")
        self.state = FakeStateStore()
        self.routes = Routes((self.orders.url, self.payments.url))
        redrives = RedriveSender(
            sources=[self.orders, self.payments],
            state=self.state,
            limiter=TokenBucket(500, burst=10, sleep=lambda _: None),
            routes=self.routes,
            fifo=fifo,
            record_every_redrive=False,
            logger=SILENT,
        )
        parker = Parker(
            parking_lot=self.parking_lot,
            dlq=self.dlq,
            state=self.state,
            routes=self.routes,
            fifo=fifo,
            logger=SILENT,
            archive=archive,
        )
        self.executor = Executor(dlq=self.dlq, redrives=redrives, parker=parker, logger=SILENT)

    def park(self, tracked: Tracked) -> Park:
        return Park(tracked, over_limit_reason(tracked, 3, now=NOW, routes=self.routes))


def tracked(*messages: object) -> list[Tracked]:
    return track(messages, {}, NOW).unique  # type: ignore[arg-type]


def test_redrives_go_to_their_source_with_the_next_count_and_only_those_are_deleted() -> None:
    world = World()
    a, b = tracked(
        dlq_message("a", attributes={"k": string_attribute("v")}), dlq_message("b", source="payments")
    )

    executed = world.executor.execute(BatchPlan(redrive=(Redrive(a, 60), Redrive(b, 120))), NOW)

    [to_orders], [to_payments] = world.orders.sent, world.payments.sent
    assert (to_orders.body, to_orders.delay_seconds, to_payments.body) == ("a", 60, "b")
    assert to_orders.attributes["k"] == string_attribute("v")
    assert Mark.from_json(to_orders.attributes[MARK_ATTRIBUTE]["StringValue"]).count == 1
    assert sorted(world.dlq.deleted) == sorted([a.message_id, b.message_id])
    assert (executed.tally.redriven, executed.tally.errors, executed.failure) == (2, 0, None)
    assert world.state.records == []  # marked messages carry their own count


def test_a_message_the_source_refuses_for_good_is_parked_with_the_code_and_what_it_said() -> None:
    world = World()
    world.orders.refuse["bad"] = REFUSED
    [bad] = tracked(dlq_message("bad"))

    executed = world.executor.execute(BatchPlan(redrive=(Redrive(bad, 0),)), NOW)

    [parked] = world.parking_lot.sent
    reason = json.loads(parked.attributes[MARK_ATTRIBUTE]["StringValue"])["parked"]
    assert reason["why"] == (
        "source queue rejected it: InvalidParameterValue (MessageBody holds characters SQS refuses)"
    )
    assert world.dlq.deleted == [bad.message_id] and executed.tally.parked == 1


def test_a_server_fault_leaves_the_message_in_the_dlq_and_counts_an_error() -> None:
    world = World()
    world.orders.refuse["flaky"] = SERVER_FAULT
    flaky, fine = tracked(dlq_message("flaky"), dlq_message("fine"))

    executed = world.executor.execute(BatchPlan(redrive=(Redrive(flaky, 0), Redrive(fine, 0))), NOW)

    assert world.dlq.deleted == [fine.message_id]
    assert (executed.tally.redriven, executed.tally.errors) == (1, 1)


def test_a_count_kept_in_the_table_is_written_before_the_send_and_put_back_when_it_fails() -> None:
    world = World()
    world.orders.refuse["full"] = SERVER_FAULT
    [full] = tracked(dlq_message("full", attributes=TEN_ATTRIBUTES))

    world.executor.execute(BatchPlan(redrive=(Redrive(full, 0),)), NOW)

    ahead, back = world.state.records
    assert (ahead.mark.count, back.mark.count) == (1, 0)
    assert ahead.status is back.status is RecordStatus.REDRIVEN
    assert world.dlq.deleted == []


def test_what_arrived_is_deleted_even_when_a_later_send_call_fails_whole() -> None:
    world = World()
    world.payments.fail_calls.add("send")
    to_orders, to_payments = tracked(dlq_message("o"), dlq_message("p", source="payments"))

    executed = world.executor.execute(
        BatchPlan(redrive=(Redrive(to_orders, 0), Redrive(to_payments, 0))), NOW
    )

    assert world.dlq.deleted == [to_orders.message_id]
    assert executed.failure and "payments" in executed.failure
    assert executed.tally.errors == 0  # the failed call is counted once, by the run it stops


def test_redrives_that_arrived_are_deleted_when_parking_fails_after_them() -> None:
    world = World()
    world.parking_lot.fail_calls.add("send")
    fresh, poison = tracked(dlq_message("fresh"), dlq_message("poison", mark=Mark("id-p", 3)))

    executed = world.executor.execute(
        BatchPlan(redrive=(Redrive(fresh, 0),), park=(world.park(poison),)), NOW
    )

    assert world.dlq.deleted == [fresh.message_id] and executed.failure
    [record] = world.state.records
    assert record.status is RecordStatus.PARKED and record.reason is not None


def test_a_message_the_parking_lot_refuses_is_hidden_for_hours_without_a_run_error() -> None:
    world = World()
    world.parking_lot.refuse["poison"] = REFUSED
    [poison] = tracked(dlq_message("poison", mark=Mark("id-p", 3)))

    executed = world.executor.execute(BatchPlan(park=(world.park(poison),)), NOW)

    assert world.dlq.hidden == {poison.message_id: UNPARKABLE_HIDE_SECONDS}
    assert world.dlq.deleted == []
    assert (executed.tally.unparkable, executed.tally.errors) == (1, 0)


def test_a_fifo_message_is_not_sent_ahead_of_an_unsent_groupmate() -> None:
    world = World(fifo=True)
    world.orders.refuse["g-1"] = SERVER_FAULT
    first, second, other = tracked(
        dlq_message("g-1", group="g"), dlq_message("g-2", group="g"), dlq_message("h-1", group="h")
    )

    executed = world.executor.execute(
        BatchPlan(redrive=(Redrive(first, 0), Redrive(second, 0), Redrive(other, 0))), NOW
    )

    assert [m.body for m in world.orders.sent] == ["h-1"]
    assert [(m.group_id, m.deduplication_id) for m in world.orders.sent] == [
        ("h", deduplication_id(other, "1"))
    ]
    assert executed.tally.errors == 1  # the groupmate held back is not an error of its own


@pytest.mark.parametrize("fail", [False, True])
def test_fifo_holds_hide_messages_for_their_wait_before_anything_is_sent(fail: bool) -> None:
    world = World(fifo=True)
    if fail:
        world.dlq.fail_calls.add("change_visibility")
    waiting, due = tracked(dlq_message("w", group="g"), dlq_message("d", group="h"))

    executed = world.executor.execute(BatchPlan(redrive=(Redrive(due, 0),), hold=(Hold(waiting, 75),)), NOW)

    if fail:
        assert executed.failure and world.orders.sent == []
    else:
        assert world.dlq.hidden == {waiting.message_id: 75} and executed.tally.redriven == 1


def test_release_gives_held_messages_back_and_a_failure_is_one_error() -> None:
    world = World()
    assert world.executor.release({"m-1": "rh-1"}) == 0 and world.dlq.hidden == {"m-1": 0}
    world.dlq.fail_calls.add("change_visibility")
    assert world.executor.release({"m-2": "rh-2"}) == 1


def test_a_parked_message_is_archived_before_the_parking_lot_send() -> None:
    archive = FakeArchive()
    world = World(archive=archive)
    archive.journal = world.parking_lot.calls
    [poison] = tracked(dlq_message("poison", attributes={"k": string_attribute("v")}))

    executed = world.executor.execute(BatchPlan(park=(world.park(poison),)), NOW)

    assert world.parking_lot.calls == ["archive.put", "parking-lot.send"]
    assert executed.tally.parked == 1 and world.dlq.deleted == [poison.message_id]
    [document] = archive.objects.values()
    assert (document["body"], document["message_attributes"], document["parked_at"]) == (
        "poison",
        {"k": string_attribute("v")},
        NOW,
    )
    assert document["reason"]["cause"] == "over_limit"


def test_a_message_whose_archive_write_failed_is_neither_parked_nor_deleted() -> None:
    world = World(archive=FakeArchive(fail={"unlucky"}))
    unlucky, fine = tracked(dlq_message("unlucky"), dlq_message("fine"))

    executed = world.executor.execute(BatchPlan(park=(world.park(unlucky), world.park(fine))), NOW)

    assert (executed.tally.parked, executed.tally.unarchived, executed.tally.errors) == (1, 1, 0)
    assert [m.body for m in world.parking_lot.sent] == ["fine"]
    assert world.dlq.deleted == [fine.message_id]
    assert [r.mark.identity for r in world.state.records] == [fine.mark.identity]


def test_an_expiring_message_whose_archive_write_failed_is_parked_all_the_same() -> None:
    # the DLQ would delete it; the parking lot keeps it 14 days
    world = World(archive=FakeArchive(fail={"old"}))
    [old] = tracked(dlq_message("old"))
    expiring = Park(old, replace(world.park(old).reason, cause=ParkCause.EXPIRING))

    executed = world.executor.execute(BatchPlan(park=(expiring,)), NOW)

    assert (executed.tally.parked, executed.tally.expiring, executed.tally.unarchived) == (1, 1, 1)
    assert executed.tally.errors == 0
    assert [m.body for m in world.parking_lot.sent] == ["old"] and world.dlq.deleted == [old.message_id]
