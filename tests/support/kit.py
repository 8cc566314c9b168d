"""A consumer with the kit, played in-process against moto: its environment, the deliveries the event
source mapping would make, one invocation, and a client that counts its calls."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from local_aws.clients import ClientProxy
from local_aws.events import LambdaContext
from local_aws.events import sqs_event as lambda_event
from local_aws.queues import make_visible
from sqs_redriver.kit import ConsumerKit
from sqs_redriver.protocol.settings import ENV_DLQ_URL, ENV_MAX_RECEIVE_COUNT, ENV_TABLE_NAME
from tests.support.aws import MAX_RECEIVE_COUNT, Aws

NOW = 1_800_000_000  # the kit's clock


def kit_environment(aws: Aws, **extra: str) -> dict[str, str]:
    """What grant_consumer tells a consumer about ``aws``'s re-driver, and ``extra``."""
    return {
        ENV_DLQ_URL: aws.dlq_url,
        ENV_TABLE_NAME: aws.table_name,
        ENV_MAX_RECEIVE_COUNT: str(MAX_RECEIVE_COUNT),
        **extra,
    }


def send(aws: Aws, text: str, attributes: dict[str, Any] | None = None, **extra: Any) -> None:
    """A message to ``aws``'s source queue."""
    aws.sqs.send_message(
        QueueUrl=aws.source_url, MessageBody=text, MessageAttributes=attributes or {}, **extra
    )


def receive(aws: Aws, times: int = 1) -> list[dict[str, Any]]:
    """What the event source mapping would hand the function on the ``times``-th delivery."""
    messages: list[dict[str, Any]] = []
    for _ in range(times):
        make_visible(aws.source_url)
        messages = aws.sqs.receive_message(
            QueueUrl=aws.source_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        )["Messages"]
    return messages


def run(
    kit: ConsumerKit,
    aws: Aws,
    consumer: Callable[[SQSRecord], Any],
    messages: list[dict[str, Any]],
    processor: Any = None,
) -> list[str]:
    """One invocation; the MessageIds it fails (all of them when Powertools fails the invocation
    because every record failed)."""
    try:
        response = kit.process_partial_response(
            event=lambda_event(messages, aws.source_arn),
            record_handler=consumer,
            processor=processor or BatchProcessor(event_type=EventType.SQS),
            context=LambdaContext(),
        )
    except BatchProcessingError:
        return [m["MessageId"] for m in messages]
    return [item["itemIdentifier"] for item in response["batchItemFailures"]]


class Calls(ClientProxy):
    """Counts the client's operations (and forwards them)."""

    def __init__(self, client: Any, **overrides: Callable[..., Any]) -> None:
        super().__init__(client, **overrides)
        self.counts: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        operation = super().__getattr__(name)
        if not callable(operation):
            return operation

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.counts[name] += 1
            return operation(*args, **kwargs)

        return counted
