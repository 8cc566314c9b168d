"""Consumers the simulated world (local_aws.simulation) can play behind the source queue, and the
orders they are fed.

A consumer is what the SQS event source mapping invokes: an SQS event in, a partial-batch response
(``batchItemFailures``) out; raising fails the whole invocation, as in Lambda. This module has the
two: the example consumer's order logic (``consumer.orders``) behind a Powertools
``BatchProcessor``, nothing else (``plain_order_consumer``); and the same logic with the consumer
kit (``kit_order_consumer``), configured from the deployed consumer's environment as in Lambda.

A ``ConsumerFactory`` builds a consumer from what the world hosts it with (``ConsumerHost``): the
simulated clock, the deployed consumer function's environment, and the AWS clients its calls go
through (the world counts them apart from the re-driver's).
"""

from __future__ import annotations

import json
import logging
import random
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from consumer.orders import (
    DownstreamUnavailable,
    FailureInjection,
    InvalidOrder,
    SimulatedDownstream,
    parse_order,
)
from sqs_redriver.kit import ConsumerKit
from sqs_redriver.kit.consumer import logger as kit_logger


class Consumer(Protocol):
    """What the simulated event source mapping invokes with each batch it receives."""

    def __call__(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        """Process an SQS event; return ``{"batchItemFailures": [{"itemIdentifier": ...}]}``."""
        ...


@runtime_checkable
class ReportsFulfilment(Protocol):
    """A consumer that tells which records of its last invocation it fulfilled: with the kit, a
    record it dead-lettered is handled (not in ``batchItemFailures``) but not fulfilled."""

    fulfilled: set[str]  # MessageIds fulfilled in the last invocation


@dataclass(frozen=True)
class ConsumerHost:
    """What the world hosts a consumer with, as Lambda hosts the deployed consumer function."""

    clock: Callable[[], float]  # simulated epoch seconds, read at call time
    env: Mapping[str, str]  # the deployed consumer function's environment variables
    sqs: Any  # the consumer's own clients: the world counts their calls
    dynamodb: Any


# Builds the consumer the world invokes, once, when the world is built.
ConsumerFactory = Callable[[ConsumerHost], Consumer]


class PlainOrderConsumer:
    """The example consumer's order logic in a plain Powertools BatchProcessor: parse the order
    (an invalid one raises InvalidOrder: poison), submit it downstream (raises
    DownstreamUnavailable during an outage). No idempotency layer: the downstream's ``submitted``
    counts every fulfilment, so a duplicate delivery after a success shows as a duplicate."""

    def __init__(self, downstream: SimulatedDownstream) -> None:
        self.downstream = downstream
        self.fulfilled: set[str] = set()
        self._processor = BatchProcessor(event_type=EventType.SQS)

    def __call__(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        self.fulfilled = set()
        # Powertools raises BatchProcessingError when every record failed: the whole invocation fails.
        return process_partial_response(
            event=dict(event), record_handler=self._record, processor=self._processor
        )

    def _record(self, record: SQSRecord) -> str:
        confirmation = self.downstream.submit(parse_order(record.body))
        self.fulfilled.add(record.message_id)
        return confirmation


class KitOrderConsumer(PlainOrderConsumer):
    """The same order logic with the consumer kit, as the example consumer uses it: an invalid
    order (InvalidOrder) is terminal: the kit sends it to the DLQ at once, its error in the mark;
    a downstream outage (DownstreamUnavailable) is transient: left to SQS, except on a canary, a
    trial message or the last attempt, which the kit dead-letters itself; re-driven messages'
    verdicts go to the state table after each batch. No idempotency layer, as the plain one
    (duplicates stay visible)."""

    def __init__(self, downstream: SimulatedDownstream, kit: ConsumerKit) -> None:
        super().__init__(downstream)
        self.kit = kit

    def __call__(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        self.fulfilled = set()
        return self.kit.process_partial_response(
            event=dict(event), record_handler=self._record, processor=self._processor
        )


PartialOutages = Sequence[tuple[float, float, str]]  # (start, end, the customers' domain refused)


def plain_order_consumer(
    outages: Sequence[tuple[float, float]] = (), partial_outages: PartialOutages = ()
) -> ConsumerFactory:
    """A PlainOrderConsumer whose downstream fails during ``outages`` (epoch seconds, simulated),
    and refuses the customers of one domain during each of ``partial_outages``."""

    def build(host: ConsumerHost) -> Consumer:
        return PlainOrderConsumer(_downstream(outages, host.clock, partial_outages))

    return build


def kit_order_consumer(
    outages: Sequence[tuple[float, float]] = (), partial_outages: PartialOutages = ()
) -> ConsumerFactory:
    """A KitOrderConsumer whose downstream fails during ``outages`` (and ``partial_outages``, for
    one domain's customers); its kit is configured from the deployed consumer's ``REDRIVER_*``
    variables and calls AWS through the host's clients."""

    def build(host: ConsumerHost) -> Consumer:
        kit = ConsumerKit.from_environment(
            terminal=[InvalidOrder],
            transient=[DownstreamUnavailable],
            env=host.env,
            sqs=host.sqs,
            dynamodb=host.dynamodb,
            clock=host.clock,
        )
        return KitOrderConsumer(_downstream(outages, host.clock, partial_outages), kit)

    return build


@contextmanager
def kit_logs_to_stderr(level: str = "WARNING") -> Iterator[None]:
    """The consumer kit's Powertools logger, while inside: ``level`` and up, on stderr (it logs
    every failure at INFO on stdout, where the bench prints its figures)."""
    handler = kit_logger.registered_handler
    previous_level = kit_logger.log_level
    previous_stream = handler.setStream(sys.stderr) if isinstance(handler, logging.StreamHandler) else None
    kit_logger.setLevel(level)
    try:
        yield
    finally:
        kit_logger.setLevel(previous_level)
        if previous_stream is not None and isinstance(handler, logging.StreamHandler):
            handler.setStream(previous_stream)


def _downstream(
    outages: Sequence[tuple[float, float]], clock: Callable[[], float], partial_outages: PartialOutages = ()
) -> SimulatedDownstream:
    # The clock is passed explicitly: SimulatedDownstream's default (time.time captured at import)
    # would not follow freezegun.
    injection = FailureInjection(outage_windows=tuple(outages), partial_outages=tuple(partial_outages))
    return SimulatedDownstream(injection, clock=clock, rng=random.Random(7))


def order_body(order_id: str, *, rng: random.Random, poison: bool = False, customer: str = "c-1") -> str:
    """A small order of ``customer``; a poison one has an item of quantity 0, which parse_order
    always refuses."""
    items: list[dict[str, Any]] = [
        {"sku": f"sku-{rng.randint(1, 50)}", "quantity": rng.randint(1, 3), "unit_price": "9.90"}
        for _ in range(rng.randint(1, 3))
    ]
    if poison:
        items = [{"sku": "sku-0", "quantity": 0, "unit_price": "1.00"}]
    return json.dumps({"order_id": order_id, "customer_id": customer, "currency": "EUR", "items": items})


def order_id_of(body: str) -> str:
    """The business key of an order body (the MessageId changes on every re-drive)."""
    try:
        payload = json.loads(body)
        return str(payload["order_id"])
    except (ValueError, KeyError, TypeError):
        return f"unparsable:{body[:40]}"
