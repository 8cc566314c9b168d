"""The consumer kit in a Powertools consumer, in-process against moto: what reaches the DLQ, the
state table and the batch response for every kind of failure."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, SqsFifoPartialProcessor
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import ClientError

from local_aws.clients import ClientProxy
from local_aws.events import LambdaContext
from local_aws.events import sqs_event as lambda_event
from local_aws.queues import drain
from sqs_redriver.kit import ConsumerKit, TerminalError, TransientError
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, from_sqs, string_attribute
from sqs_redriver.protocol.failure import VERDICT_RECORD_TTL_SECONDS, Failure, FailureKind
from sqs_redriver.protocol.keys import RecordKind, kit_record_key
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.settings import ENV_DLQ_URL, ENV_MAX_RECEIVE_COUNT, ENV_TABLE_NAME
from tests.support.aws import MAX_RECEIVE_COUNT, Aws, mark_of, stored_item
from tests.support.factories import FakeClock
from tests.support.kit import NOW, Calls, kit_environment, receive, run, send

TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"


class InvalidOrder(Exception):
    pass


class DownstreamUnavailable(Exception):
    pass


OUTCOMES: dict[str, Callable[[], Exception]] = {
    "terminal": lambda: InvalidOrder("order o-1 is invalid"),
    "transient": lambda: DownstreamUnavailable("downstream 503"),
    "unknown": lambda: KeyError("customer_id"),
    "raised-terminal": lambda: TerminalError("bad"),
    "raised-transient": lambda: TransientError("later"),
}


class Consumer:
    """A record handler whose outcome is the body's ``do`` field; remembers what it processed."""

    def __init__(self) -> None:
        self.processed: list[str] = []

    def __call__(self, record: SQSRecord) -> str:
        outcome = json.loads(record.body)["do"]
        if outcome in OUTCOMES:
            raise OUTCOMES[outcome]()
        self.processed.append(record.body)
        return "done"


def fails(*_: Any, **__: Any) -> Any:
    raise ClientError({"Error": {"Code": "InternalError", "Message": "boom"}}, "Operation")


def body(do: str, n: int = 0) -> str:
    return json.dumps({"do": do, "n": n})


def make_kit(aws: Aws, *, sqs: Any = None, dynamodb: Any = None, **rules: Any) -> ConsumerKit:
    rules.setdefault("terminal", [InvalidOrder])
    rules.setdefault("transient", [DownstreamUnavailable])
    return ConsumerKit.from_environment(
        env=kit_environment(aws),
        sqs=sqs or aws.sqs,
        dynamodb=dynamodb or aws.dynamodb,
        clock=FakeClock(NOW),
        **rules,
    )


def redriven(mark: Mark) -> dict[str, Any]:
    return {MARK_ATTRIBUTE: string_attribute(mark.to_json())}


# -- terminal failures --------------------------------------------------------------------------


def test_a_terminal_failure_is_dead_lettered_at_once_with_its_attributes_and_the_failure(aws: Aws) -> None:
    # GIVEN a message with string, number and binary attributes and a trace header
    attributes = {
        "tenant": {"DataType": "String", "StringValue": "t-1"},
        "priority": {"DataType": "Number", "StringValue": "3"},
        "blob": {"DataType": "Binary.gzip", "BinaryValue": b"\x00\x01\xff"},
    }
    send(
        aws, body("terminal"), attributes, MessageSystemAttributes={"AWSTraceHeader": string_attribute(TRACE)}
    )
    messages = receive(aws)

    # WHEN its first delivery fails terminally
    failed = run(make_kit(aws), aws, Consumer(), messages)

    # THEN it is handled, and in the DLQ as it was, with the failure in a fresh mark
    assert failed == []
    [dead] = drain(aws.sqs, aws.dlq_url)
    assert dead["Body"] == body("terminal")
    assert {k: v for k, v in dead["MessageAttributes"].items() if k != MARK_ATTRIBUTE} == attributes
    assert dead["Attributes"]["AWSTraceHeader"] == TRACE
    mark = mark_of(dead)
    assert (mark.identity, mark.count, mark.first_failed_at) == (messages[0]["MessageId"], 0, NOW)
    assert mark.failure is not None
    assert mark.failure.to_dict() == {
        "kind": "terminal",
        "class": f"{__name__}.InvalidOrder",
        "msg": "order o-1 is invalid",
        "fp": mark.failure.fingerprint,
        "at": NOW,
        "try": 1,
        "src": aws.source_arn,
    }


