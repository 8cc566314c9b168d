"""A marked message close to 1 MiB: its mark grows on the next send and would push it past SQS's
size limit, failing its SendMessageBatch call every run (and opening the breaker)."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from local_aws.clients import ClientProxy
from local_aws.queues import peek
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, message_size
from sqs_redriver.protocol.limits import SQS_MAX_MESSAGE_BYTES
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings
from tests.support.factories import FakeClock
from tests.support.ledger import SOURCE, assert_breaker_closed, assert_each_ended_once, marked_attribute


class SizeLimitedSqs(ClientProxy):
    """SendMessageBatch refusing more than 1 MiB of body and attribute bytes, as SQS counts them
    (moto counts body characters only)."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.refused = 0

    def send_message_batch(self, **kwargs: Any) -> Any:
        total = sum(message_size(e["MessageBody"], e.get("MessageAttributes", {})) for e in kwargs["Entries"])
        if total > SQS_MAX_MESSAGE_BYTES:
            self.refused += 1
            error = {"Code": "BatchRequestTooLong", "Message": f"{total} bytes"}
            raise ClientError({"Error": error}, "SendMessageBatch")
        return self._client.send_message_batch(**kwargs)


def test_a_marked_message_of_exactly_1_mib_is_redriven_without_its_mark(aws: Aws, clock: FakeClock) -> None:
    # GIVEN a message exactly at SQS's limit with a mark, and 4 good ones
    now = int(clock.now)
    mark = json.dumps({"id": "big", "n": 1, "first": now - 600, "at": [now - 600]})
    attributes = marked_attribute(mark)
    padding = SQS_MAX_MESSAGE_BYTES - message_size("big|", attributes)
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url, MessageBody="big|" + "x" * padding, MessageAttributes=attributes
    )
    for i in range(4):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"good-{i}|")
    sqs = SizeLimitedSqs(aws.sqs)
    settings = make_settings(aws)

    # WHEN three runs come (three failed calls in a row would open the breaker)
    reports = [make_redriver(aws, settings, clock, sqs=sqs).run(REMAINING) for _ in range(3)]

    # THEN the first re-drives all five, no call is refused, and the big one goes without a mark:
    # its count is kept in the table, under its content identity
    assert [(r.redriven, r.errors) for r in reports] == [(5, 0), (0, 0), (0, 0)]
    assert sqs.refused == 0
    [big] = [m for m in peek(aws.sqs, aws.source_url) if m["Body"].startswith("big|")]
    assert MARK_ATTRIBUTE not in big.get("MessageAttributes", {})
    records = aws.dynamodb.scan(TableName=aws.table_name)["Items"]
    assert any(r["pk"]["S"].startswith("MSG#sha256:") and r["redrive_count"]["N"] == "1" for r in records)
    assert_each_ended_once(aws, dict.fromkeys(["big", *(f"good-{i}" for i in range(4))], SOURCE))
    assert_breaker_closed(make_redriver(aws, settings, clock), settings)


def test_a_batch_over_1_mib_in_all_is_sent_in_calls_that_fit(aws: Aws, clock: FakeClock) -> None:
    # GIVEN ten messages of 300 KiB each: 3 MiB in one received batch, more with their marks
    for i in range(10):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=f"large-{i}|" + "x" * 300 * 1024)
    sqs = SizeLimitedSqs(aws.sqs)
    settings = make_settings(aws)

    report = make_redriver(aws, settings, clock, sqs=sqs).run(REMAINING)

    assert (report.redriven, report.errors, sqs.refused) == (10, 0, 0)
    assert_each_ended_once(aws, {f"large-{i}": SOURCE for i in range(10)})
    assert_breaker_closed(make_redriver(aws, settings, clock), settings)
