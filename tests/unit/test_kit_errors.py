"""sqs_redriver.kit.errors, the kit in a Powertools consumer with no AWS call: a record failure the
kit leaves to SQS, and a batch whose records all failed, leave the consumer as redacted text only:
in the error the Lambda runtime logs (its causes, contexts and child exceptions included), in
Powertools' own log lines and in the kit's. The batch semantics stay Powertools': every record
failed, the invocation fails; some failed, they are reported."""

from __future__ import annotations

import json
import traceback
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from hypothesis import assume, given
from hypothesis import strategies as st

from sqs_redriver.kit import (
    AllRecordsFailedError,
    Classifier,
    ConsumerKit,
    KitConfig,
    RecordFailedError,
    Redactor,
)
from sqs_redriver.kit.consumer import DROPPED_TEXT, all_records_failed
from tests.support.kit_exits import captured_logs, everything_printed
from tests.support.record_strategies import robust
from tests.support.secret_corpus import CORPUS, Secret, leaks

QUEUE_ARN = "arn:aws:sqs:eu-west-1:123456789012:orders"
CONFIG = KitConfig(
    dlq_url="https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq",
    table_name="redriver-state",
    max_receive_count=5,
)
FAIL = "fail"


class DownstreamError(Exception):
    """Transient for the kit: a record failing with it on its first delivery is left to SQS."""


def make_kit(redactor: Redactor | None = None) -> ConsumerKit:
    config = CONFIG if redactor is None else KitConfig(**{**vars(CONFIG), "redactor": redactor})
    return ConsumerKit(config, Classifier.of(transient=[DownstreamError]))


def sqs_event(*bodies: str) -> dict[str, Any]:
    """First deliveries of never re-driven messages: nothing for the kit to write to AWS."""
    return {
        "Records": [
            {
                "messageId": f"m-{number}",
                "receiptHandle": f"rh-{number}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": QUEUE_ARN,
                "awsRegion": "eu-west-1",
            }
            for number, body in enumerate(bodies)
        ]
    }


def failing_with(make_error: Any) -> Any:
    def record_handler(record: SQSRecord) -> str:
        if record.body == FAIL:
            raise make_error()
        return "done"

    return record_handler


def leaky_error(text: str, secret: Secret) -> Exception:
    """A downstream failure as libraries raise them: the text, a cause and a note all holding it."""
    try:
        raise ConnectionError(secret.text)
    except ConnectionError as cause:
        error = DownstreamError(text)
        error.__cause__ = cause
        error.__context__ = cause
        error.add_note(f"while calling {secret.text}")
        return error


def run(kit: ConsumerKit, event: dict[str, Any], handler: Any, processor: Any) -> Any:
    return kit.process_partial_response(event=event, record_handler=handler, processor=processor)


# -- the batch semantics are Powertools' ----------------------------------------------------------


def test_a_batch_whose_records_all_failed_fails_the_invocation_with_each_failure_redacted() -> None:
    handler = failing_with(lambda: DownstreamError("pool exhausted: password=hunter2"))

    with pytest.raises(AllRecordsFailedError) as raised:
        run(make_kit(), sqs_event(FAIL, FAIL), handler, BatchProcessor(event_type=EventType.SQS))

    error = raised.value
    assert isinstance(error, BatchProcessingError)  # whoever catches Powertools' error catches it
    assert str(error).startswith("All records failed processing (2 records)")
    failures = [value for _, value, _ in error.child_exceptions]
    assert all(isinstance(f, RecordFailedError) and f.failure for f in failures)
    fingerprints = {f.failure.fingerprint for f in failures if isinstance(f, RecordFailedError) and f.failure}
    place = f"{__name__}:failing_with.<locals>.record_handler"
    assert str(failures[1]) == (
        f"{__name__}.DownstreamError in {place}: pool exhausted: password=<redacted> "
        f"(transient, fingerprint {fingerprints.pop()}, message m-1)"
    )
    assert (error.__cause__, error.__context__, error.__suppress_context__) == (None, None, True)


