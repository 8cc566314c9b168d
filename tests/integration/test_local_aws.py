"""The local AWS of the demo and the bench: moto, with its depth-dependent SQS costs cut down."""

from __future__ import annotations

import moto.sqs.models as moto_sqs_models
import pytest
from moto.core.utils import unix_time, unix_time_millis
from moto.sqs.models import SQSBackend, sqs_backends

from demo.local_aws import ACCOUNT, REGION, speed_up_moto_sqs
from tests.conftest import Aws

RETENTION_CHECK = "is_message_valid_based_on_retention_period"


@pytest.fixture
def original_retention_check(monkeypatch: pytest.MonkeyPatch) -> object:
    """moto's own check; moto is restored after the test (the rest of the suite runs on stock moto)."""
    original = getattr(SQSBackend, RETENTION_CHECK)
    monkeypatch.setattr(SQSBackend, RETENTION_CHECK, original)
    monkeypatch.setattr(moto_sqs_models, "unix_time", moto_sqs_models.unix_time)
    monkeypatch.setattr(moto_sqs_models, "unix_time_millis", moto_sqs_models.unix_time_millis)
    return original


def test_speed_up_keeps_which_messages_are_within_retention(aws: Aws, original_retention_check) -> None:
    url = aws.sqs.create_queue(QueueName="short", Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
    for body in ("fresh", "expired", "near-the-limit"):
        aws.sqs.send_message(QueueUrl=url, MessageBody=body)
    backend = sqs_backends[ACCOUNT][REGION]
    messages = {m.body: m for m in backend.get_queue("short")._messages}
    now_ms = unix_time_millis()
    messages["expired"].sent_timestamp = int(now_ms - 120_000)
    messages["near-the-limit"].sent_timestamp = int(now_ms - 59_000)

    speed_up_moto_sqs()

    verdicts = {
        body: backend.is_message_valid_based_on_retention_period("short", m) for body, m in messages.items()
    }
    assert verdicts == {body: original_retention_check(backend, "short", m) for body, m in messages.items()}
    assert verdicts == {"fresh": True, "expired": False, "near-the-limit": True}


def test_speed_up_keeps_the_clock_and_what_is_visible(aws: Aws, original_retention_check) -> None:
    speed_up_moto_sqs()

    assert moto_sqs_models.unix_time() == pytest.approx(unix_time(), abs=0.05)
    assert moto_sqs_models.unix_time_millis() == pytest.approx(unix_time_millis(), abs=50)
    aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody="now")
    aws.sqs.send_message(QueueUrl=aws.source_url, MessageBody="later", DelaySeconds=60)
    received = aws.sqs.receive_message(QueueUrl=aws.source_url, MaxNumberOfMessages=10, VisibilityTimeout=60)
    assert [m["Body"] for m in received["Messages"]] == ["now"]
    assert "Messages" not in aws.sqs.receive_message(QueueUrl=aws.source_url, MaxNumberOfMessages=10)
