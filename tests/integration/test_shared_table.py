"""Two re-drivers on one state table, each with a kit consumer: a consumer granted one re-driver's
kit writes records that re-driver reads, and none that the other one reads (the kit's keys are
scoped to their re-driver's DLQ, and so is its grant: tests/unit/test_table_access.py)."""

from __future__ import annotations

import json
from dataclasses import replace

from sqs_redriver.core.table import ParkCause
from sqs_redriver.kit import ConsumerKit
from sqs_redriver.protocol.envelope import from_sqs
from sqs_redriver.protocol.keys import RecordKind, kit_record_key
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings, stored_item
from tests.support.factories import FakeClock
from tests.support.kit import kit_environment, receive, run, send

# Ten attributes: no room for the mark, so the kit's failure goes into the state table.
ATTRIBUTES = {f"a{i}": {"DataType": "String", "StringValue": str(i)} for i in range(10)}
BODY = json.dumps({"order": "o-1"})


class InvalidOrder(Exception):
    pass


def failing(_record: object) -> None:
    raise InvalidOrder("order o-1 is invalid")


def second_redriver_resources(aws: Aws) -> Aws:
    """The queues of a second re-driver (payments), on ``aws``'s state table."""
    sqs = aws.sqs
    dlq_url = sqs.create_queue(QueueName="payments-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"})
    source_url = sqs.create_queue(
        QueueName="payments", Attributes={"VisibilityTimeout": "30", "RedrivePolicy": policy}
    )["QueueUrl"]
    source_arn = sqs.get_queue_attributes(QueueUrl=source_url, AttributeNames=["QueueArn"])["Attributes"]
    return replace(
        aws,
        dlq_url=dlq_url,
        source_url=source_url,
        source_arn=source_arn["QueueArn"],
        parking_lot_url=sqs.create_queue(QueueName="payments-parking-lot")["QueueUrl"],
    )


def test_a_consumer_of_one_re_driver_cannot_park_another_s_message_on_a_shared_table(
    aws: Aws, clock: FakeClock
) -> None:
    # GIVEN the orders re-driver's kit consumer failing a message for good (no room for a mark:
    # its failure goes into the shared table), and the very same message in the payments DLQ
    payments = second_redriver_resources(aws)
    kit = ConsumerKit.from_environment(
        terminal=[InvalidOrder], env=kit_environment(aws), sqs=aws.sqs, dynamodb=aws.dynamodb, clock=clock
    )
    send(aws, BODY, ATTRIBUTES)
    assert run(kit, aws, failing, receive(aws)) == []
    payments.sqs.send_message(QueueUrl=payments.dlq_url, MessageBody=BODY, MessageAttributes=ATTRIBUTES)
    clock.advance(60)

    # WHEN each re-driver runs
    orders_report = make_redriver(aws, make_settings(aws), clock).run(REMAINING)
    payments_report = make_redriver(payments, make_settings(payments), clock).run(REMAINING)

    # THEN the orders re-driver parks its consumer's terminal failure, and the payments re-driver
    # never sees it: its message goes back to its own source
    assert (orders_report.tally.parked, orders_report.tally.redriven) == (1, 0)
    assert (payments_report.tally.parked, payments_report.tally.redriven) == (0, 1)
    [redriven] = aws.sqs.receive_message(QueueUrl=payments.source_url, MessageAttributeNames=["All"])[
        "Messages"
    ]
    assert redriven["Body"] == BODY
    identity = from_sqs({**redriven, "MessageAttributes": ATTRIBUTES}).content_identity
    assert stored_item(aws, kit_record_key(RecordKind.FAILURE, aws.dlq_url, identity)) is not None
    assert stored_item(aws, kit_record_key(RecordKind.FAILURE, payments.dlq_url, identity)) is None
    [parked] = aws.sqs.receive_message(QueueUrl=aws.parking_lot_url, MessageAttributeNames=["All"])[
        "Messages"
    ]
    assert parked["Body"] == BODY
    [archived] = aws.s3.list_objects_v2(Bucket=aws.archive_bucket)["Contents"]
    document = json.loads(aws.s3.get_object(Bucket=aws.archive_bucket, Key=archived["Key"])["Body"].read())
    assert document["reason"]["cause"] == ParkCause.TERMINAL.value
