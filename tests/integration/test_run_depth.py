"""A run can be followed from top to bottom: from the handler to SQS's SendMessageBatch, and to the
write-ahead BatchWriteItem, in a few frames of the product's code (docs/layout.md walks them)."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from botocore.client import BaseClient

import sqs_redriver.runtime
from local_aws.events import LambdaContext, scheduled_event
from tests.support.aws import Aws, handler_environment
from tests.support.cold_start import import_fresh
from tests.support.factories import order_body

LAMBDA_CODE = Path(sqs_redriver.runtime.__file__).parents[1]
# Frames of the product's code on the stack at the AWS call (docs/layout.md walks them).
MAX_FRAMES_TO_SEND = 11
MAX_FRAMES_TO_WRITE_AHEAD = 13


def product_frames() -> list[str]:
    """The frames of the product's Lambda code on the stack, outermost first."""
    frames = [f for f in reversed(inspect.stack()) if Path(f.filename).is_relative_to(LAMBDA_CODE)]
    return [f"{Path(f.filename).relative_to(LAMBDA_CODE)}:{f.function}" for f in frames]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Each AWS operation's first call, with the product frames that led to it."""
    seen: dict[str, list[str]] = {}
    make_api_call = BaseClient._make_api_call

    def remembered(client: BaseClient, operation: str, params: Any) -> Any:
        seen.setdefault(operation, product_frames())
        return make_api_call(client, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", remembered)
    return seen


@pytest.fixture
def redriver_handler(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    extra = {"BASE_DELAY_SECONDS": "0", "MAX_DELAY_SECONDS": "0"}
    for name, value in handler_environment(aws, RECORD_EVERY_REDRIVE="true", **extra).items():
        monkeypatch.setenv(name, value)
    return import_fresh("sqs_redriver.runtime.handler")


def test_a_scheduled_run_reaches_sqs_and_the_table_in_a_few_frames(
    aws: Aws, redriver_handler: ModuleType, calls: dict[str, list[str]]
) -> None:
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=order_body("o-1"))

    redriver_handler.lambda_handler(scheduled_event("evt-1"), LambdaContext())

    send, write_ahead = calls["SendMessageBatch"], calls["BatchWriteItem"]
    assert send[0] == "runtime/handler.py:lambda_handler"
    assert len(send) <= MAX_FRAMES_TO_SEND, send
    assert len(write_ahead) <= MAX_FRAMES_TO_WRITE_AHEAD, write_ahead