def test_the_dead_lettered_message_reads_as_the_re_driver_reads_it(aws: Aws) -> None:
    send(aws, body("terminal"))
    messages = receive(aws)

    run(make_kit(aws), aws, Consumer(), messages)

    parsed = from_sqs(drain(aws.sqs, aws.dlq_url)[0])
    assert parsed.mark is not None and parsed.mark.identity == messages[0]["MessageId"]
    assert parsed.mark.failure is not None and parsed.mark.failure.terminal


def test_a_terminal_failure_with_no_room_for_the_mark_goes_unchanged_with_a_failure_record(aws: Aws) -> None:
    # GIVEN a message that already has 10 attributes
    attributes = {f"a{i}": {"DataType": "String", "StringValue": str(i)} for i in range(10)}
    send(aws, body("terminal"), attributes)

    # WHEN it fails terminally
    failed = run(make_kit(aws), aws, Consumer(), receive(aws))

    # THEN it is in the DLQ unchanged, and its failure is in the table under its content identity
    assert failed == []
    [dead] = drain(aws.sqs, aws.dlq_url)
    assert dead["Body"] == body("terminal") and dead["MessageAttributes"] == attributes
    record = stored_item(
        aws, kit_record_key(RecordKind.FAILURE, aws.dlq_url, from_sqs(dead).content_identity)
    )
    assert record is not None
    failure = Failure.from_dict(json.loads(record["failure"]["S"]))
    assert (failure.kind, failure.error_class, failure.attempt) == (
        FailureKind.TERMINAL,
        f"{__name__}.InvalidOrder",
        1,
    )
    assert int(record["expires_at"]["N"]) == NOW + VERDICT_RECORD_TTL_SECONDS


def test_a_too_large_message_also_goes_unchanged_with_a_failure_record(aws: Aws) -> None:
    large = json.dumps({"do": "terminal", "pad": "x" * (1_048_576 - 2_000)})
    send(aws, large)

    assert run(make_kit(aws), aws, Consumer(), receive(aws)) == []

    [dead] = drain(aws.sqs, aws.dlq_url)
    assert MARK_ATTRIBUTE not in dead.get("MessageAttributes", {})
    assert (
        stored_item(aws, kit_record_key(RecordKind.FAILURE, aws.dlq_url, from_sqs(dead).content_identity))
        is not None
    )


def test_a_failed_dlq_send_leaves_the_record_failed_for_sqs_to_retry(aws: Aws) -> None:
    send(aws, body("terminal"))
    messages = receive(aws)

    failed = run(make_kit(aws, sqs=ClientProxy(aws.sqs, send_message=fails)), aws, Consumer(), messages)

    assert failed == [messages[0]["MessageId"]]
    assert drain(aws.sqs, aws.dlq_url) == []


def test_a_failed_failure_record_write_sends_nothing_and_leaves_the_record_failed(aws: Aws) -> None:
    send(aws, body("terminal"), {f"a{i}": string_attribute(str(i)) for i in range(10)})
    messages = receive(aws)

    kit = make_kit(aws, dynamodb=ClientProxy(aws.dynamodb, update_item=fails))
    failed = run(kit, aws, Consumer(), messages)

    assert failed == [messages[0]["MessageId"]]
    assert drain(aws.sqs, aws.dlq_url) == []


def test_a_redriven_message_keeps_its_identity_and_history_and_drops_verdict_key_and_probe(aws: Aws) -> None:
    mark = Mark("id-1", count=2, first_failed_at=100, redriven_at=(110, 130), verdict_key="w-1", probe=True)
    send(aws, body("terminal"), redriven(mark))

    run(make_kit(aws), aws, Consumer(), receive(aws))

    after = mark_of(drain(aws.sqs, aws.dlq_url)[0])
    assert (after.identity, after.count, after.first_failed_at, after.redriven_at) == (
        "id-1",
        2,
        100,
        (110, 130),
    )
    assert (after.verdict_key, after.probe) == (None, False)
    assert after.failure is not None and after.failure.terminal


# -- transient failures -------------------------------------------------------------------------


def test_a_transient_failure_before_the_last_attempt_is_left_to_sqs(aws: Aws) -> None:
    send(aws, body("transient"))
    messages = receive(aws)

    failed = run(make_kit(aws), aws, Consumer(), messages)

    assert failed == [messages[0]["MessageId"]]
    assert drain(aws.sqs, aws.dlq_url) == []


