"""An SNS subscription's dead letters against LocalStack, where SNS itself dead-letters them: the
subscription has a redrive policy, its endpoint queue is gone (a client-side error, which SNS does
not retry), so SNS puts what it would have delivered into the subscription's DLQ. The re-driver
(``DEAD_LETTER_SOURCES`` naming the subscription; its state table on moto) delivers each to the
endpoint queue once the queue is back, and to that queue alone: the topic is never published to
again, so the topic's other subscribers get nothing twice.

What LocalStack's SNS writes into the DLQ (localstack-core 2026.3.0), beside what AWS documents and
tests/support/dead_letters.py builds: the same notification envelope (Type, MessageId, TopicArn,
Subject, Message, Timestamp, SignatureVersion, Signature, SigningCertURL, UnsubscribeURL,
MessageAttributes as {Type, Value}), written as compact one-line JSON where AWS indents it, its keys
in another order, and its URLs on LocalStack's host; with raw message delivery the message itself
and its attributes as SQS message attributes, as AWS writes them. Neither kind carries a word on the
failure, as in AWS. Waits are bounded polls on LocalStack's queues: SNS delivers asynchronously."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from local_aws.compose import local_redriver
from local_aws.queues import queue_counts
from local_aws.resources import Resources, create_state_table, queue_arn
from sqs_redriver.protocol.dead_letters import read_dead_letter
from sqs_redriver.protocol.settings import default
from sqs_redriver.protocol.sources import DeadLetterSource, SourceKind, TargetKind
from sqs_redriver.runtime.report import RunReport
from sqs_redriver.runtime.run import Redriver
from tests.support.aws import REMAINING, make_settings
from tests.support.localstack import Rig

pytestmark = pytest.mark.conformance

WAIT_SECONDS = 180  # a bound for a hang only, as in test_redrive_cycle.py
Message = dict[str, Any]


class Subscription:
    """A topic with two queue subscribers: ``endpoint``, whose subscription dead-letters into
    ``dlq`` (raw delivery or not), and ``bystander``, a healthy one; a parking lot and a state
    table for the re-driver."""

    def __init__(self, rig: Rig, *, raw: bool) -> None:
        self.rig = rig
        self.topic_arn: str = rig.sns.create_topic(Name=f"{rig.prefix}-orders")["TopicArn"]
        self.dlq_url = rig.queue("orders-emails-dlq")
        self.endpoint_name = f"{rig.prefix}-orders-emails"
        self.endpoint_url = rig.queue("orders-emails")
        self.endpoint_arn = queue_arn(rig.sqs, self.endpoint_url)
        self.bystander_url = rig.queue("orders-audit")
        self.raw = raw
        self.arn = self._subscribe(
            self.endpoint_arn,
            RedrivePolicy=json.dumps({"deadLetterTargetArn": queue_arn(rig.sqs, self.dlq_url)}),
            RawMessageDelivery=str(raw).lower(),
        )
        self._subscribe(queue_arn(rig.sqs, self.bystander_url))

    def _subscribe(self, queue: str, **attributes: str) -> str:
        arn: str = self.rig.sns.subscribe(
            TopicArn=self.topic_arn,
            Protocol="sqs",
            Endpoint=queue,
            Attributes=attributes,
            ReturnSubscriptionArn=True,
        )["SubscriptionArn"]
        return arn

    @property
    def source(self) -> DeadLetterSource:
        return DeadLetterSource(
            kind=SourceKind.SUBSCRIPTION,
            arn=self.arn,
            target_kind=TargetKind.QUEUE,
            target_arn=self.endpoint_arn,
            topic_arn=self.topic_arn,
            raw_delivery=self.raw,
        )

    def endpoint_gone(self) -> None:
        self.rig.sqs.delete_queue(QueueUrl=self.endpoint_url)

    def endpoint_back(self) -> None:
        """The endpoint queue made again under its name: the same ARN the subscription names."""
        self.endpoint_url = self.rig.sqs.create_queue(QueueName=self.endpoint_name)["QueueUrl"]

    def publish(self, message: str, **attributes: str) -> None:
        self.rig.sns.publish(
            TopicArn=self.topic_arn,
            Message=message,
            Subject="order shipped",
            MessageAttributes={n: {"DataType": "String", "StringValue": v} for n, v in attributes.items()},
        )

    def redriver(self, **overrides: Any) -> Redriver:
        """The real re-driver (composed as in Lambda) over the DLQ, the subscription its one source."""
        rig, table_name = self.rig, f"{self.rig.prefix}-state"
        create_state_table(rig.dynamodb, table_name)
        resources = Resources(
            sqs=rig.sqs,
            dynamodb=rig.dynamodb,
            source_url=self.endpoint_url,
            source_arn=self.endpoint_arn,
            dlq_url=self.dlq_url,
            parking_lot_url=rig.queue("orders-emails-parking-lot"),
            table_name=table_name,
            s3=rig.s3,
            archive_bucket=rig.archive_bucket(),
        )
        settings = make_settings(
            resources,
            dead_letter_sources=(self.source,),
            source_queue_url=self.source.address,
            parallel_batches=default("parallel_batches"),
            **overrides,
        )
        self.parking_lot_url = resources.parking_lot_url
        return local_redriver(
            settings, sqs=rig.sqs, dynamodb=rig.dynamodb, s3=rig.s3, delivery=lambda service, region: rig.sqs
        )


def arrived(rig: Rig, queue_url: str, count: int) -> list[Message]:
    """The ``count`` messages SNS or the re-driver delivers to a queue, taken from it (waiting
    for them up to WAIT_SECONDS), with all their attributes."""
    found: list[Message] = []
    deadline = time.monotonic() + WAIT_SECONDS
    while len(found) < count:
        assert time.monotonic() < deadline, f"{queue_url} holds {len(found)} of {count}: {found}"
        messages = rig.sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=1,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        for message in messages:
            rig.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        found.extend(messages)
    return found


def redrive_until_delivered(redriver: Redriver) -> list[RunReport]:
    """Scheduled runs, every half second, until one delivers something."""
    reports: list[RunReport] = []
    deadline = time.monotonic() + WAIT_SECONDS
    while not any(report.redriven for report in reports):
        assert time.monotonic() < deadline, f"nothing delivered after {reports}"
        reports.append(redriver.run(REMAINING))
        time.sleep(0.5)
    return reports


def dead_lettered(rig: Rig, subscription: Subscription, count: int) -> list[Message]:
    """The DLQ's messages once SNS has dead-lettered ``count``: looked at, then given back."""
    deadline = time.monotonic() + WAIT_SECONDS
    while queue_counts(rig.sqs, subscription.dlq_url).visible < count:
        assert time.monotonic() < deadline, "SNS dead-lettered nothing into the subscription's DLQ"
        time.sleep(0.2)
    messages: list[Message] = rig.sqs.receive_message(
        QueueUrl=subscription.dlq_url,
        MaxNumberOfMessages=10,
        VisibilityTimeout=0,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    )["Messages"]
    print(json.dumps(messages, indent=2))  # what LocalStack wrote (pytest -s shows it)
    return messages


