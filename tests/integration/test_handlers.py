"""The Lambda entry points, in-process against moto: cold-start config, idempotency, metrics."""

from __future__ import annotations

import json
import time
from types import ModuleType
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from local_aws.events import LambdaContext, scheduled_event, sqs_event
from local_aws.queues import depth, drain
from sqs_redriver.core.breaker import Breaker, Evidence
from sqs_redriver.core.table import StateTable
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.runtime.errors import ConfigError
from tests.support.aws import Aws, handler_environment
from tests.support.cold_start import import_fresh
from tests.support.factories import LONG_AGO, order_body
from tests.support.kit import kit_environment


@pytest.fixture
def redriver_handler(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    for name, value in handler_environment(aws, BASE_DELAY_SECONDS="0", MAX_DELAY_SECONDS="0").items():
        monkeypatch.setenv(name, value)
    return import_fresh("sqs_redriver.runtime.handler")


@pytest.fixture(autouse=True)
def consumer_kit_environment(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    """What grant_consumer sets on the consumer function."""
    for name, value in kit_environment(aws).items():
        monkeypatch.setenv(name, value)


def test_scheduled_invocation_redrives_and_emits_metrics(
    aws: Aws, redriver_handler: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))

    result = redriver_handler.lambda_handler(scheduled_event("evt-1"), LambdaContext())

    assert (result["redriven"], result["breaker_state"], "sources" in result) == (1, "CLOSED", False)
    assert [m["Body"] for m in drain(aws.sqs, aws.source_url)] == [order_body("o-1")]
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert emf and emf[-1]["Redriven"] == [1.0] and emf[-1]["BreakerState"] == [0.0]


def test_a_message_at_the_end_of_the_dlqs_retention_is_archived_and_counted_as_expiring(
    aws: Aws,
    redriver_handler: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the construct's archive bucket, a DLQ retention of 61 s (SQS's least is 60) and a margin
    # of 60 s: a message is expiring from 1 s of age on
    monkeypatch.setenv("ARCHIVE_BUCKET", aws.archive_bucket)
    monkeypatch.setenv("EXPIRY_MARGIN_SECONDS", "60")
    handler = import_fresh("sqs_redriver.runtime.handler")
    aws.sqs.set_queue_attributes(QueueUrl=aws.dlq_url, Attributes={"MessageRetentionPeriod": "61"})
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))
    # over the limit: that reason wins (times long ago, as marks must hold: 2000 to now)
    poison = {"id": "id-p", "n": 5, "first": LONG_AGO, "at": [LONG_AGO + i for i in range(1, 6)]}
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=order_body("o-2"),
        MessageAttributes={MARK_ATTRIBUTE: {"DataType": "String", "StringValue": json.dumps(poison)}},
    )

    # WHEN the run comes a second later or more
    time.sleep(1.1)
    result = handler.lambda_handler(scheduled_event("evt-1"), LambdaContext())

    assert (result["parked"], result["expiring"], result["redriven"]) == (2, 1, 0)
    archived = aws.s3.list_objects_v2(Bucket=aws.archive_bucket)["Contents"]
    assert len(archived) == 2 and all(o["Key"].startswith("parked/orders/") for o in archived)
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert emf[-1]["Expiring"] == [1.0] and emf[-1]["Parked"] == [2.0]


@pytest.mark.usefixtures("redriver_handler")
def test_a_shared_dlq_reports_each_sources_breaker_and_the_worst_as_its_state(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a second source whose breaker is open
    payments = aws.sqs.create_queue(QueueName="payments")["QueueUrl"]
    monkeypatch.setenv("SOURCE_QUEUE_URL", f"{aws.source_url},{payments}")
    handler = import_fresh("sqs_redriver.runtime.handler")
    StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60).save_breaker(
        RecordKind.BREAKER.key(payments),
        Breaker().opened(int(time.time()), Evidence.RETURNS),
        expected_version=0,
    )
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))

    result = handler.lambda_handler(scheduled_event("evt-1"), LambdaContext())

    assert (result["redriven"], result["breaker_state"]) == (1, "OPEN")
    assert {s["source"]: (s["breaker_state"], s["redriven"]) for s in result["sources"]} == {
        aws.source_url: ("CLOSED", 1),
        payments: ("OPEN", 0),
    }
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert emf[-1]["BreakerState"] == [2.0]


def test_a_duplicate_scheduled_event_does_not_run_twice(aws: Aws, redriver_handler: ModuleType) -> None:
    first = redriver_handler.lambda_handler(scheduled_event("evt-1"), LambdaContext())
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("late"))

    again = redriver_handler.lambda_handler(scheduled_event("evt-1"), LambdaContext())
    next_tick = redriver_handler.lambda_handler(scheduled_event("evt-2"), LambdaContext())

    assert again == first and depth(aws.sqs, aws.dlq_url) == 0
    assert next_tick["redriven"] == 1


