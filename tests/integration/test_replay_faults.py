"""Replay under faults: every AWS call of a replay failed every way, a crash before it, or Ctrl-C
before it. Nothing is lost: every message is in its source queue or still in the parking lot, and a
message in both was reported as sent but not deleted (or the replay was killed between the two)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from local_aws.clients import ClientProxy
from local_aws.queues import drain, make_visible
from sqs_redriver.console.aws import QueueScan
from sqs_redriver.console.inventory import Where
from sqs_redriver.console.replay import MoveReport, replay
from sqs_redriver.core.sqs import SqsQueue
from sqs_redriver.core.table import ParkCause, ParkReason, StateTable
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.mark import Mark
from tests.support.aws import Aws
from tests.support.faults import Fault, Faults, SimulatedCrash

MESSAGES = 13  # a batch and a part, one of them too crowded for a mark
UNCHOSEN = (11, 12)
NOW = 1_800_000_000
FAULTS = (Fault.THROTTLE, Fault.SERVER_ERROR, Fault.TIMEOUT, Fault.PARTIAL, Fault.CRASH)
# The calls of a fault-free replay of these messages: receive, forget the table count, send and
# delete the first 10; receive the last three (the scan stops: it found every message chosen), send
# and delete the last one chosen; give back the two not chosen. A test below checks the count.
CALLS = range(1, 9)


class Interrupted(ClientProxy):
    """Ctrl-C before the ``at``-th call through it (counted across the proxies sharing ``calls``)."""

    def __init__(self, client: Any, at: int, calls: list[str]) -> None:
        super().__init__(client)
        self._at = at
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not callable(method) or name.startswith("_") or name in {"meta", "exceptions"}:
            return method

        def call(**kwargs: Any) -> Any:
            self._calls.append(name)
            if len(self._calls) == self._at:
                raise KeyboardInterrupt
            return method(**kwargs)

        return call


def park_messages(aws: Aws) -> tuple[set[str], list[str]]:
    """13 parked messages, all but two of them chosen by the replay (the two are given back): their
    bodies, and the MessageIds of those chosen."""
    bodies, chosen = set(), []
    for n in range(MESSAGES):
        body = f"order-{n}"
        attributes = {"batch": string_attribute("no" if n in UNCHOSEN else "yes")}
        if n == 0:  # ten attributes: no room for a mark; its count lives in the table
            attributes |= {f"a{i}": string_attribute("v") for i in range(9)}
        else:
            mark = Mark(f"id-{n}", 5, NOW - 3600, (NOW - 600,))
            reason = ParkReason(ParkCause.OVER_LIMIT, "test", 5, NOW - 3600, NOW - 60, aws.source_url, "m")
            attributes[MARK_ATTRIBUTE] = string_attribute(mark.to_json(parked=reason.to_dict()))
        sent = aws.sqs.send_message(
            QueueUrl=aws.parking_lot_url, MessageBody=body, MessageAttributes=attributes
        )
        bodies.add(body)
        if n not in UNCHOSEN:
            chosen.append(sent["MessageId"])
    return bodies, chosen


def run_replay(aws: Aws, sqs: Any, dynamodb: Any, chosen: list[str]) -> MoveReport:
    source = SqsQueue(aws.source_url, sqs)
    # moto's queue is one server: a short poll that finds nothing means an empty queue.
    scan = QueueScan(SqsQueue(aws.parking_lot_url, sqs), sqs, Where.PARKING_LOT, wait_seconds=0)
    table = StateTable(aws.table_name, dynamodb, ttl_seconds=60)
    report = MoveReport()
    return replay(scan, chosen, lambda _item: source, table=table, now=NOW, report=report)


def books(aws: Aws) -> tuple[Counter[str], Counter[str]]:
    """Bodies in the source queue and in the parking lot, held ones included."""
    make_visible(aws.parking_lot_url)
    make_visible(aws.source_url)
    source = Counter(m["Body"] for m in drain(aws.sqs, aws.source_url))
    lot = Counter(m["Body"] for m in drain(aws.sqs, aws.parking_lot_url))
    return source, lot


def assert_nothing_lost(aws: Aws, bodies: set[str], report: MoveReport | None) -> None:
    source, lot = books(aws)
    assert set(source) | set(lot) == bodies, f"lost: {bodies - set(source) - set(lot)}"
    assert max((source + lot).values()) <= 2  # at most once in each queue
    duplicated = set(source) & set(lot)
    if report is not None:  # it finished: every duplicate was reported
        assert len(duplicated) <= len(report.not_deleted)


def test_a_replay_without_faults_moves_everything_chosen_in_as_many_calls_as_the_faults_cover(
    aws: Aws,
) -> None:
    bodies, chosen = park_messages(aws)
    faults = Faults()

    report = run_replay(aws, faults.wrap(aws.sqs), faults.wrap(aws.dynamodb), chosen)

    assert len(faults.calls) == len(CALLS)  # every call gets its faults below

    assert report.clean and report.moved == MESSAGES - len(UNCHOSEN)
    source, lot = books(aws)
    assert set(lot) == {f"order-{n}" for n in UNCHOSEN} and set(source) == bodies - set(lot)


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
@pytest.mark.parametrize("call", CALLS)
def test_a_fault_at_any_call_loses_nothing(aws: Aws, fault: Fault, call: int) -> None:
    bodies, chosen = park_messages(aws)
    faults = Faults(plan={call: fault})

    report: MoveReport | None
    try:
        report = run_replay(aws, faults.wrap(aws.sqs), faults.wrap(aws.dynamodb), chosen)
    except SimulatedCrash:
        report = None

    assert faults.fired  # the call was made: the fault did its test
    assert_nothing_lost(aws, bodies, report)
    if report is not None and fault is not Fault.PARTIAL:
        assert not report.clean  # a failed call is reported, never swallowed


@pytest.mark.parametrize("call", CALLS)
def test_ctrl_c_at_any_call_gives_back_what_it_holds_and_loses_nothing(aws: Aws, call: int) -> None:
    bodies, chosen = park_messages(aws)
    calls: list[str] = []

    with pytest.raises(KeyboardInterrupt):
        run_replay(aws, Interrupted(aws.sqs, call, calls), Interrupted(aws.dynamodb, call, calls), chosen)

    in_flight = aws.sqs.get_queue_attributes(
        QueueUrl=aws.parking_lot_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]["ApproximateNumberOfMessagesNotVisible"]
    if calls[call - 1] != "change_message_visibility_batch":
        assert in_flight == "0"  # given back at once, not after the scan's hold
    assert_nothing_lost(aws, bodies, None)