def test_a_notification_sns_dead_lettered_goes_back_to_its_endpoint_alone(rig: Rig) -> None:
    # GIVEN two notifications SNS could not deliver to a subscription's endpoint queue (it is gone),
    # which the topic's other subscriber received
    subscription = Subscription(rig, raw=False)
    subscription.endpoint_gone()
    subscription.publish("order o-1 shipped", tenant="acme")
    subscription.publish("order o-2 shipped", tenant="acme")
    received_once = arrived(rig, subscription.bystander_url, 2)
    letters = dead_lettered(rig, subscription, 2)

    # WHEN the re-driver runs once the endpoint queue is back
    subscription.endpoint_back()
    report = subscription.redriver().run(REMAINING)

    # THEN SNS wrote its notification envelope, which the re-driver read as the subscription's,
    # and delivered as it came to the endpoint alone; nothing is left or parked
    for letter in letters:
        envelope = json.loads(letter["Body"])
        assert (envelope["Type"], envelope["TopicArn"]) == ("Notification", subscription.topic_arn)
        assert envelope["MessageAttributes"] == {"tenant": {"Type": "String", "Value": "acme"}}
        assert "MessageAttributes" not in letter  # nothing on the failure: SNS says none
        dead_letter = read_dead_letter(letter["Body"], {}, (subscription.source,))
        assert (dead_letter.source, dead_letter.payload) == (subscription.source, letter["Body"])
    assert (report.redriven, report.parked) == (2, 0)
    delivered = arrived(rig, subscription.endpoint_url, 2)
    assert sorted(m["Body"] for m in delivered) == sorted(m["Body"] for m in letters)
    assert sorted(json.loads(m["Body"])["Message"] for m in received_once) == [
        "order o-1 shipped",
        "order o-2 shipped",
    ]
    assert queue_counts(rig.sqs, subscription.bystander_url).total == 0  # the topic was not published to
    assert queue_counts(rig.sqs, subscription.dlq_url).total == 0
    assert queue_counts(rig.sqs, subscription.parking_lot_url).total == 0