def test_bad_configuration_fails_at_cold_start_naming_the_variable(
    aws: Aws, redriver_handler: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAX_REDRIVE_COUNT", "0")

    with pytest.raises(ConfigError, match="MAX_REDRIVE_COUNT must be an integer from 1 to 50"):
        import_fresh("sqs_redriver.runtime.handler")


def test_consumer_sends_an_invalid_order_to_the_dlq_at_once_and_reports_a_transient_failure(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a downstream that is down, and an order that can never be valid
    monkeypatch.setenv("DOWNSTREAM_FAILURE_RATE", "1")
    consumer = import_fresh("consumer.handler")
    for body in (order_body("good"), '{"order_id": "broken"}'):
        aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=body)
    messages = aws.sqs.receive_message(
        QueueUrl=aws.source_url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
    )["Messages"]
    transient_id = next(m["MessageId"] for m in messages if "good" in m["Body"])

    response = consumer.lambda_handler(sqs_event(messages, aws.source_arn), LambdaContext())

    # THEN only the transient failure is retried; the invalid order is in the DLQ with its reason
    assert response == {"batchItemFailures": [{"itemIdentifier": transient_id}]}
    [dead] = drain(aws.sqs, aws.dlq_url)
    mark = json.loads(dead["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
    assert dead["Body"] == '{"order_id": "broken"}'
    assert (mark["err"]["kind"], mark["err"]["class"]) == ("terminal", "consumer.orders.InvalidOrder")


def test_consumer_fails_the_invocation_when_a_downstream_outage_fails_every_record(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWNSTREAM_OUTAGE_WINDOWS", "0-99999999999")
    consumer = import_fresh("consumer.handler")
    aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=order_body("o-1"))
    messages = aws.sqs.receive_message(QueueUrl=aws.source_url)["Messages"]

    # Powertools' default: an entirely failed batch fails the invocation, so it shows in Errors.
    with pytest.raises(BatchProcessingError, match="All records failed"):
        consumer.lambda_handler(sqs_event(messages, aws.source_arn), LambdaContext())


def test_consumer_fulfils_a_repeated_order_once(aws: Aws) -> None:
    # GIVEN the same order delivered twice, as after a re-drive or a send-then-delete crash
    consumer = import_fresh("consumer.handler")
    for _ in range(2):
        aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody=order_body("o-7"))
    messages = aws.sqs.receive_message(QueueUrl=aws.source_url, MaxNumberOfMessages=10)["Messages"]
    assert len(messages) == 2

    # WHEN both are processed, in separate invocations
    for message in messages:
        response = consumer.lambda_handler(sqs_event([message], aws.source_arn), LambdaContext())
        assert response == {"batchItemFailures": []}

    # THEN the downstream saw the order once
    assert consumer.downstream.submitted == {"o-7": 1}


def test_the_consumers_fix_reaches_a_warm_consumer_at_its_next_invocation(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a warm consumer and an order with a quantity-0 line, which it dead-letters as terminal
    consumer = import_fresh("consumer.handler")
    zero_line = {"sku": "sku-2", "quantity": 0, "unit_price": "4.50"}
    order = json.loads(order_body("o-0"))
    aws.sqs.send_message(
        QueueUrl=aws.source_url, MessageBody=json.dumps({**order, "items": [*order["items"], zero_line]})
    )
    [message] = aws.sqs.receive_message(QueueUrl=aws.source_url)["Messages"]
    consumer.lambda_handler(sqs_event([message], aws.source_arn), LambdaContext())
    assert depth(aws.sqs, aws.dlq_url) == 1

    # WHEN the fix is switched on in its configuration, and the order comes again
    monkeypatch.setenv("ORDERS_DROP_ZERO_QUANTITY_LINES", "true")
    response = consumer.lambda_handler(sqs_event([message], aws.source_arn), LambdaContext())

    # THEN it is fulfilled (its quantity-0 line dropped), and nothing more is dead-lettered
    assert response == {"batchItemFailures": []}
    assert consumer.downstream.submitted == {"o-0": 1}
    assert depth(aws.sqs, aws.dlq_url) == 1


@pytest.fixture
def small_runs_handler(aws: Aws, redriver_handler: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The re-driver's handler with a per-run limit of 2 (one batch at a time, as every real
    handler here: the limit is then exact)."""
    monkeypatch.setenv("MAX_MESSAGES_PER_RUN", "2")
    return import_fresh("sqs_redriver.runtime.handler")


def test_a_run_out_of_room_invokes_its_function_with_the_continuation(
    aws: Aws, small_runs_handler: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(
        small_runs_handler,
        "start_continuation",
        lambda client, name, resume: started.append((name, resume.to_event())),
    )
    for i in range(3):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body(f"o-{i}"))

    first = small_runs_handler.lambda_handler(scheduled_event("evt-1"), LambdaContext("redriver-fn"))
    [(function_name, continuation)] = started
    second = small_runs_handler.lambda_handler(continuation, LambdaContext("redriver-fn"))
    repeated = small_runs_handler.lambda_handler(continuation, LambdaContext("redriver-fn"))

    assert (first["redriven"], first["continued"], function_name) == (2, True, "redriver-fn")
    assert (second["redriven"], second["continued"], second["stopped_because"]) == (1, False, "DLQ empty")
    assert repeated == second and len(started) == 1


def test_a_continuation_lambda_refuses_is_logged_and_frees_the_slot(
    aws: Aws, small_runs_handler: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    # moto's Lambda has no function of that name: Invoke fails as a whole.
    for i in range(3):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body(f"o-{i}"))

    result = small_runs_handler.lambda_handler(scheduled_event("evt-1"), LambdaContext("missing-fn"))

    assert (result["redriven"], result["continued"]) == (2, False)
    assert "continuation not started" in caplog.text
    items = aws.dynamodb.scan(TableName=aws.table_name)["Items"]
    assert not [item for item in items if item["pk"]["S"].startswith("CONTINUATION#")]
