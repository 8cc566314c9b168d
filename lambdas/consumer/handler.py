"""Example consumer: a Powertools batch processor over the source queue, reporting partial failures,
with the re-driver's consumer kit: an invalid order (InvalidOrder) is terminal and goes to the DLQ
at once with its reason; a downstream outage (DownstreamUnavailable) is transient and retried; the
verdicts of re-driven orders reach the re-driver first-hand.

Each order is fulfilled at most once: Powertools idempotency keyed on the order id (the business
key, not the MessageId, which changes on every re-drive) answers a repeated order with the first
confirmation instead of submitting it downstream again.

Its order rules (``ORDERS_DROP_ZERO_QUANTITY_LINES``, the fix of a known poison) and its injected
downstream failures (``DOWNSTREAM_OUTAGE_WINDOWS``, ``DOWNSTREAM_FAILURE_RATE``) are read on every
invocation: a configuration change reaches warm execution environments too, so the demo can start,
end and fix things on its in-process consumer (in Lambda an update starts new environments anyway).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from consumer.orders import (
    DownstreamUnavailable,
    InvalidOrder,
    Order,
    OrderRules,
    SimulatedDownstream,
    load_failure_injection,
    load_order_rules,
    parse_order,
)
from sqs_redriver.kit import ConsumerKit

# Longer than an order can spend in the queues (the DLQ keeps messages 14 days).
FULFILMENT_MEMORY_SECONDS = 15 * 86_400

logger = Logger()
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS)
kit = ConsumerKit.from_environment(terminal=[InvalidOrder], transient=[DownstreamUnavailable])


def load_idempotency_table(env: Mapping[str, str]) -> str:
    name = env.get("IDEMPOTENCY_TABLE_NAME", "").strip()
    if not name:
        raise ValueError("IDEMPOTENCY_TABLE_NAME is required and must not be empty")
    return name


downstream = SimulatedDownstream(load_failure_injection(os.environ))
IDEMPOTENCY_TABLE_NAME = load_idempotency_table(os.environ)


@functools.cache
def _fulfilment() -> tuple[Callable[..., str], IdempotencyConfig]:
    """The idempotent fulfilment, built on first use (no boto3 client at import)."""
    config = IdempotencyConfig(event_key_jmespath="order_id", expires_after_seconds=FULFILMENT_MEMORY_SECONDS)
    persistence = DynamoDBPersistenceLayer(
        table_name=IDEMPOTENCY_TABLE_NAME, boto3_client=boto3.client("dynamodb")
    )

    @idempotent_function(data_keyword_argument="order", config=config, persistence_store=persistence)  # type: ignore[untyped-decorator]
    def fulfil(order: Order) -> str:
        confirmation = downstream.submit(order)
        metrics.add_metric(name="OrdersFulfilled", unit=MetricUnit.Count, value=1)
        return confirmation

    return fulfil, config


def record_handler(record: SQSRecord, rules: OrderRules) -> str:
    """Process one order under ``rules``; raising marks just this record as failed."""
    order = parse_order(record.body, rules)
    fulfil, _ = _fulfilment()
    confirmation: str = fulfil(order=order)
    logger.info(
        "order processed",
        extra={"order_id": order.order_id, "total": str(order.total), "confirmation": confirmation},
    )
    return confirmation


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    _, config = _fulfilment()
    config.register_lambda_context(context)
    downstream.injection = load_failure_injection(os.environ)
    handle = functools.partial(record_handler, rules=load_order_rules(os.environ))
    return kit.process_partial_response(
        event=event, record_handler=handle, processor=processor, context=context
    )
