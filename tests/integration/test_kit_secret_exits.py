"""Every way text leaves a consumer with the kit, against moto, for every secret of the corpus in
the exception a record handler raises: the mark of the dead-lettered message, the verdict record,
the FAILURE# record of a message with no room for a mark, the kit's log lines and Powertools' own,
the error that fails the invocation, and, downstream, what the re-driver makes of them (the
parking lot, its records, the S3 archive). None shows a secret; each shows the failure, redacted."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import ClientError

from local_aws.events import LambdaContext
from local_aws.events import sqs_event as lambda_event
from local_aws.queues import drain
from sqs_redriver.kit import AllRecordsFailedError, ConsumerKit
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.mark import Mark
from tests.support.aws import REMAINING, Aws, make_redriver, make_settings
from tests.support.factories import FakeClock
from tests.support.kit import NOW, Calls, kit_environment, receive, send
from tests.support.kit_exits import Logs, captured_logs, everything_printed
from tests.support.secret_corpus import CORPUS, leaks

BATCH = 10  # what one delivery of the event source mapping holds at most
NO_ROOM = {f"a{i}": {"DataType": "String", "StringValue": str(i)} for i in range(10)}


class LeakyFailure(Exception):
    """What a consumer's library raises: the secret in its text, its cause and a note."""


class LeakyOutage(Exception):
    """The same, transient."""


def leaky(kind: type[Exception], text: str) -> Exception:
    error = kind(text)
    error.__cause__ = ConnectionError(text)
    error.add_note(text)
    return error


def by_body(kind: type[Exception]) -> Callable[[SQSRecord], None]:
    """A record handler failing each record with the corpus entry its body names."""

    def record_handler(record: SQSRecord) -> None:
        raise leaky(kind, CORPUS[int(record.body)].text)

    return record_handler


def make_kit(aws: Aws, sqs: Any = None) -> ConsumerKit:
    return ConsumerKit.from_environment(
        terminal=[LeakyFailure],
        transient=[LeakyOutage],
        env=kit_environment(aws),
        sqs=sqs or aws.sqs,
        dynamodb=aws.dynamodb,
        clock=FakeClock(NOW),
    )


def deliveries(
    aws: Aws, attributes: Callable[[int], dict[str, Any]] = lambda _: {}
) -> Iterator[list[dict[str, Any]]]:
    """The corpus's messages (bodies are their indexes: no secret), delivered a batch at a time;
    each batch is deleted from the source queue after the test used it, as Lambda would."""
    for first in range(0, len(CORPUS), BATCH):
        for index in range(first, min(first + BATCH, len(CORPUS))):
            send(aws, str(index), attributes(index))
        messages = receive(aws)
        yield messages
        aws.sqs.delete_message_batch(
            QueueUrl=aws.source_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )


def redriven(index: int) -> dict[str, Any]:
    """The mark of a run's re-drive asking for the verdict of its first delivery."""
    mark = Mark(f"id-{index}", count=1, redriven_at=(NOW - 60,), verdict_key="run-1")
    return {MARK_ATTRIBUTE: string_attribute(mark.to_json())}


def invoke(
    kit: ConsumerKit, aws: Aws, messages: list[dict[str, Any]], kind: type[Exception], logs: Logs
) -> Any:
    return kit.process_partial_response(
        event=lambda_event(messages, aws.source_arn),
        record_handler=by_body(kind),
        processor=BatchProcessor(event_type=EventType.SQS, logger=logs.processor_logger),
        context=LambdaContext(),
    )


def dlq_down(**_: Any) -> Any:
    raise ClientError({"Error": {"Code": "InternalError", "Message": "DLQ down"}}, "SendMessage")


def table_dump(aws: Aws) -> str:
    return json.dumps(aws.dynamodb.scan(TableName=aws.table_name)["Items"])