def test_a_transient_failure_on_the_last_attempt_is_dead_lettered_with_the_reason(aws: Aws) -> None:
    send(aws, body("transient"))
    messages = receive(aws, times=MAX_RECEIVE_COUNT)

    failed = run(make_kit(aws), aws, Consumer(), messages)

    assert failed == []
    failure = mark_of(drain(aws.sqs, aws.dlq_url)[0]).failure
    assert failure is not None
    assert (failure.kind, failure.attempt, failure.message) == (
        FailureKind.TRANSIENT,
        MAX_RECEIVE_COUNT,
        "downstream 503",
    )


def test_a_probe_failing_transiently_is_dead_lettered_at_once(aws: Aws) -> None:
    send(aws, body("transient"), redriven(Mark("id-1", count=1, redriven_at=(100,), probe=True)))

    failed = run(make_kit(aws), aws, Consumer(), receive(aws))

    assert failed == []
    after = mark_of(drain(aws.sqs, aws.dlq_url)[0])
    assert after.failure is not None and after.failure.kind is FailureKind.TRANSIENT and not after.probe


@pytest.mark.parametrize(
    ("rules", "kind"),
    [({}, FailureKind.TERMINAL), ({"unknown": FailureKind.TRANSIENT}, FailureKind.TRANSIENT)],
    ids=["default", "configured"],
)
def test_an_unknown_exception_is_terminal_by_default_and_transient_when_configured(
    aws: Aws, rules: dict[str, Any], kind: FailureKind
) -> None:
    send(aws, body("unknown"))
    messages = receive(aws)

    failed = run(make_kit(aws, **rules), aws, Consumer(), messages)

    dead = drain(aws.sqs, aws.dlq_url)
    if kind is FailureKind.TERMINAL:
        assert failed == [] and mark_of(dead[0]).failure.kind is kind  # type: ignore[union-attr]
    else:
        assert failed == [messages[0]["MessageId"]] and dead == []


def test_successes_and_failures_share_a_batch(aws: Aws) -> None:
    for outcome in ("ok", "terminal", "transient", "ok"):
        send(aws, body(outcome))
    messages = receive(aws)
    consumer = Consumer()

    failed = run(make_kit(aws), aws, consumer, messages)

    transient = [m["MessageId"] for m in messages if json.loads(m["Body"])["do"] == "transient"]
    assert failed == transient and len(consumer.processed) == 2
    assert [json.loads(m["Body"])["do"] for m in drain(aws.sqs, aws.dlq_url)] == ["terminal"]


# -- verdicts of re-driven messages -------------------------------------------------------------


def test_verdicts_of_a_run_are_one_update_at_the_batchs_end_and_one_per_transient_failure(aws: Aws) -> None:
    # GIVEN first deliveries of re-driven messages of one run: 2 succeed, 1 transient, 1 terminal
    for n, outcome in enumerate(("ok", "ok", "transient", "terminal")):
        send(aws, body(outcome, n), redriven(Mark(f"id-{n}", count=1, redriven_at=(100,), verdict_key="w-1")))
    dynamodb = Calls(aws.dynamodb)
    kit = make_kit(aws, dynamodb=dynamodb)

    # WHEN the batch runs
    run(kit, aws, Consumer(), receive(aws))

    # THEN the transient failure was written at once, and one UpdateItem at the end holds the rest:
    # together the counts and both failures' fingerprints
    record = stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1"))
    assert record is not None
    assert dynamodb.counts == Counter({"update_item": 2})
    assert {name: record[name]["N"] for name in ("ok", "transient", "terminal")} == {
        "ok": "2",
        "transient": "1",
        "terminal": "1",
    }
    assert len(record["fingerprints"]["SS"]) == 2
    assert int(record["expires_at"]["N"]) == NOW + VERDICT_RECORD_TTL_SECONDS


