"""The re-driver against moto: messages travel DLQ -> source -> consumer -> DLQ -> ... -> parking lot."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from local_aws.queues import depth, drain, make_visible
from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Evidence, Mode, State
from sqs_redriver.core.transfer import TokenBucket
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.backoff import MAX_HOLD_SECONDS
from sqs_redriver.runtime.settings import Settings
from tests.support.aws import (
    CANARY_WINDOW,
    REMAINING,
    Aws,
    fail_into_dlq,
    make_redriver,
    make_settings,
    mark_of,
    stored_breaker,
)
from tests.support.factories import LONG_AGO, FakeClock, always, consume, never, order_body


def message_records(aws: Aws) -> list[dict[str, Any]]:
    """The table's per-message records (each run also writes its history, RUNS#)."""
    items: list[dict[str, Any]] = aws.dynamodb.scan(TableName=aws.table_name)["Items"]
    return [item for item in items if item["pk"]["S"].startswith("MSG#")]


def send_to_dlq(aws: Aws, body: str, attributes: dict | None = None) -> str:
    kwargs = {"QueueUrl": aws.dlq_url, "MessageBody": body}
    if attributes:
        kwargs["MessageAttributes"] = attributes
    return aws.sqs.send_message(**kwargs)["MessageId"]


def test_empty_dlq_is_a_noop(aws: Aws, clock: FakeClock) -> None:
    report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    assert (report.received, report.redriven, report.parked) == (0, 0, 0)
    assert report.stopped_because == "DLQ empty"
    assert stored_breaker(aws) is None