def test_a_partly_failed_batch_reports_its_failed_records_as_before() -> None:
    handler = failing_with(lambda: DownstreamError("timeout"))

    response = run(make_kit(), sqs_event("ok", FAIL, "ok"), handler, BatchProcessor(event_type=EventType.SQS))

    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}


def test_a_processor_told_not_to_raise_reports_every_record_as_powertools_does() -> None:
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    response = run(make_kit(), sqs_event(FAIL, FAIL), failing_with(lambda: DownstreamError("x")), processor)

    assert response == {"batchItemFailures": [{"itemIdentifier": "m-0"}, {"itemIdentifier": "m-1"}]}


# -- nothing of the original exception leaves -----------------------------------------------------


def test_a_failure_leaves_the_record_handler_without_its_cause_context_note_or_frames() -> None:
    secret = CORPUS[0]
    kit = make_kit()
    wrapped = kit.wrap(failing_with(lambda: leaky_error(secret.text, secret)))

    with pytest.raises(RecordFailedError) as raised:
        wrapped(sqs_event(FAIL)["Records"][0])

    error = raised.value
    assert (error.__cause__, error.__context__, error.__suppress_context__) == (None, None, True)
    assert not hasattr(error, "__notes__")
    assert "record_handler" not in [frame.name for frame in traceback.extract_tb(error.__traceback__)]
    assert leaks(everything_printed(error)) == []


@given(
    secret=st.sampled_from(CORPUS),
    before=st.text(max_size=80),
    after=st.text(max_size=80),
    every_record_fails=st.booleans(),
)
@robust
def test_no_secret_of_the_corpus_leaves_a_batch_in_its_error_or_any_log_line(
    secret: Secret, before: str, after: str, every_record_fails: bool
) -> None:
    # GIVEN a consumer whose downstream call fails with a secret in its text, its cause and a note
    assume(not leaks(before + after, (secret,)))
    text = f"{before} {secret.text} {after}"
    bodies = (FAIL, FAIL) if every_record_fails else ("ok", FAIL)

    # WHEN a batch fails (all of it, or a part), logged at every level a consumer may turn on
    with captured_logs() as logs:
        processor = BatchProcessor(event_type=EventType.SQS, logger=logs.processor_logger)
        try:
            response = run(
                make_kit(), sqs_event(*bodies), failing_with(lambda: leaky_error(text, secret)), processor
            )
            printed = json.dumps(response)
        except AllRecordsFailedError as error:
            printed = everything_printed(error)

    # THEN neither the error the Lambda runtime would log nor a log line shows the secret
    assert "Record processing exception" in logs.text()  # Powertools did log each failure
    assert leaks(printed + logs.text(), (secret,)) == []


def test_a_failure_the_kit_did_not_see_is_redacted_into_the_batch_error() -> None:
    # GIVEN a record failure raised before the kit's handler ran (a Powertools model's validation)
    secret = CORPUS[0]
    try:
        raise ValueError(f"1 validation error for Order: {secret.text}") from KeyError(secret.text)
    except ValueError as foreign:
        info = (ValueError, foreign, foreign.__traceback__)

    error = all_records_failed([info], Redactor())

    [(kind, value, frames)] = error.child_exceptions
    assert (kind, frames) == (RecordFailedError, None)
    place = f"{__name__}:{test_a_failure_the_kit_did_not_see_is_redacted_into_the_batch_error.__name__}"
    redacted = Redactor().redact(f"1 validation error for Order: {secret.text}")
    assert str(value) == f"ValueError in {place}: {redacted}"
    assert leaks(everything_printed(error)) == []


def test_dropped_text_leaves_nothing_of_it_in_the_errors() -> None:
    handler = failing_with(lambda: DownstreamError("order o-17 of tenant acme failed"))

    with pytest.raises(AllRecordsFailedError) as raised:
        run(
            make_kit(Redactor(drop_text=True)),
            sqs_event(FAIL),
            handler,
            BatchProcessor(event_type=EventType.SQS),
        )

    printed = everything_printed(raised.value)
    assert DROPPED_TEXT in printed and "acme" not in printed
