"""Example consumer: a Powertools batch processor over the source queue, reporting partial failures."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from consumer.orders import FailureInjection, SimulatedDownstream, parse_order, parse_outage_windows

logger = Logger()
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS)


def load_failure_injection(env: os._Environ[str] | dict[str, str]) -> FailureInjection:
    """Read DOWNSTREAM_FAILURE_RATE and DOWNSTREAM_OUTAGE_WINDOWS; raise ValueError naming the bad one."""
    raw_rate = env.get("DOWNSTREAM_FAILURE_RATE", "0") or "0"
    try:
        rate = float(raw_rate)
    except ValueError:
        raise ValueError(f"DOWNSTREAM_FAILURE_RATE must be a number in [0, 1], got {raw_rate!r}") from None
    if not 0 <= rate <= 1:
        raise ValueError(f"DOWNSTREAM_FAILURE_RATE must be a number in [0, 1], got {rate}")
    try:
        windows = parse_outage_windows(env.get("DOWNSTREAM_OUTAGE_WINDOWS", ""))
    except ValueError as exc:
        raise ValueError(
            f"DOWNSTREAM_OUTAGE_WINDOWS must be 'start-end,...' in epoch seconds: {exc}"
        ) from None
    return FailureInjection(failure_rate=rate, outage_windows=windows)


downstream = SimulatedDownstream(load_failure_injection(os.environ))


def record_handler(record: SQSRecord) -> str:
    """Process one order; raising marks just this record as failed."""
    order = parse_order(record.body)
    confirmation = downstream.submit(order)
    logger.info(
        "order processed",
        extra={"order_id": order.order_id, "total": str(order.total), "confirmation": confirmation},
    )
    metrics.add_metric(name="OrdersProcessed", unit=MetricUnit.Count, value=1)
    return confirmation


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
