"""The default stack: an orders queue, its DLQ, the example consumer and the re-driver."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.functions import acknowledge, powertools_layer, python_function
from infra.redriver import SqsRedriver, secure_queue
from infra.settings import RedriverSettings

# AWS's guidance for a queue that feeds Lambda: visibility timeout at least 6x the function's.
VISIBILITY_TO_TIMEOUT_RATIO = 6
SOURCE_RETENTION = Duration.days(4)
DLQ_RETENTION = Duration.days(14)


class RedriverStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, settings: RedriverSettings, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.dead_letter_queue = secure_queue(self, "OrdersDlq", retention_period=DLQ_RETENTION)
        acknowledge(
            self.dead_letter_queue,
            "Serverless::Serverless-SQSRedrivePolicy",
            "This is the orders queue's DLQ; the re-driver drains it, and what cannot be re-driven "
            "goes to the parking lot, which plays the role of its DLQ.",
        )
        self.source_queue = secure_queue(
            self,
            "OrdersQueue",
            retention_period=SOURCE_RETENTION,
            visibility_timeout=Duration.seconds(
                settings.consumer_timeout_seconds * VISIBILITY_TO_TIMEOUT_RATIO
            ),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=settings.max_receive_count
            ),
        )
        self.redriver = SqsRedriver(
            self,
            "Redriver",
            source_queue=self.source_queue,
            dead_letter_queue=self.dead_letter_queue,
            settings=settings,
        )
        self.consumer = python_function(
            self,
            "OrdersConsumer",
            handler="consumer.handler.lambda_handler",
            environment={
                "POWERTOOLS_SERVICE_NAME": "orders-consumer",
                "POWERTOOLS_METRICS_NAMESPACE": "DlqRedriverExample",
                "DOWNSTREAM_FAILURE_RATE": "0",
            },
            timeout=Duration.seconds(settings.consumer_timeout_seconds),
            memory_size=256,
            layer=powertools_layer(self),
        )
        self.consumer.add_event_source(
            event_sources.SqsEventSource(self.source_queue, batch_size=10, report_batch_item_failures=True)
        )
        acknowledge(
            self.consumer,
            "Serverless::Serverless-LambdaEventSourceMappingDestination",
            "Records that keep failing go to the queue's own DLQ through its RedrivePolicy, where "
            "the re-driver takes over; an on-failure destination would bypass it.",
        )
        acknowledge(
            self.consumer,
            "Serverless::Serverless-LambdaDLQ",
            "The consumer is invoked synchronously by its SQS event source mapping; an asynchronous "
            "DLQ would never be used. Failed records reach the orders DLQ instead.",
        )
