"""A DLQ shared by two sources, orders (``aws``'s own) and payments, on moto, which does not name
a dead-lettered message's source: the DLQ's messages name it by their body's prefix."""

from __future__ import annotations

import json

from local_aws.resources import queue_arn
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.settings import Settings
from tests.support.aws import MAX_RECEIVE_COUNT, SOURCE_VISIBILITY_TIMEOUT, Aws, make_redriver, make_settings
from tests.support.factories import FakeClock, NamesTheSource

# A body's prefix (before ``:``) -> the name of the queue it came from.
SOURCES = {"orders": "orders", "payments": "payments"}


def create_payments(aws: Aws) -> str:
    """A second source queue whose RedrivePolicy points at ``aws``'s DLQ; its URL."""
    policy = {
        "deadLetterTargetArn": queue_arn(aws.sqs, aws.dlq_url),
        "maxReceiveCount": str(MAX_RECEIVE_COUNT),
    }
    attributes = {"VisibilityTimeout": str(SOURCE_VISIBILITY_TIMEOUT), "RedrivePolicy": json.dumps(policy)}
    return str(aws.sqs.create_queue(QueueName="payments", Attributes=attributes)["QueueUrl"])


def redriver_for(aws: Aws, payments: str, clock: FakeClock) -> Redriver:
    """The re-driver of both sources."""
    settings = make_settings(aws, other_source_queue_urls=(payments,), max_redrive_count=10)
    return make_redriver(aws, settings, clock, sqs=NamesTheSource(aws.sqs, SOURCES))


def near_retention_in_both_sources(aws: Aws, payments: str, clock: FakeClock) -> tuple[Settings, Redriver]:
    """A DLQ retention of 600 s and a margin of 120 s, a message of each source 500 s old, and the
    re-driver of both sources."""
    aws.sqs.set_queue_attributes(QueueUrl=aws.dlq_url, Attributes={"MessageRetentionPeriod": "600"})
    settings = make_settings(aws, other_source_queue_urls=(payments,), expiry_margin_seconds=120)
    redriver = make_redriver(aws, settings, clock, sqs=NamesTheSource(aws.sqs, SOURCES))
    for body in ("payments:old", "orders:old"):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)
    clock.advance(500)
    return settings, redriver
