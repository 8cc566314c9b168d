"""Reasons that say what was wrong, for dead letters of other services, on moto with the real run:
a target's refusal keeps the field and the rule the delivery found; a dead letter of no configured
source names the source it claimed; and a parked dead letter of every kind carries its reason in
the parking lot's mark attribute, as an SQS message does, when it has room for one (the table and
the archive hold it either way). The parked copy reads back as the same dead letter."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

import boto3
import pytest

from local_aws import ACCOUNT, REGION
from local_aws.compose import local_redriver
from local_aws.queues import drain
from sqs_redriver.core.table import ParkCause
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, from_sqs
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.mark import read_parked
from sqs_redriver.protocol.sources import DeadLetterSource, SourceKind, TargetKind
from sqs_redriver.runtime.report import RunReport
from tests.support.aws import Aws, make_settings
from tests.support.dead_letters import (
    FUNCTION_SOURCE,
    OTHER_FUNCTION_SOURCE,
    RAW_SUBSCRIPTION_SOURCE,
    RULE_ARN,
    RULE_TARGET_SOURCE,
    SUBSCRIPTION_SOURCE,
    AwsDeadLetter,
    destination_record,
    function_dlq_message,
    rule_event,
    rule_target_dlq_message,
    subscription_dlq_message,
)
from tests.support.factories import FakeClock

LATER = 3600
BUS_ARN = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/downstream"
BUS_SOURCE = DeadLetterSource(
    kind=SourceKind.RULE_TARGET,
    arn=RULE_ARN,
    target_kind=TargetKind.EVENT_BUS,
    target_arn=BUS_ARN,
    target_id="downstream",
)
SHIPPING = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:shipping"
# A raw subscription's queue that is FIFO: a message with no group id is refused for good.
FIFO_RAW_SOURCE = replace(RAW_SUBSCRIPTION_SOURCE, target_arn=RAW_SUBSCRIPTION_SOURCE.target_arn + ".fifo")


def run(aws: Aws, *sources: DeadLetterSource) -> RunReport:
    settings = make_settings(
        aws,
        dead_letter_sources=sources,
        source_queue_url=sources[0].address,
        other_source_queue_urls=tuple(source.address for source in sources[1:]),
    )
    clock = FakeClock()
    redriver = local_redriver(
        settings,
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        s3=aws.s3,
        clock=clock,
        sleep=clock.advance,
        delivery=lambda service, region: (
            aws.sqs if service == "sqs" else boto3.client(service, region_name=region)
        ),
    )
    clock.advance(LATER)
    return redriver.run(lambda: 600_000)


def put(aws: Aws, letter: AwsDeadLetter) -> None:
    aws.sqs.send_message(QueueUrl=aws.dlq_url, **letter.send_kwargs())


def parked_reason(parked: dict[str, Any]) -> dict[str, Any]:
    reason = read_parked(parked["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
    assert reason is not None
    return dict(reason)


def recorded_reasons(aws: Aws) -> list[dict[str, Any]]:
    items = aws.dynamodb.scan(TableName=aws.table_name)["Items"]
    prefix = RecordKind.MESSAGE.value
    return [json.loads(i["reason"]["S"]) for i in items if i["pk"]["S"].startswith(prefix) and "reason" in i]


def archived_reasons(aws: Aws) -> list[dict[str, Any]]:
    listed = aws.s3.list_objects_v2(Bucket=aws.archive_bucket).get("Contents", [])
    documents = [aws.s3.get_object(Bucket=aws.archive_bucket, Key=o["Key"])["Body"].read() for o in listed]
    return [json.loads(document)["reason"] for document in documents]


def test_an_event_the_target_bus_cannot_take_is_parked_naming_the_field_and_the_rule(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN an event of the rule whose detail is no JSON object: PutEvents cannot carry it
    event = {**rule_event({"order": "o-1"}), "detail": "o-1"}
    put(aws, rule_target_dlq_message(event, target_arn=BUS_ARN))

    with caplog.at_level(logging.INFO):
        report = run(aws, BUS_SOURCE)

    # THEN it is parked with the delivery's words, everywhere its reason is shown
    why = (
        "target rejected it: InvalidPayload (not valid: detail is not a JSON object); "
        "source's error SDK_CLIENT_ERROR: Failed to send the event to the target (AccessDenied)"
    )
    [parked] = drain(aws.sqs, aws.parking_lot_url)
    reason = parked_reason(parked)
    assert report.parked == 1 and (reason["cause"], reason["why"]) == (ParkCause.SOURCE_REJECTED.value, why)
    assert [r["why"] for r in recorded_reasons(aws)] == [why] == [r["why"] for r in archived_reasons(aws)]
    [line] = [r for r in caplog.records if r.getMessage() == "parked"]
    assert line.reason == why  # type: ignore[attr-defined]


def test_a_record_of_an_unconfigured_function_is_parked_naming_the_function_it_claimed(aws: Aws) -> None:
    put(aws, destination_record(SHIPPING, {"order": "o-1"}))

    run(aws, FUNCTION_SOURCE)

    [parked] = drain(aws.sqs, aws.parking_lot_url)
    reason = parked_reason(parked)
    assert reason["cause"] == ParkCause.UNKNOWN_SOURCE.value
    assert reason["why"] == (
        f"its dead letter names no configured source (it names {SHIPPING}); "
        "source's error ValueError: the order has no items"
    )


def test_a_rule_target_s_dead_letter_of_another_rule_names_the_rule_and_the_target_it_claimed(
    aws: Aws,
) -> None:
    other_rule = RULE_ARN.replace("orders-placed", "orders-refunded")
    put(aws, rule_target_dlq_message(rule_event({"order": "o-1"}), rule_arn=other_rule))

    run(aws, RULE_TARGET_SOURCE)

    [parked] = drain(aws.sqs, aws.parking_lot_url)
    assert f"(it names {other_rule}|{RULE_TARGET_SOURCE.target_arn})" in parked_reason(parked)["why"]


UNKNOWN_OF_EACH_KIND = [
    pytest.param((FUNCTION_SOURCE,), destination_record(SHIPPING, {"order": 1}), id="function record"),
    pytest.param(
        (FUNCTION_SOURCE, OTHER_FUNCTION_SOURCE), function_dlq_message({"order": 1}), id="function DLQ"
    ),
    pytest.param(
        (RULE_TARGET_SOURCE,),
        rule_target_dlq_message(rule_event({"order": 1}), target_arn=BUS_ARN),
        id="rule target",
    ),
    pytest.param(
        (SUBSCRIPTION_SOURCE, RAW_SUBSCRIPTION_SOURCE),
        subscription_dlq_message("order 1 shipped", topic_arn=SUBSCRIPTION_SOURCE.topic_arn + "-eu"),
        id="subscription",
    ),
    pytest.param(
        (FIFO_RAW_SOURCE,),
        subscription_dlq_message("order 1 shipped", raw=True, attributes={"tenant": "acme"}),
        id="raw subscription",
    ),
]


@pytest.mark.parametrize(("sources", "letter"), UNKNOWN_OF_EACH_KIND)
def test_a_parked_dead_letter_of_each_kind_carries_its_reason_and_reads_back_the_same(
    aws: Aws, sources: tuple[DeadLetterSource, ...], letter: AwsDeadLetter
) -> None:
    # GIVEN a dead letter the run parks (of no configured source, or that its target refuses)
    put(aws, letter)
    [in_dlq] = aws.sqs.receive_message(
        QueueUrl=aws.dlq_url, MessageAttributeNames=["All"], VisibilityTimeout=0
    )["Messages"]

    report = run(aws, *sources)

    # THEN the parking lot's copy carries the reason its record holds, and is the same dead letter
    [parked] = drain(aws.sqs, aws.parking_lot_url)
    [recorded] = recorded_reasons(aws)
    assert report.parked == 1 and parked_reason(parked) == recorded
    assert parked["Body"] == letter.body
    copy, original = from_sqs(parked, sources), from_sqs(in_dlq, sources)
    assert copy.attributes == original.attributes and copy.dead_letter == original.dead_letter
    assert copy.content_identity == original.content_identity


def test_a_parked_dead_letter_with_no_room_for_a_mark_has_its_reason_in_the_table_and_the_archive(
    aws: Aws,
) -> None:
    # GIVEN a raw delivery with ten attributes already, that its target refuses
    attributes = {f"a{i}": str(i) for i in range(10)}
    put(aws, subscription_dlq_message("order 1 shipped", raw=True, attributes=attributes))

    report = run(aws, FIFO_RAW_SOURCE)

    [parked] = drain(aws.sqs, aws.parking_lot_url)
    assert report.parked == 1 and MARK_ATTRIBUTE not in parked["MessageAttributes"]
    assert len(parked["MessageAttributes"]) == 10
    assert recorded_reasons(aws) == archived_reasons(aws) != []
