"""Marks nobody valid wrote: non-finite numbers, deep nesting, a forged future re-drive. Each is
left out and its message re-driven as an unmarked one; the rest of the batch goes as usual."""

from __future__ import annotations

from local_aws.queues import peek
from sqs_redriver.core.breaker import Breaker, Evidence
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings, mark_of
from tests.support.factories import FakeClock
from tests.support.ledger import (
    PARKING_LOT,
    SOURCE,
    assert_breaker_closed,
    assert_each_ended_once,
    mark_json,
    marked_attribute,
)

HOSTILE = {
    "nan": mark_json(n=float("nan")),
    "infinity": mark_json(first=float("inf")),
    "huge-float": mark_json(at=[1e400]).replace("Infinity", "1e400"),
    "deeply-nested": mark_json(err="PLACEHOLDER").replace('"PLACEHOLDER"', "[" * 2000 + "]" * 2000),
    "too-big": mark_json(pad="x" * 5000),
    "not-json": "{oops",
}


def test_marks_with_non_finite_numbers_or_deep_nesting_are_left_out(aws: Aws, clock: FakeClock) -> None:
    # GIVEN a batch of 4 good messages and 6 with hostile marks
    for name, text in HOSTILE.items():
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url, MessageBody=f"{name}|", MessageAttributes=marked_attribute(text)
        )
    for i in range(4):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"good-{i}|")
    settings = make_settings(aws)
    redriver = make_redriver(aws, settings, clock)

    # WHEN one run handles them
    report = redriver.run(REMAINING)

    # THEN every one is re-driven once, with a fresh valid mark of its own, and nothing failed
    assert (report.redriven, report.parked, report.errors, report.returned) == (10, 0, 0, 0)
    assert report.rejected_marks == len(HOSTILE)  # each counted (the RejectedMarks metric) and logged
    sent = peek(aws.sqs, aws.source_url)
    assert all(mark_of(m).count == 1 and mark_of(m).identity != "forged" for m in sent)
    assert_each_ended_once(aws, dict.fromkeys([*HOSTILE, *(f"good-{i}" for i in range(4))], SOURCE))
    assert_breaker_closed(redriver, settings)


def test_forged_future_redrives_neither_open_the_breaker_nor_count_as_returns(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN 6 marks claiming a re-drive a day from now (6 of 10 returned would open the breaker)
    now = int(clock.now)
    for i in range(6):
        text = mark_json(id=f"future-{i}", n=1, first=now, at=[now + 86_400])
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url, MessageBody=f"future-{i}|", MessageAttributes=marked_attribute(text)
        )
    for i in range(4):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"good-{i}|")
    settings = make_settings(aws)
    redriver = make_redriver(aws, settings, clock)

    report = redriver.run(REMAINING)

    # THEN none counts as returned: all ten are re-driven, the future ones as unmarked messages
    assert (report.redriven, report.returned, report.errors, report.breaker_transitions) == (10, 0, 0, [])
    sent = peek(aws.sqs, aws.source_url)
    future = [m for m in sent if m["Body"].startswith("future")]
    assert len(future) == 6 and all(mark_of(m).redriven_at == (now,) for m in future)
    assert all(MARK_ATTRIBUTE in m["MessageAttributes"] for m in sent)
    names = [*(f"future-{i}" for i in range(6)), *(f"good-{i}" for i in range(4))]
    assert_each_ended_once(aws, dict.fromkeys(names, SOURCE))
    assert_breaker_closed(redriver, settings)


def test_the_retention_sweep_parks_an_expiring_message_whatever_its_mark(aws: Aws, clock: FakeClock) -> None:
    # GIVEN an OPEN breaker (the run only sweeps) and hostile marks on messages about to expire
    settings = make_settings(aws, expiry_margin_seconds=3600)
    aws.sqs.set_queue_attributes(QueueUrl=aws.dlq_url, Attributes={"MessageRetentionPeriod": "7200"})
    for name, text in HOSTILE.items():
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url, MessageBody=f"{name}|", MessageAttributes=marked_attribute(text)
        )
    redriver = make_redriver(aws, settings, clock)
    redriver.state.save_breaker(
        settings.breaker_key, Breaker().opened(int(clock.now), Evidence.RETURNS), expected_version=0
    )
    clock.catch_up()
    clock.advance(3601)

    report = make_redriver(aws, settings, clock).run(REMAINING)

    # THEN the sweep parks every one of them: none is left to SQS's retention
    assert (report.parked, report.expiring, report.errors) == (len(HOSTILE), len(HOSTILE), 0)
    assert_each_ended_once(aws, dict.fromkeys(HOSTILE, PARKING_LOT))


def test_marks_forged_with_a_past_redrive_count_as_returns_and_can_open_the_breaker(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN 6 of 10 messages whose marks claim a re-drive a minute ago (within the breaker's period)
    now = int(clock.now)
    for i in range(6):
        text = mark_json(id=f"forged-{i}", n=1, first=now - 120, at=[now - 60])
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url, MessageBody=f"forged-{i}|", MessageAttributes=marked_attribute(text)
        )
    for i in range(4):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"good-{i}|")
    settings = make_settings(aws)
    redriver = make_redriver(aws, settings, clock)

    report = redriver.run(REMAINING)

    # THEN the mark is the only evidence SQS keeps of a re-drive: the forged ones count as returns,
    # and the breaker opens (docs/security.md, what a sender to an SQS consumer's DLQ can do);
    # nothing is lost: every message waits in the DLQ for the breaker
    assert report.returned == 6
    assert report.breaker_state.value == "OPEN"
    assert report.redriven == 0 and report.parked == 0
