"""Consumers the simulated world (local_aws.simulation) can play behind the source queue, and the
orders they are fed.

A consumer is what the SQS event source mapping invokes: an SQS event in, a partial-batch response
(``batchItemFailures``) out; raising fails the whole invocation, as in Lambda. This module has the
plain one: the example consumer's order logic (``consumer.orders``) behind a Powertools
``BatchProcessor``, nothing else. A consumer built with the consumer kit plugs in the same way, as
a second ``Consumer``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from consumer.orders import FailureInjection, SimulatedDownstream, parse_order


class Consumer(Protocol):
    """What the simulated event source mapping invokes with each batch it receives."""

    def __call__(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        """Process an SQS event; return ``{"batchItemFailures": [{"itemIdentifier": ...}]}``."""
        ...


# Builds a consumer on the world's simulated clock (seconds since the epoch, read at call time).
ConsumerFactory = Callable[[Callable[[], float]], Consumer]


class PlainOrderConsumer:
    """The example consumer's order logic in a plain Powertools BatchProcessor: parse the order
    (an invalid one raises InvalidOrder: poison), submit it downstream (raises
    DownstreamUnavailable during an outage). No idempotency layer: the downstream's ``submitted``
    counts every fulfilment, so a duplicate delivery after a success shows as a duplicate."""

    def __init__(self, downstream: SimulatedDownstream) -> None:
        self.downstream = downstream
        self._processor = BatchProcessor(event_type=EventType.SQS)

    def __call__(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        # Powertools raises BatchProcessingError when every record failed: the whole invocation fails.
        return process_partial_response(
            event=dict(event), record_handler=self._record, processor=self._processor
        )

    def _record(self, record: SQSRecord) -> str:
        return self.downstream.submit(parse_order(record.body))


def plain_order_consumer(outages: Sequence[tuple[float, float]] = ()) -> ConsumerFactory:
    """A PlainOrderConsumer whose downstream fails during ``outages`` (epoch seconds, simulated)."""

    def build(clock: Callable[[], float]) -> Consumer:
        # The clock is passed explicitly: SimulatedDownstream's default (time.time captured at
        # import) would not follow freezegun.
        injection = FailureInjection(outage_windows=tuple(outages))
        return PlainOrderConsumer(SimulatedDownstream(injection, clock=clock, rng=random.Random(7)))

    return build


def order_body(order_id: str, *, rng: random.Random, poison: bool = False) -> str:
    """A small order; a poison one has an item of quantity 0, which parse_order always refuses."""
    items: list[dict[str, Any]] = [
        {"sku": f"sku-{rng.randint(1, 50)}", "quantity": rng.randint(1, 3), "unit_price": "9.90"}
        for _ in range(rng.randint(1, 3))
    ]
    if poison:
        items = [{"sku": "sku-0", "quantity": 0, "unit_price": "1.00"}]
    return json.dumps({"order_id": order_id, "customer_id": "c-1", "currency": "EUR", "items": items})


def order_id_of(body: str) -> str:
    """The business key of an order body (the MessageId changes on every re-drive)."""
    try:
        payload = json.loads(body)
        return str(payload["order_id"])
    except (ValueError, KeyError, TypeError):
        return f"unparsable:{body[:40]}"
