"""FIFO messages whose identities collide, or are too long for a deduplication id: SQS drops a
repeated deduplication id for 5 minutes, reporting success, so a collision would lose a message."""

from __future__ import annotations

from typing import Any

from tests.support.aws import REMAINING, Aws, make_redriver, make_settings
from tests.support.factories import FakeClock
from tests.support.ledger import (
    SOURCE,
    assert_breaker_closed,
    assert_each_ended_once,
    mark_json,
    marked_attribute,
)


def send(aws: Aws, name: str, attributes: dict[str, Any] | None = None) -> None:
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=f"{name}|",
        MessageGroupId=name,
        MessageDeduplicationId=name,
        MessageAttributes=attributes or {},
    )


def run_until_drained(aws: Aws, clock: FakeClock) -> int:
    """Runs a minute apart (well within SQS's 5-minute deduplication window) until nothing moves."""
    settings = make_settings(aws)
    redriven = 0
    for _ in range(3):
        report = make_redriver(aws, settings, clock).run(REMAINING)
        assert report.errors == 0
        redriven += report.redriven
        clock.advance(60)
    assert_breaker_closed(make_redriver(aws, settings, clock), settings)
    return redriven


def test_two_messages_forging_one_identity_and_count_both_reach_the_source(
    fifo: Aws, clock: FakeClock
) -> None:
    # GIVEN two different orders whose marks claim the same identity and count, and 3 good ones
    now = int(clock.now)
    for name in ("twin-a", "twin-b"):
        send(fifo, name, marked_attribute(mark_json(id="shared", n=1, first=now - 600, at=[now - 600])))
    for i in range(3):
        send(fifo, f"good-{i}")

    # WHEN runs re-drive them (the second twin a run later: one batch never writes one record twice)
    assert run_until_drained(fifo, clock) == 5

    # THEN neither twin was dropped as the other's duplicate
    assert_each_ended_once(fifo, dict.fromkeys(["twin-a", "twin-b", "good-0", "good-1", "good-2"], SOURCE))


def test_identities_too_long_for_a_deduplication_id_lose_nothing(fifo: Aws, clock: FakeClock) -> None:
    # GIVEN two marks whose 200-character identities share their first 128 characters
    prefix = "p" * 128
    for name in ("long-a", "long-b"):
        send(fifo, name, marked_attribute(mark_json(id=prefix + name * 12)))
    for i in range(3):
        send(fifo, f"good-{i}")

    assert run_until_drained(fifo, clock) == 5

    assert_each_ended_once(fifo, dict.fromkeys(["long-a", "long-b", "good-0", "good-1", "good-2"], SOURCE))