def test_redrive_returns_body_and_attributes_unchanged_plus_the_mark(aws: Aws, clock: FakeClock) -> None:
    attributes = {
        "tenant": {"DataType": "String", "StringValue": "acme ✓ 東京"},
        "amount": {"DataType": "Number", "StringValue": "12.50"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
    }
    original_id = send_to_dlq(aws, order_body("o-1"), attributes)

    report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    assert report.redriven == 1
    [message] = drain(aws.sqs, aws.source_url)
    assert message["Body"] == order_body("o-1")
    assert {k: v for k, v in message["MessageAttributes"].items() if k != MARK_ATTRIBUTE} == attributes
    mark = mark_of(message)
    assert (mark.identity, mark.count) == (original_id, 1)
    assert depth(aws.sqs, aws.dlq_url) == 0


def test_redrive_count_survives_round_trips_until_the_message_is_parked(aws: Aws, clock: FakeClock) -> None:
    # GIVEN a consumer that always fails one order, and a breaker that will not get in the way
    settings = make_settings(
        aws, max_redrive_count=3, breaker=BreakerPolicy(failure_threshold=100, minimum_volume=1000)
    )
    redriver = make_redriver(aws, settings, clock)
    fail_into_dlq(aws, aws.source_url, order_body("poison"))
    identities = set()

    # WHEN the re-driver and the consumer take turns
    for expected_count in (1, 2, 3):
        assert redriver.run(REMAINING).redriven == 1
        [message] = aws.sqs.receive_message(
            QueueUrl=aws.source_url, MessageAttributeNames=["All"], VisibilityTimeout=0
        )["Messages"]
        assert mark_of(message).count == expected_count
        identities.add(mark_of(message).identity)
        consume(aws.sqs, aws.source_url, always)
        clock.advance(60)
    report = redriver.run(REMAINING)

    # THEN the identity never changed, and after 3 re-drives it is parked with its reason
    assert len(identities) == 1
    assert (report.redriven, report.parked) == (0, 1)
    [parked] = drain(aws.sqs, aws.parking_lot_url)
    assert parked["Body"] == order_body("poison")
    details = json.loads(parked["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
    assert details["n"] == 3 and len(details["at"]) == 3
    assert details["parked"]["redrive_count"] == 3
    assert details["parked"]["source_queue"] == aws.source_url
    assert details["parked"]["first_failed_at"] <= details["parked"]["last_failed_at"]
    assert "failed after 3 re-drives" in details["parked"]["why"]
    assert depth(aws.sqs, aws.dlq_url) == 0 and depth(aws.sqs, aws.source_url) == 0


def test_by_default_a_marked_redrive_writes_nothing_to_the_table(aws: Aws, clock: FakeClock) -> None:
    send_to_dlq(aws, order_body("o-1"))

    assert make_redriver(aws, make_settings(aws), clock).run(REMAINING).redriven == 1

    assert message_records(aws) == []


def test_state_table_records_count_and_history_when_asked_to(aws: Aws, clock: FakeClock) -> None:
    original_id = send_to_dlq(aws, order_body("o-1"))

    make_redriver(aws, make_settings(aws, record_every_redrive=True), clock).run(REMAINING)

    item = aws.dynamodb.get_item(TableName=aws.table_name, Key={"pk": {"S": f"MSG#{original_id}"}})["Item"]
    assert item["redrive_count"] == {"N": "1"}
    assert item["status"] == {"S": "REDRIVEN"}
    assert item["redriven_at"] == {"L": [{"N": str(int(clock.now))}]}
    assert int(item["expires_at"]["N"]) > int(clock.now)


def test_a_message_that_succeeds_after_a_redrive_is_consumed_once(aws: Aws, clock: FakeClock) -> None:
    fail_into_dlq(aws, aws.source_url, order_body("o-1"))

    make_redriver(aws, make_settings(aws), clock).run(REMAINING)
    processed, _ = consume(aws.sqs, aws.source_url, never)

    assert processed == [order_body("o-1")]
    assert depth(aws.sqs, aws.dlq_url) == 0 and depth(aws.sqs, aws.parking_lot_url) == 0


def test_redrive_delay_grows_exponentially_with_the_count(aws: Aws, clock: FakeClock) -> None:
    settings = make_settings(aws, base_delay_seconds=60, max_delay_seconds=900)
    delays: list[int] = []
    aws.sqs.meta.events.register(
        "provide-client-params.sqs.SendMessageBatch",
        lambda params, **_: delays.extend(e["DelaySeconds"] for e in params["Entries"]),
    )
    for count in (0, 1, 4):
        attributes = {}
        if count:
            mark = Mark(f"id-{count}", count, LONG_AGO, tuple(range(LONG_AGO, LONG_AGO + count)))
            attributes = {MARK_ATTRIBUTE: {"DataType": "String", "StringValue": mark.to_json()}}
        send_to_dlq(aws, f"body-{count}", attributes)

    make_redriver(aws, settings, clock).run(REMAINING)

    # re-drives 1, 2 and 5: steps of 60, 120 and 960 capped at 900; equal jitter keeps >= half
    assert len(delays) == 3
    by_step = sorted(delays)
    assert 30 <= by_step[0] <= 60 and 60 <= by_step[1] <= 120 and 450 <= by_step[2] <= 900
    assert aws.sqs.receive_message(QueueUrl=aws.source_url).get("Messages") is None


def record_calls(aws: Aws, operation: str, key: str) -> list[int]:
    """The ``key`` of every entry of every ``operation`` call the re-driver makes."""
    seen: list[int] = []
    aws.sqs.meta.events.register(
        f"provide-client-params.sqs.{operation}",
        lambda params, **_: seen.extend(e[key] for e in params["Entries"]),
    )
    return seen


def send_redriven(aws: Aws, clock: FakeClock, count: int) -> None:
    """A message re-driven ``count`` times, the last just now, back in the DLQ."""
    now = int(clock.now)
    mark = Mark("id-long", count, LONG_AGO, tuple(range(now - count + 1, now + 1)))
    send_to_dlq(aws, "long", {MARK_ATTRIBUTE: {"DataType": "String", "StringValue": mark.to_json()}})


LONG_BACKOFF = {"base_delay_seconds": 60, "max_delay_seconds": 86_400, "max_redrive_count": 20}


def test_a_standard_step_past_900_seconds_waits_hidden_in_the_dlq_then_goes_with_no_delay(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN its 8th re-drive: a step of 7,680 s, too long for DelaySeconds
    settings = make_settings(aws, **LONG_BACKOFF)
    send_redriven(aws, clock, 7)
    hidden = record_calls(aws, "ChangeMessageVisibilityBatch", "VisibilityTimeout")
    delays = record_calls(aws, "SendMessageBatch", "DelaySeconds")

    with caplog.at_level(logging.INFO, logger="redriver-tests"):
        held = make_redriver(aws, settings, clock).run(REMAINING)

    assert held.redriven == 0 and len(hidden) == 1 and 3_840 <= hidden[0] <= 7_680
    assert "backing off in the DLQ" in {record.getMessage() for record in caplog.records}
    # WHEN it shows up again before it is due (a released message), it is held for the rest
    clock.advance(1_000)
    make_visible(aws.dlq_url)
    assert make_redriver(aws, settings, clock).run(REMAINING).redriven == 0
    assert hidden[1] == hidden[0] - 1_000 and depth(aws.sqs, aws.source_url) == 0
    # THEN once due it goes back, with no delay
    clock.advance(hidden[1])
    make_visible(aws.dlq_url)
    assert make_redriver(aws, settings, clock).run(REMAINING).redriven == 1
    [message] = drain(aws.sqs, aws.source_url)
    assert delays == [0] and mark_of(message).count == 8 and depth(aws.sqs, aws.dlq_url) == 0


def test_a_wait_longer_than_sqs_lets_a_message_hide_is_renewed_when_it_reappears(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN a step of a day: due 12-24 h after its last re-drive
    settings = make_settings(aws, **LONG_BACKOFF)
    send_redriven(aws, clock, 11)
    hidden = record_calls(aws, "ChangeMessageVisibilityBatch", "VisibilityTimeout")

    runs = []
    for _ in range(3):
        runs.append(make_redriver(aws, settings, clock).run(REMAINING).redriven)
        clock.advance(hidden[-1])
        make_visible(aws.dlq_url)

    assert hidden[0] == MAX_HOLD_SECONDS and 0 < hidden[1] <= 86_400 - MAX_HOLD_SECONDS
    assert runs == [0, 0, 1] and len(hidden) == 2 and len(drain(aws.sqs, aws.source_url)) == 1


def test_breaker_opens_on_the_first_run_whose_redrives_return(aws: Aws, clock: FakeClock) -> None:
    redriver = make_redriver(aws, make_settings(aws), clock)
    fail_into_dlq(aws, aws.source_url, *(order_body(f"o-{i}") for i in range(5)))

    reports = []
    for _ in range(2):
        reports.append(redriver.run(REMAINING))
        consume(aws.sqs, aws.source_url, always)  # the consumer is still broken
        clock.advance(10)

    assert [r.returned for r in reports] == [0, 5]
    assert reports[-1].breaker_transitions == ["CLOSED->OPEN"]
    assert stored_breaker(aws)["state"] == {"S": "OPEN"}
    # the run that opened it re-drove nothing more into the broken consumer
    assert [r.redriven for r in reports] == [5, 0]
    assert depth(aws.sqs, aws.dlq_url) == 5


def test_a_lone_message_that_keeps_failing_never_opens_the_breaker(aws: Aws, clock: FakeClock) -> None:
    redriver = make_redriver(aws, make_settings(aws, max_redrive_count=4), clock)
    fail_into_dlq(aws, aws.source_url, order_body("poison"))

    reports = []
    for _ in range(5):
        reports.append(redriver.run(REMAINING))
        consume(aws.sqs, aws.source_url, always)

    assert [r.mode for r in reports] == [Mode.REDRIVE] * 5
    assert [r.redriven for r in reports] == [1, 1, 1, 1, 0] and reports[-1].parked == 1
    assert stored_breaker(aws) is None


def test_open_breaker_blocks_redrive(aws: Aws, clock: FakeClock) -> None:
    redriver = make_redriver(aws, single_message_breaker(aws), clock)
    fail_into_dlq(aws, aws.source_url, order_body("o-1"))
    for _ in range(4):
        redriver.run(REMAINING)
        consume(aws.sqs, aws.source_url, always)

    report = redriver.run(REMAINING)

    assert report.mode is Mode.SKIP and report.received == 0
    assert depth(aws.sqs, aws.dlq_url) == 1 and depth(aws.sqs, aws.source_url) == 0


def single_message_breaker(aws: Aws, **overrides: object) -> Settings:
    """Settings whose breaker fails a run on one returned message (a minimum volume of 1)."""
    policy = BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2, minimum_volume=1)
    return make_settings(aws, breaker=policy, **overrides)


def open_the_breaker(aws: Aws, clock: FakeClock, redriver) -> None:
    for _ in range(4):
        redriver.run(REMAINING)
        consume(aws.sqs, aws.source_url, always)
    assert stored_breaker(aws)["state"] == {"S": "OPEN"}


def test_healthy_canaries_close_the_breaker_and_the_dlq_drains(aws: Aws, clock: FakeClock) -> None:
    # GIVEN an open breaker over 4 failed orders, and a consumer that has recovered
    settings = make_settings(aws, max_redrive_count=10)
    redriver = make_redriver(aws, settings, clock)
    fail_into_dlq(aws, aws.source_url, *(order_body(f"o-{i}") for i in range(4)))
    open_the_breaker(aws, clock, redriver)

    # WHEN the cooldown ends: one canary goes out, and is consumed
    clock.advance(61)
    first = redriver.run(REMAINING)
    assert (first.mode, first.canaries, first.redriven) == (Mode.PROBE, 1, 1)
    assert consume(aws.sqs, aws.source_url, never)[0]

    # a run inside the verdict window only watches, without a receive
    clock.advance(CANARY_WINDOW - 1)
    watch = redriver.run(REMAINING)
    assert (watch.mode, watch.received) == (Mode.WATCH, 0)

    # THEN a canary that stays away past its window, and is not found in the DLQ, is a success,
    # and the same run sends the next canary at once
    clock.advance(2)
    verdict = redriver.run(REMAINING)
    assert (verdict.mode, verdict.canaries, verdict.breaker_state) == (Mode.VERDICT, 1, State.HALF_OPEN)
    consume(aws.sqs, aws.source_url, never)
    clock.advance(CANARY_WINDOW + 1)
    # the second success closes it, and the same run drains the DLQ
    closing = redriver.run(REMAINING)
    assert (closing.breaker_transitions, closing.redriven) == (["HALF_OPEN->CLOSED"], 2)
    consume(aws.sqs, aws.source_url, never)
    assert depth(aws.sqs, aws.dlq_url) == 0


def test_a_canary_found_back_when_its_window_ends_reopens_the_breaker(aws: Aws, clock: FakeClock) -> None:
    # GIVEN a canary that failed, but no run looked at the DLQ before its window ended
    redriver = make_redriver(aws, make_settings(aws, max_redrive_count=10), clock)
    fail_into_dlq(aws, aws.source_url, *(order_body(f"o-{i}") for i in range(3)))
    open_the_breaker(aws, clock, redriver)
    clock.advance(61)
    assert redriver.run(REMAINING).canaries == 1
    consume(aws.sqs, aws.source_url, always)

    clock.advance(CANARY_WINDOW + 1)
    report = redriver.run(REMAINING)

    # THEN the verdict run finds it: no success is counted
    assert report.mode is Mode.VERDICT
    assert report.breaker_transitions == ["HALF_OPEN->OPEN"]


def test_a_canary_that_came_back_is_found_when_its_window_ends_not_by_scans_before(
    aws: Aws, clock: FakeClock
) -> None:
    redriver = make_redriver(aws, make_settings(aws, max_redrive_count=10), clock)
    fail_into_dlq(aws, aws.source_url, *(order_body(f"o-{i}") for i in range(3)))
    open_the_breaker(aws, clock, redriver)
    clock.advance(61)
    assert redriver.run(REMAINING).canaries == 1

    consume(aws.sqs, aws.source_url, always)  # still broken: the canary returns to the DLQ
    clock.advance(5)
    watch = redriver.run(REMAINING)
    clock.advance(CANARY_WINDOW)
    verdict = redriver.run(REMAINING)

    assert (watch.mode, watch.received, watch.breaker_transitions) == (Mode.WATCH, 0, [])
    assert (verdict.mode, verdict.breaker_transitions, verdict.redriven) == (
        Mode.VERDICT,
        ["HALF_OPEN->OPEN"],
        0,
    )
    assert depth(aws.sqs, aws.dlq_url) == 3


def test_a_canary_back_at_its_limit_is_parked_and_still_reopens_the_breaker(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN max 2 re-drives: 1 happens before the breaker opens, the 2nd is the canary
    redriver = make_redriver(aws, single_message_breaker(aws, max_redrive_count=2), clock)
    fail_into_dlq(aws, aws.source_url, order_body("o-1"))
    open_the_breaker(aws, clock, redriver)
    clock.advance(61)
    assert redriver.run(REMAINING).canaries == 1

    consume(aws.sqs, aws.source_url, always)
    clock.advance(CANARY_WINDOW + 1)
    report = redriver.run(REMAINING)

    assert report.parked == 1
    assert report.breaker_transitions == ["HALF_OPEN->OPEN"]


def test_an_empty_dlq_does_not_close_a_half_open_breaker(aws: Aws, clock: FakeClock) -> None:
    redriver = make_redriver(aws, single_message_breaker(aws), clock)
    fail_into_dlq(aws, aws.source_url, order_body("o-1"))
    open_the_breaker(aws, clock, redriver)
    drain(aws.sqs, aws.dlq_url)

    for _ in range(5):
        clock.advance(120)
        report = redriver.run(REMAINING)

    assert report.breaker_state is State.HALF_OPEN
    assert stored_breaker(aws)["state"] == {"S": "HALF_OPEN"}


def test_message_with_ten_attributes_is_counted_in_the_table_and_parked_intact(
    aws: Aws, clock: FakeClock
) -> None:
    attributes = {f"a{i}": {"DataType": "String", "StringValue": str(i)} for i in range(10)}
    settings = make_settings(
        aws, max_redrive_count=2, breaker=BreakerPolicy(failure_threshold=100, minimum_volume=1000)
    )
    redriver = make_redriver(aws, settings, clock)
    aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody="ten", MessageAttributes=attributes)
    consume(aws.sqs, aws.source_url, always)

    for _ in range(2):
        assert redriver.run(REMAINING).redriven == 1
        consume(aws.sqs, aws.source_url, always)
    report = redriver.run(REMAINING)

    assert report.parked == 1
    [parked] = drain(aws.sqs, aws.parking_lot_url)
    assert parked["MessageAttributes"] == attributes
    records = aws.dynamodb.scan(TableName=aws.table_name)["Items"]
    [record] = [r for r in records if r["pk"]["S"].startswith("MSG#sha256:")]
    assert record["redrive_count"] == {"N": "2"} and record["status"] == {"S": "PARKED"}
    assert "failed after 2 re-drives" in json.loads(record["reason"]["S"])["why"]


def test_body_too_large_for_the_mark_uses_a_content_identity(aws: Aws, clock: FakeClock) -> None:
    body = "é" * ((1_048_576 - 2_000) // 2)  # fits SQS, but not with the mark's budget added
    send_to_dlq(aws, body)

    report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    assert report.redriven == 1
    [message] = drain(aws.sqs, aws.source_url)
    assert message["Body"] == body and MARK_ATTRIBUTE not in message.get("MessageAttributes", {})
    [record] = message_records(aws)
    assert record["pk"]["S"].startswith("MSG#sha256:") and record["redrive_count"] == {"N": "1"}


def test_run_stops_at_the_per_run_limit(aws: Aws, clock: FakeClock) -> None:
    for i in range(25):
        send_to_dlq(aws, f"m-{i}")

    report = make_redriver(aws, make_settings(aws, max_messages_per_run=12), clock).run(REMAINING)

    assert (report.received, report.redriven, report.stopped_because) == (12, 12, "per-run limit")
    assert depth(aws.sqs, aws.dlq_url) == 13


def test_run_takes_no_batch_when_time_is_short(aws: Aws, clock: FakeClock) -> None:
    send_to_dlq(aws, "m")

    report = make_redriver(aws, make_settings(aws, time_margin_seconds=10), clock).run(lambda: 9_999)

    assert (report.received, report.stopped_because) == (0, "time budget")
    assert depth(aws.sqs, aws.dlq_url) == 1


def test_every_decision_is_logged_with_the_message_identity(
    aws: Aws, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    original_id = send_to_dlq(aws, order_body("o-1"))
    mark = Mark("poison-1", 5, LONG_AGO, tuple(range(LONG_AGO + 1, LONG_AGO + 6)))
    send_to_dlq(aws, "poison", {MARK_ATTRIBUTE: {"DataType": "String", "StringValue": mark.to_json()}})

    with caplog.at_level(logging.INFO, logger="redriver-tests"):
        make_redriver(aws, make_settings(aws), clock).run(REMAINING)

    decisions = {record.getMessage(): record.__dict__ for record in caplog.records}
    assert decisions["re-driven"]["identity"] == original_id
    assert decisions["re-driven"]["redrive_count"] == 1
    assert decisions["parked"]["identity"] == "poison-1"


def test_the_canary_is_the_message_that_failed_least_often(aws: Aws, clock: FakeClock) -> None:
    settings = make_settings(aws)
    state = make_redriver(aws, settings, clock).state
    state.save_breaker(
        settings.breaker_key, Breaker().opened(int(clock.now), Evidence.RETURNS), expected_version=0
    )
    for count in (4, 3, 0, 2):
        mark = Mark(f"id-{count}", count, LONG_AGO, tuple(range(LONG_AGO, LONG_AGO + count)))
        send_to_dlq(
            aws, f"body-{count}", {MARK_ATTRIBUTE: {"DataType": "String", "StringValue": mark.to_json()}}
        )
    clock.advance(61)

    assert make_redriver(aws, settings, clock).run(REMAINING).canaries == 1

    [canary] = drain(aws.sqs, aws.source_url)
    assert canary["Body"] == "body-0"


def test_redrives_flow_at_the_configured_rate(aws: Aws, clock: FakeClock) -> None:
    for i in range(30):
        send_to_dlq(aws, f"m-{i}")
    slept: list[float] = []
    limiter = TokenBucket(20, burst=10, clock=lambda: sum(slept), sleep=slept.append)
    redriver = make_redriver(aws, make_settings(aws), clock, limiter=limiter)

    assert redriver.run(REMAINING).redriven == 30

    # 30 messages at 20 per second, the first 10 at once: 1 s of waiting
    assert sum(slept) == pytest.approx(1.0)


def test_no_redrives_while_the_source_backlog_is_above_the_limit(aws: Aws, clock: FakeClock) -> None:
    for i in range(5):
        aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=f"backlog-{i}")
        send_to_dlq(aws, f"failed-{i}")

    report = make_redriver(aws, make_settings(aws, source_backlog_limit=4), clock).run(REMAINING)

    # only the retention sweep looked at them (none is near its expiry), and gave them back
    assert (report.redriven, report.parked, report.stopped_because) == (0, 0, "source backlog")
    assert depth(aws.sqs, aws.dlq_url) == 5
    # WHEN the consumer catches up, re-drives resume
    consume(aws.sqs, aws.source_url, never)
    assert make_redriver(aws, make_settings(aws, source_backlog_limit=4), clock).run(REMAINING).redriven == 5
