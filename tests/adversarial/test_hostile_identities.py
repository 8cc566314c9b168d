"""Identities no key can hold: too long for DynamoDB's and S3's keys, invalid Unicode, path-like.
The mark is left out and the message re-driven as an unmarked one, keyed by its MessageId."""

from __future__ import annotations

import pytest

from local_aws.queues import peek
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings, mark_of
from tests.support.factories import LONG_AGO, FakeClock
from tests.support.ledger import (
    SOURCE,
    assert_breaker_closed,
    assert_each_ended_once,
    label,
    mark_json,
    marked_attribute,
)

POISON = {"n": 5, "first": LONG_AGO, "at": [LONG_AGO + i for i in range(1, 6)]}


@pytest.mark.parametrize(
    "identity",
    [
        pytest.param("x" * 3000, id="too-long-for-a-dynamodb-key"),
        pytest.param("y" * 1100, id="too-long-for-an-s3-key"),
        pytest.param("\ud800order-7", id="lone-surrogate"),
        pytest.param("../../other/prefix", id="path-like"),
    ],
)
def test_a_mark_whose_identity_no_key_can_hold_is_left_out(aws: Aws, clock: FakeClock, identity: str) -> None:
    # GIVEN a poison-looking mark with a hostile identity, among 4 good messages; every re-drive
    # recorded in the table, so each identity becomes a key
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody="hostile|",
        MessageAttributes=marked_attribute(mark_json(id=identity, **POISON)),
    )
    for i in range(4):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"good-{i}|")
    settings = make_settings(aws, record_every_redrive=True)
    redriver = make_redriver(aws, settings, clock)

    report = redriver.run(REMAINING)

    # THEN all five are re-driven, the hostile one as a message seen for the first time
    assert (report.redriven, report.parked, report.errors) == (5, 0, 0)
    sent = {label(m["Body"]): mark_of(m) for m in peek(aws.sqs, aws.source_url)}
    assert sent["hostile"].count == 1 and sent["hostile"].identity != identity
    keys = [item["pk"]["S"] for item in aws.dynamodb.scan(TableName=aws.table_name)["Items"]]
    assert f"MSG#{sent['hostile'].identity}" in keys
    assert_each_ended_once(aws, dict.fromkeys(["hostile", *(f"good-{i}" for i in range(4))], SOURCE))
    assert_breaker_closed(redriver, settings)
