"""The kit against moto: no secret of an exception's text reaches the mark, the FAILURE# record or
the kit's log lines; the text can be dropped; an exception that will not print is dead-lettered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from local_aws.queues import drain
from sqs_redriver.kit import ConsumerKit, TerminalError
from sqs_redriver.kit.consumer import DROPPED_TEXT
from sqs_redriver.protocol.envelope import from_sqs
from sqs_redriver.protocol.failure import Failure
from sqs_redriver.protocol.keys import RecordKind, kit_record_key
from sqs_redriver.protocol.settings import ENV_ERROR_TEXT, ENV_ERROR_TEXT_MAX_CHARS, ENV_REDACT_PATTERNS
from tests.support.aws import Aws, mark_of, stored_item
from tests.support.broken_exceptions import Nameless, Unprintable
from tests.support.factories import FakeClock
from tests.support.kit import NOW, kit_environment, receive, run, send

SECRETS = ("AKIAIOSFODNN7EXAMPLE", "hunter2-s3cret", "eyJhbGciOiJIUzI1NiJ9.e30.sig", "4111111111111111")
LEAKY = (
    f"login as admin with password={SECRETS[1]} via key {SECRETS[0]} "
    f"(Authorization: Bearer {SECRETS[2]}), card {SECRETS[3]}"
)


class Anonymous(TerminalError, metaclass=Nameless):
    def __str__(self) -> str:
        raise RuntimeError("will not print")


def kit_with(aws: Aws, **env: str) -> ConsumerKit:
    return ConsumerKit.from_environment(
        env=kit_environment(aws, **env),
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        clock=FakeClock(NOW),
    )


def raising(exc: Exception) -> Any:
    def handler(record: SQSRecord) -> None:
        raise exc

    return handler


def dead_lettered_failure(aws: Aws) -> Failure:
    [dead] = drain(aws.sqs, aws.dlq_url)
    failure = mark_of(dead).failure
    assert failure is not None
    return failure


def test_secrets_in_the_exception_text_never_reach_the_mark_or_the_logs(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a user pattern for card numbers, and a terminal failure whose text holds four secrets
    send(aws, "{}")
    kit = kit_with(aws, **{ENV_REDACT_PATTERNS: json.dumps([r"card (?P<secret>\d{16})"])})

    # WHEN the kit dead-letters it
    assert run(kit, aws, raising(TerminalError(LEAKY)), receive(aws)) == []

    # THEN the mark says what was wrong without any of them, and so do the kit's log lines
    failure = dead_lettered_failure(aws)
    assert failure.message == (
        "login as admin with password=<redacted> via key <redacted> "
        "(Authorization: Bearer <redacted>), card <redacted>"
    )
    logged = " ".join(str(vars(record)) for record in caplog.records)  # messages and their fields
    assert "dead-lettered by the kit" in logged
    assert not [s for s in SECRETS if s in failure.to_dict()["msg"] + logged]


def test_secrets_never_reach_the_failure_record_of_a_message_with_no_room_for_the_mark(aws: Aws) -> None:
    attributes = {f"a{i}": {"DataType": "String", "StringValue": str(i)} for i in range(10)}
    send(aws, "{}", attributes)

    run(kit_with(aws), aws, raising(TerminalError(LEAKY)), receive(aws))

    [dead] = drain(aws.sqs, aws.dlq_url)
    record = stored_item(
        aws, kit_record_key(RecordKind.FAILURE, aws.dlq_url, from_sqs(dead).content_identity)
    )
    assert record is not None
    stored = record["failure"]["S"]
    assert "password=<redacted>" in stored
    assert not [s for s in SECRETS[:3] if s in stored]


def test_the_same_bug_with_different_secrets_has_one_fingerprint(aws: Aws) -> None:
    send(aws, "{}")
    send(aws, "{}")
    first, second = receive(aws)
    kit = kit_with(aws)

    run(kit, aws, raising(TerminalError("token=first-token rejected")), [first])
    run(kit, aws, raising(TerminalError("token=other-token rejected")), [second])

    fingerprints = {mark_of(m).failure.fingerprint for m in drain(aws.sqs, aws.dlq_url)}  # type: ignore[union-attr]
    assert len(fingerprints) == 1


def test_dropped_text_keeps_only_the_class_and_the_fingerprint(aws: Aws) -> None:
    send(aws, "{}")

    run(kit_with(aws, **{ENV_ERROR_TEXT: "drop"}), aws, raising(TerminalError(LEAKY)), receive(aws))

    failure = dead_lettered_failure(aws)
    assert (failure.error_class, failure.message) == ("sqs_redriver.kit.classify.TerminalError", DROPPED_TEXT)
    assert len(failure.fingerprint) == 16


def test_the_text_is_cut_to_the_configured_length(aws: Aws) -> None:
    send(aws, "{}")

    run(
        kit_with(aws, **{ENV_ERROR_TEXT_MAX_CHARS: "20"}),
        aws,
        raising(TerminalError("x" * 100)),
        receive(aws),
    )

    assert dead_lettered_failure(aws).message == "x" * 19 + "…"


def test_an_exception_that_will_not_print_is_dead_lettered_with_a_placeholder(aws: Aws) -> None:
    # GIVEN an exception type the consumer lists as terminal, whose __str__ raises
    send(aws, "{}")
    kit = ConsumerKit.from_environment(
        terminal=[Unprintable],
        env=kit_environment(aws),
        sqs=aws.sqs,
        dynamodb=aws.dynamodb,
        clock=FakeClock(NOW),
    )

    # WHEN the record handler raises it
    failed = run(kit, aws, raising(Unprintable()), receive(aws))

    # THEN the record is handled, and the DLQ has it with a placeholder for the reason
    assert failed == []
    failure = dead_lettered_failure(aws)
    assert (failure.error_class, failure.message) == (
        "tests.support.broken_exceptions.Unprintable",
        "<unprintable Unprintable>",
    )


def test_an_exception_whose_class_will_not_give_its_name_is_dead_lettered_too(aws: Aws) -> None:
    send(aws, "{}")

    failed = run(kit_with(aws), aws, raising(Anonymous()), receive(aws))

    assert failed == []
    failure = dead_lettered_failure(aws)
    assert (failure.error_class, failure.message) == (f"{__name__}.exception", "<unprintable exception>")