def test_a_transient_failure_is_reported_before_the_batchs_next_record_is_handled(aws: Aws) -> None:
    # GIVEN a batch whose first re-driven message meets an outage, and a second one after it
    for n, outcome in enumerate(("transient", "ok")):
        send(aws, body(outcome, n), redriven(Mark(f"id-{n}", count=1, redriven_at=(100,), verdict_key="w-1")))
    seen: list[dict[str, Any] | None] = []

    class Watching(Consumer):
        def __call__(self, record: SQSRecord) -> str:
            seen.append(stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1")))
            return super().__call__(record)

    # WHEN the batch runs
    run(make_kit(aws), aws, Watching(), receive(aws))

    # THEN while the second record is handled the re-driver can already read the failure
    assert seen[0] is None
    assert seen[1] is not None and seen[1]["transient"] == {"N": "1"} and "ok" not in seen[1]
    stored = stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1"))
    assert stored is not None and stored["ok"] == {"N": "1"}


def test_ten_redriven_messages_of_one_run_cost_one_table_call(aws: Aws) -> None:
    for n in range(10):
        send(aws, body("ok", n), redriven(Mark(f"id-{n}", count=1, redriven_at=(100,), verdict_key="w-1")))
    dynamodb = Calls(aws.dynamodb)

    run(make_kit(aws, dynamodb=dynamodb), aws, Consumer(), receive(aws))

    assert dynamodb.counts == Counter({"update_item": 1})
    stored = stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1"))
    assert stored is not None and stored["ok"] == {"N": "10"}


def test_verdicts_add_up_across_batches_and_runs_are_kept_apart(aws: Aws) -> None:
    kit = make_kit(aws)
    for verdict_key in ("w-1", "w-2", "w-1"):
        send(aws, body("ok"), redriven(Mark("id-1", count=1, redriven_at=(100,), verdict_key=verdict_key)))
        run(kit, aws, Consumer(), receive(aws))
        drain(aws.sqs, aws.source_url)

    assert stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1"))["ok"] == {"N": "2"}  # type: ignore[index]
    assert stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-2"))["ok"] == {"N": "1"}  # type: ignore[index]


def test_a_later_delivery_of_a_redriven_message_gives_no_verdict(aws: Aws) -> None:
    send(aws, body("ok"), redriven(Mark("id-1", count=1, redriven_at=(100,), verdict_key="w-1")))
    dynamodb = Calls(aws.dynamodb)

    run(make_kit(aws, dynamodb=dynamodb), aws, Consumer(), receive(aws, times=2))

    assert (
        stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1")) is None
        and dynamodb.counts == Counter()
    )


def test_messages_never_redriven_give_no_verdict_and_cost_no_table_call(aws: Aws) -> None:
    send(aws, body("ok"))
    dynamodb = Calls(aws.dynamodb)

    run(make_kit(aws, dynamodb=dynamodb), aws, Consumer(), receive(aws))

    assert dynamodb.counts == Counter()


def test_a_failed_verdict_write_is_logged_and_leaves_the_batch_result_unchanged(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    send(aws, body("ok"), redriven(Mark("id-1", count=1, redriven_at=(100,), verdict_key="w-1")))
    send(aws, body("transient"), redriven(Mark("id-2", count=1, redriven_at=(100,), verdict_key="w-1")))
    messages = receive(aws)
    kit = make_kit(aws, dynamodb=ClientProxy(aws.dynamodb, update_item=fails))

    failed = run(kit, aws, Consumer(), messages)

    assert failed == [m["MessageId"] for m in messages if "transient" in m["Body"]]
    logs = [r for r in caplog.records if r.getMessage() == "verdict write failed"]
    # the transient failure's write at once, then the batch's (the failure buffered for it)
    assert [(r.verdict_key, getattr(r, "ok", 0), r.transient, r.levelname) for r in logs] == [
        ("w-1", 0, 1, "WARNING"),
        ("w-1", 1, 1, "WARNING"),
    ]
    assert len(kit.verdicts) == 0


def test_verdicts_are_written_even_when_the_whole_batch_fails(aws: Aws) -> None:
    send(aws, body("transient"), redriven(Mark("id-1", count=1, redriven_at=(100,), verdict_key="w-1")))

    with pytest.raises(BatchProcessingError):
        make_kit(aws).process_partial_response(
            event=lambda_event(receive(aws), aws.source_arn),
            record_handler=Consumer(),
            processor=BatchProcessor(event_type=EventType.SQS),
        )

    assert stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1"))["transient"] == {
        "N": "1"
    }  # type: ignore[index]


# -- FIFO -----------------------------------------------------------------------------------------


def send_group(aws: Aws, outcomes: list[str], group: str = "g-1") -> None:
    for n, outcome in enumerate(outcomes):
        send(aws, body(outcome, n), MessageGroupId=group, MessageDeduplicationId=f"{group}-{n}")


def test_fifo_a_terminal_failure_mid_group_is_dead_lettered_and_the_rest_processed_in_order(
    fifo: Aws,
) -> None:
    aws = fifo
    send_group(aws, ["ok", "terminal", "ok"])
    consumer = Consumer()

    failed = run(make_kit(aws), aws, consumer, receive(aws), SqsFifoPartialProcessor())

    assert failed == []
    assert [json.loads(b)["n"] for b in consumer.processed] == [0, 2]
    [dead] = drain(aws.sqs, aws.dlq_url)
    assert dead["Attributes"]["MessageGroupId"] == "g-1" and json.loads(dead["Body"])["n"] == 1
    assert mark_of(dead).failure is not None


def test_fifo_a_transient_failure_fails_the_rest_unprocessed(fifo: Aws) -> None:
    aws = fifo
    send_group(aws, ["ok", "transient", "ok"])
    messages = receive(aws)
    consumer = Consumer()

    failed = run(make_kit(aws), aws, consumer, messages, SqsFifoPartialProcessor())

    assert failed == [m["MessageId"] for m in messages[1:]]
    assert [json.loads(b)["n"] for b in consumer.processed] == [0]
    assert drain(aws.sqs, aws.dlq_url) == []


def test_fifo_skip_group_on_error_fails_only_the_group_of_a_transient_failure(fifo: Aws) -> None:
    aws = fifo
    send_group(aws, ["transient", "ok"], group="g-1")
    send_group(aws, ["terminal", "ok"], group="g-2")
    messages = receive(aws)
    consumer = Consumer()

    failed = run(make_kit(aws), aws, consumer, messages, SqsFifoPartialProcessor(skip_group_on_error=True))

    assert failed == [m["MessageId"] for m in messages if m["Attributes"]["MessageGroupId"] == "g-1"]
    assert consumer.processed == [body("ok", 1)]  # g-2's second message, after g-2's first was dead-lettered
    [dead] = drain(aws.sqs, aws.dlq_url)
    assert dead["Attributes"]["MessageGroupId"] == "g-2"


def test_fifo_a_retried_dead_letter_send_is_deduplicated(fifo: Aws) -> None:
    aws = fifo
    send_group(aws, ["terminal"])
    messages = receive(aws)
    kit = make_kit(aws)

    run(kit, aws, Consumer(), messages)
    run(kit, aws, Consumer(), messages)  # e.g. the delete after the first run never happened

    assert len(drain(aws.sqs, aws.dlq_url)) == 1


# -- API ------------------------------------------------------------------------------------------


def test_no_client_is_created_until_a_call_needs_one(aws: Aws) -> None:
    env = {ENV_DLQ_URL: aws.dlq_url, ENV_TABLE_NAME: aws.table_name, ENV_MAX_RECEIVE_COUNT: "2"}
    kit = ConsumerKit.from_environment(env=env)

    send(aws, body("ok"))
    run(kit, aws, Consumer(), receive(aws))

    assert (kit.aws._sqs, kit.aws._dynamodb) == (None, None)


def test_wrap_passes_the_lambda_context_to_a_handler_that_takes_it(aws: Aws) -> None:
    seen: list[Any] = []

    def handler(record: SQSRecord, lambda_context: Any) -> None:
        seen.append(lambda_context)

    send(aws, body("ok"))
    context = LambdaContext()
    make_kit(aws).process_partial_response(
        event=lambda_event(receive(aws), aws.source_arn),
        record_handler=handler,
        processor=BatchProcessor(event_type=EventType.SQS),
        context=context,
    )

    assert seen == [context]


def test_wrap_and_flush_work_without_process_partial_response(aws: Aws) -> None:
    send(aws, body("terminal"), redriven(Mark("id-1", count=1, redriven_at=(100,), verdict_key="w-1")))
    kit = make_kit(aws)
    processor = BatchProcessor(event_type=EventType.SQS)
    records = lambda_event(receive(aws), aws.source_arn)["Records"]

    with processor(records, kit.wrap(Consumer())):
        processor.process()
    written = kit.flush_verdicts()

    assert processor.response() == {"batchItemFailures": []} and written == 1
    assert stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1"))["terminal"] == {"N": "1"}  # type: ignore[index]
