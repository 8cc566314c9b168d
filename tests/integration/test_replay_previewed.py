"""A replay or purge moves exactly the messages its preview chose, on moto: never others in their
place, whatever happened to the queue between the preview and the move."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from local_aws.queues import drain, queue_counts
from sqs_redriver.console.inventory import Where
from sqs_redriver.console.replay import MoveReport, choose, parse_selection, purge_chosen, replay_chosen
from tests.support.aws import Aws
from tests.support.operator import operator_tool, park, take_away, tool

QUEUE = 20
LIMIT = 5


def park_queue(aws: Aws) -> set[str]:
    """20 parked messages, ``m-0`` to ``m-19``; their bodies."""
    bodies = {f"m-{n}" for n in range(QUEUE)}
    for body in sorted(bodies):
        park(aws, body)
    return bodies


def hide(aws: Aws, count: int) -> dict[str, str]:
    """``count`` messages of the parking lot held by another reader: their bodies and receipt
    handles."""
    held: dict[str, str] = {}
    while len(held) < count:
        response = aws.sqs.receive_message(
            QueueUrl=aws.parking_lot_url,
            MaxNumberOfMessages=min(10, count - len(held)),
            VisibilityTimeout=300,
        )
        held |= {m["Body"]: m["ReceiptHandle"] for m in response["Messages"]}
    return held


def test_the_replay_confirmed_moves_the_messages_previewed_when_the_queue_changed_order_meanwhile(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    bodies = park_queue(aws)
    # While the preview reads, 15 are held elsewhere: it can choose only the other five.
    held = hide(aws, QUEUE - LIMIT)
    previewed = bodies - set(held)

    def confirm(_text: str, **_options: Any) -> bool:
        # Before the operator says yes, the 15 come back, first in the queue's order.
        for handle in held.values():
            aws.sqs.change_message_visibility(
                QueueUrl=aws.parking_lot_url, ReceiptHandle=handle, VisibilityTimeout=0
            )
        return True

    monkeypatch.setattr(typer, "confirm", confirm)

    result = tool(aws, "replay", "--all", "--limit", str(LIMIT), "--rate", "1000")

    assert result.exit_code == 0, result.output
    assert {m["Body"] for m in drain(aws.sqs, aws.source_url)} == previewed
    assert {m["Body"] for m in drain(aws.sqs, aws.parking_lot_url)} == set(held)


@pytest.mark.parametrize("verb", ["replay", "purge"])
def test_a_previewed_message_gone_before_the_move_is_reported_and_none_moves_in_its_place(
    aws: Aws, verb: str
) -> None:
    park_queue(aws)
    operator = operator_tool(aws)
    chosen = choose(operator, Where.PARKING_LOT, parse_selection(everything=True), LIMIT)
    gone, *kept = chosen.items
    take_away(aws, gone.message.message_id)
    report = MoveReport()

    if verb == "replay":
        replay_chosen(operator, chosen, rate=1000, report=report)
    else:
        purge_chosen(operator, chosen, report=report)

    assert report.missing == [gone.message.message_id] and not report.clean
    assert report.moved == len(kept) == LIMIT - 1
    assert queue_counts(aws.sqs, aws.parking_lot_url).visible == QUEUE - LIMIT
    replayed = {m["Body"] for m in drain(aws.sqs, aws.source_url)}
    assert replayed == ({item.message.body for item in kept} if verb == "replay" else set())