def test_a_raw_message_sns_dead_lettered_goes_back_with_its_attributes(rig: Rig) -> None:
    # GIVEN a message SNS could not deliver raw to a subscription's endpoint queue (it is gone)
    subscription = Subscription(rig, raw=True)
    subscription.endpoint_gone()
    subscription.publish("order o-3 shipped", tenant="acme", channel="web")
    arrived(rig, subscription.bystander_url, 1)
    [letter] = dead_lettered(rig, subscription, 1)

    # WHEN the re-driver runs once the endpoint queue is back
    subscription.endpoint_back()
    report = subscription.redriver().run(REMAINING)

    # THEN SNS wrote the message itself with its attributes as SQS message attributes, and the
    # endpoint received both, as SNS would have delivered them
    assert letter["Body"] == "order o-3 shipped"
    assert {n: v["StringValue"] for n, v in letter["MessageAttributes"].items()} == {
        "tenant": "acme",
        "channel": "web",
    }
    assert (report.redriven, report.parked) == (1, 0)
    [delivered] = arrived(rig, subscription.endpoint_url, 1)
    assert delivered["Body"] == "order o-3 shipped"
    assert delivered["MessageAttributes"] == letter["MessageAttributes"]
    assert queue_counts(rig.sqs, subscription.bystander_url).total == 0


def test_a_notification_waits_in_the_dlq_while_its_endpoint_is_still_gone(rig: Rig) -> None:
    # GIVEN a notification SNS dead-lettered, its endpoint queue still gone; a re-driver whose
    # runs hide what they received for 1 s
    subscription = Subscription(rig, raw=False)
    subscription.endpoint_gone()
    subscription.publish("order o-4 shipped")
    [letter] = dead_lettered(rig, subscription, 1)
    redriver = subscription.redriver(dlq_visibility_timeout_seconds=1)

    # WHEN it runs before the endpoint is back, and then until it delivers
    early = redriver.run(REMAINING)
    left = queue_counts(rig.sqs, subscription.dlq_url).total
    subscription.endpoint_back()
    later = redrive_until_delivered(redriver)

    # THEN LocalStack's answer for a missing queue was the target's outage, not the message's
    # fault: the first run left it in the DLQ, unparked, and a later one delivered it
    assert (early.redriven, early.parked, early.errors, left) == (0, 0, 1, 1)
    assert sum(report.parked for report in later) == 0
    [delivered] = arrived(rig, subscription.endpoint_url, 1)
    assert delivered["Body"] == letter["Body"]
    assert queue_counts(rig.sqs, subscription.dlq_url).total == 0
    assert queue_counts(rig.sqs, subscription.parking_lot_url).total == 0
