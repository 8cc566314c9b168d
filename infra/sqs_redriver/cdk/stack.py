"""The default stack: an orders queue, its DLQ, the example consumer and the re-driver."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sqs_redriver.cdk.functions import acknowledge, grant_item_access, python_function
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings
from sqs_redriver.cdk.storage import secure_queue, secure_table

SOURCE_RETENTION = Duration.days(4)
DLQ_RETENTION = Duration.days(14)


class RedriverStack(Stack):
    """The orders queue and its DLQ, the re-driver attached to them, and the example consumer (with
    the consumer kit) that reads the queue."""

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: RedriverSettings, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self._build_queues(settings)
        self.redriver = SqsRedriver(
            self,
            "Redriver",
            source_queue=self.source_queue,
            dead_letter_queue=self.dead_letter_queue,
            settings=settings,
        )
        self._build_consumer(settings)

    def _build_queues(self, settings: RedriverSettings) -> None:
        """``dead_letter_queue`` and ``source_queue``, the orders queue whose RedrivePolicy names it."""
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
            visibility_timeout=Duration.seconds(settings.source_visibility_timeout),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=settings.max_receive_count
            ),
        )

    def _build_consumer(self, settings: RedriverSettings) -> None:
        """``consumer``, the example consumer of the orders queue, and its ``idempotency_table``."""
        # Powertools idempotency records, keyed by order id: re-drives and redeliveries of an order
        # that was already fulfilled return the first result instead of fulfilling it again.
        self.idempotency_table = secure_table(
            self,
            "OrdersIdempotency",
            partition_key="id",
            ttl_attribute="expiration",
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.consumer = python_function(
            self,
            "OrdersConsumer",
            handler="consumer.handler.lambda_handler",
            # Its own package only: the kit and the re-driver package come with the consumer kit layer
            # (grant_consumer), as they do for any consumer; a copy here would shadow the layer's.
            packages=("consumer",),
            environment={
                "POWERTOOLS_SERVICE_NAME": "orders-consumer",
                "POWERTOOLS_METRICS_NAMESPACE": "DlqRedriverExample",
                "IDEMPOTENCY_TABLE_NAME": self.idempotency_table.table_name,
                "DOWNSTREAM_FAILURE_RATE": "0",
            },
            timeout=Duration.seconds(settings.consumer_timeout_seconds),
            memory_size=256,
            layer=self.redriver.powertools_layer,  # the re-driver's: one Powertools release
        )
        grant_item_access(self.consumer, self.idempotency_table)
        # The kit's permissions, environment and layer; the re-driver then waits for its verdicts.
        self.redriver.grant_consumer(self.consumer)
        self.consumer.add_event_source(
            event_sources.SqsEventSource(self.source_queue, batch_size=10, report_batch_item_failures=True)
        )
        self._acknowledge_consumer_findings()

    def _acknowledge_consumer_findings(self) -> None:
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
