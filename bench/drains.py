"""The same DLQ, filled the same way, drained with the published design or with this re-driver."""

from __future__ import annotations

import json
import random
import time

import boto3

from bench.baseline import PublishedRedriver
from bench.metering import Meter
from local_aws import REGION
from local_aws.clients import AtomicReceive
from local_aws.compose import local_redriver
from local_aws.queues import queue_counts
from local_aws.resources import Resources, create_resources, create_table
from sqs_redriver.runtime.settings import Settings

PUBLISHED_TABLE = "published-state"


def fill_dlq(messages: int) -> Resources:
    """The queues and both designs' tables, and ``messages`` small orders with one attribute in
    the DLQ."""
    resources = create_resources()
    create_table(resources.dynamodb, PUBLISHED_TABLE, "PK")
    rng = random.Random(7)
    bodies = [json.dumps({"order_id": f"o-{i:05d}", "amount": rng.randint(1, 500)}) for i in range(messages)]
    attributes = {"tenant": {"DataType": "String", "StringValue": "acme"}}
    for start in range(0, messages, 10):
        resources.sqs.send_message_batch(
            QueueUrl=resources.dlq_url,
            Entries=[
                {"Id": str(i), "MessageBody": body, "MessageAttributes": attributes}
                for i, body in enumerate(bodies[start : start + 10])
            ],
        )
    return resources


def drain_with_published(resources: Resources, meter: Meter) -> None:
    """Run the published handler again and again until the DLQ is empty."""
    redriver = PublishedRedriver(
        meter.attach(boto3.client("sqs", region_name=REGION)),
        meter.attach(boto3.client("dynamodb", region_name=REGION)),
        dlq_url=resources.dlq_url,
        source_url=resources.source_url,
        parking_lot_url=resources.parking_lot_url,
        table_name=PUBLISHED_TABLE,
        queue_name="orders",
        wait_seconds=0,
    )
    while queue_counts(resources.sqs, resources.dlq_url).visible:
        redriver.handler()


def drain_with_redriver(resources: Resources, meter: Meter, messages: int, rate: int = 500) -> None:
    """Run this re-driver (default settings but the rate limit, no long poll, one run for the whole
    DLQ, a 1-day state TTL, no slow start) until the DLQ is empty. Slow start is a deliberate wait
    at the start of a run, measured with the recovery scenarios (`--recovery`); here the
    steady-state cost and throughput are measured."""
    settings = Settings(
        dlq_url=resources.dlq_url,
        source_queue_url=resources.source_url,
        parking_lot_url=resources.parking_lot_url,
        table_name=resources.table_name,
        receive_wait_seconds=0,
        max_messages_per_run=messages,
        max_redrives_per_second=rate,
        state_ttl_days=1,
        slow_start_seconds=0,
    )
    redriver = local_redriver(
        settings,
        # Parallel batches share this client; SQS hands a message to one receive, moto needs help.
        sqs=AtomicReceive(meter.attach(boto3.client("sqs", region_name=REGION))),
        dynamodb=meter.attach(boto3.client("dynamodb", region_name=REGION)),
        clock=time.time,
        logger_name="bench",
    )
    while queue_counts(resources.sqs, resources.dlq_url).visible:
        redriver.run(lambda: 900_000)