def archive_dump(aws: Aws) -> str:
    listed = aws.s3.list_objects_v2(Bucket=aws.archive_bucket).get("Contents", [])
    return "\n".join(
        aws.s3.get_object(Bucket=aws.archive_bucket, Key=o["Key"])["Body"].read().decode() for o in listed
    )


def test_no_secret_reaches_the_mark_the_verdict_record_or_the_logs(aws: Aws) -> None:
    # GIVEN re-driven messages (a verdict is asked of their first delivery) failing terminally,
    # each with a secret of the corpus in its exception
    kit = make_kit(aws)

    # WHEN the kit dead-letters them, batch after batch
    with captured_logs() as logs:
        for messages in deliveries(aws, redriven):
            assert invoke(kit, aws, messages, LeakyFailure, logs) == {"batchItemFailures": []}

    # THEN the marks say what failed, redacted; the verdict record counts them; nothing shows a secret
    dead = drain(aws.sqs, aws.dlq_url)
    marks = [m["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"] for m in dead]
    assert len(marks) == len(CORPUS) and sum("<redacted>" in m for m in marks) == len(CORPUS)
    assert '"terminal":{"N":"' + str(len(CORPUS)) + '"}' in table_dump(aws).replace(" ", "")
    assert logs.text().count("dead-lettered by the kit") == len(CORPUS)
    assert leaks(json.dumps(dead) + table_dump(aws) + logs.text()) == []


def test_no_secret_reaches_the_failure_record_of_a_message_with_no_room_for_the_mark(aws: Aws) -> None:
    kit = make_kit(aws)

    with captured_logs() as logs:
        for messages in deliveries(aws, lambda _: NO_ROOM):
            invoke(kit, aws, messages, LeakyFailure, logs)

    stored = table_dump(aws)
    assert stored.count("FAILURE#") == len(CORPUS) and stored.count("<redacted>") >= len(CORPUS)
    assert leaks(stored + json.dumps(drain(aws.sqs, aws.dlq_url)) + logs.text()) == []


def test_no_secret_reaches_the_parking_lot_its_records_or_the_archive(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN the corpus's failures dead-lettered by the kit
    kit = make_kit(aws)
    with captured_logs() as logs:
        for messages in deliveries(aws):
            invoke(kit, aws, messages, LeakyFailure, logs)

    # WHEN the re-driver parks them on sight, archiving each
    report = make_redriver(aws, make_settings(aws), FakeClock(NOW + 60)).run(REMAINING)

    # THEN the parking lot, the state table and the archive say why, and show no secret
    assert report.parked == len(CORPUS)
    parked = json.dumps(drain(aws.sqs, aws.parking_lot_url))
    archived = archive_dump(aws)
    assert parked.count("<redacted>") >= len(CORPUS) and archived.count("<redacted>") >= len(CORPUS)
    assert leaks(parked + table_dump(aws) + archived + logs.text() + caplog.text) == []


def test_no_secret_reaches_the_error_that_fails_the_invocation_when_every_record_failed(aws: Aws) -> None:
    # GIVEN transient failures on first deliveries (left to SQS), and terminal ones whose DLQ send fails
    failing_sends = Calls(aws.sqs, send_message=dlq_down)
    errors: list[AllRecordsFailedError] = []

    with captured_logs() as logs:
        for kind, kit in ((LeakyOutage, make_kit(aws)), (LeakyFailure, make_kit(aws, sqs=failing_sends))):
            for messages in deliveries(aws):
                with pytest.raises(AllRecordsFailedError) as raised:
                    invoke(kit, aws, messages, kind, logs)
                errors.append(raised.value)

    # THEN every batch failed the invocation (SQS retries it), each record's failure redacted in it
    printed = "\n".join(everything_printed(error) for error in errors)
    assert logs.text().count("dead-lettering failed") == len(CORPUS)
    assert sum(len(error.child_exceptions) for error in errors) == 2 * len(CORPUS)
    assert printed.count("<redacted>") >= 2 * len(CORPUS)
    assert leaks(printed + logs.text()) == []
