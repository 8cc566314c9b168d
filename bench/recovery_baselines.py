"""The recovery scenario of local_aws.recovery.outage re-driven by the baselines, in the same
simulated world (the default stack deployed into moto, the plain consumer behind the source queue):

- ``published``: the published design's handler (bench.baseline), invoked on its own schedule,
  every 5 minutes (its stack's ``rate(5 minutes)``, which is also the default stack's), with its
  own state table (its key is ``PK``). It re-drives 5 messages a run, during the outage too;
- ``console``: "Start DLQ redrive" (SQS StartMessageMoveTask), which moto 5.2 does not implement:
  emulated. The operator clicks at the outage's end (the most favourable moment: nothing is sent
  into the outage). The task moves every message in the DLQ to the source queue at 500 messages a
  second (its maximum ``MaxNumberOfMessagesPerSecond``), with its attributes, no delay and no
  health check; one billable request (the moves are the task's, not the caller's).

Both return the RecoveryFigures of this re-driver's scenarios. Their messages carry no re-driver
mark: a delivery counts as re-driven when its MessageId is one the baseline sent.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from bench.baseline import PublishedRedriver
from local_aws.clients import ClientProxy
from local_aws.consumers import order_body, plain_order_consumer
from local_aws.journal import Journal, Run
from local_aws.recovery import KitUse, Settled
from local_aws.recovery_figures import MINUTE, RecoveryFigures, figures
from local_aws.simulated_time import SIM_EPOCH
from local_aws.simulation import World, open_world
from sqs_redriver.core.breaker import Mode, State
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime.report import RunReport, Tally

MOVE_TASK_MAX_RATE = 500  # SQS's limit on a message move task's MaxNumberOfMessagesPerSecond
PUBLISHED_TABLE = "published-redriver-state"


class PublishedJob:
    """The published handler deployed in ``world``, where this re-driver was: its table created,
    its calls counted as the re-driver's, the MessageIds it sends to the source queue recorded in
    ``sent``. The world invokes it on the schedule as it invokes the re-driver and journals the
    report (the breaker the journal reads back is this re-driver's, unused: always CLOSED)."""

    def __init__(self, world: World) -> None:
        self.sent: set[str] = set()
        world.dynamodb.create_table(
            TableName=PUBLISHED_TABLE,
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        deployment = world.deployment
        self.handler = PublishedRedriver(
            _SendRecorder(world.redriver_sqs, deployment.source_url, self.sent),
            world.redriver_dynamodb,
            dlq_url=deployment.dlq_url,
            source_url=deployment.source_url,
            parking_lot_url=deployment.parking_lot_url,
            table_name=PUBLISHED_TABLE,
            queue_name=deployment.source_url.rsplit("/", 1)[-1],
        )

    def run(self, remaining_ms: Callable[[], int], resume: object = None) -> RunReport:
        """One scheduled invocation (it never hands over a continuation)."""
        sent = len(self.sent)
        self.handler.handler()
        return RunReport(
            mode=Mode.REDRIVE, breaker_state=State.CLOSED, tally=Tally(redriven=len(self.sent) - sent)
        )


class Idle:
    """Nothing on the schedule (the console's redrive is clicked, not scheduled)."""

    def run(self, remaining_ms: Callable[[], int], resume: object = None) -> RunReport:
        return RunReport(mode=Mode.SKIP, breaker_state=State.CLOSED)


class _SendRecorder(ClientProxy):
    """An SQS client whose SendMessage calls to ``source_url`` add the new MessageId to ``sent``."""

    def __init__(self, client: Any, source_url: str, sent: set[str]) -> None:
        super().__init__(client)
        self._source_url, self._sent = source_url, sent

    def send_message(self, **kwargs: Any) -> Any:
        response = self._client.send_message(**kwargs)
        if kwargs["QueueUrl"] == self._source_url:
            self._sent.add(response["MessageId"])
        return response


def move_task(world: World, *, rate: int = MOVE_TASK_MAX_RATE) -> set[str]:
    """StartMessageMoveTask from the DLQ to the source queue, played in the world: batches of 10
    at ``rate`` messages a second of simulated time (the consumer runs meanwhile). Returns the
    MessageIds it sent."""
    deployment, sent = world.deployment, set()
    started = world.clock.now_ms
    while messages := world.sqs.receive_message(
        QueueUrl=deployment.dlq_url, MaxNumberOfMessages=SQS_MAX_BATCH_SIZE, MessageAttributeNames=["All"]
    ).get("Messages", []):
        response = world.sqs.send_message_batch(
            QueueUrl=deployment.source_url,
            Entries=[
                {"Id": str(i), "MessageBody": m["Body"]}
                | ({"MessageAttributes": m["MessageAttributes"]} if m.get("MessageAttributes") else {})
                for i, m in enumerate(messages)
            ],
        )
        sent |= {entry["MessageId"] for entry in response.get("Successful", [])}
        world.sqs.delete_message_batch(
            QueueUrl=deployment.dlq_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )
        world.sleep(len(messages) / rate)
    world.journal.runs.append(
        Run(
            at=(started - world.clock.start_ms) / 1000,
            seconds=(world.clock.now_ms - started) / 1000,
            mode="move task",
            received=len(sent),
            redriven=len(sent),
            parked=0,
            returned=0,
            errors=0,
            stopped_because="DLQ empty",
            breaker_state="CLOSED",
        )
    )
    return sent


def published_outage(n_messages: int, outage_minutes: float, **kwargs: Any) -> RecoveryFigures:
    """``n_messages`` orders into an outage (as local_aws.recovery.outage), the published design
    re-driving them."""
    return _baseline("published", n_messages, outage_minutes, **kwargs)


def console_outage(n_messages: int, outage_minutes: float, **kwargs: Any) -> RecoveryFigures:
    """``n_messages`` orders into an outage, "Start DLQ redrive" clicked at its end."""
    return _baseline("console", n_messages, outage_minutes, **kwargs)


def _baseline(
    design: str, n_messages: int, outage_minutes: float, *, cap_hours: float = 8, seed: int = 7
) -> RecoveryFigures:
    recovery = outage_minutes * MINUTE
    windows = [(SIM_EPOCH, SIM_EPOCH + recovery)]
    # The same orders as local_aws.recovery.outage's
    good = [order_body(f"o-{i:05d}", rng=random.Random(seed + i)) for i in range(n_messages)]
    started = time.perf_counter()  # outside the world: freezegun stops perf_counter too
    with open_world(plain_order_consumer(windows)) as world:
        world.send(good)
        good_keys = {world.key_of(b) for b in good}
        settled = Settled.of(world, good_keys)
        if design == "published":
            job = PublishedJob(world)
            _on_the_schedule(world, job)
            world.run(until=settled.check, for_seconds=cap_hours * 3600)
            sent, requests = job.sent, world.requests
        else:
            _on_the_schedule(world, Idle())
            world.run(for_seconds=recovery)
            sent = move_task(world)
            requests = {"start_message_move_task": 1}
            world.run(until=settled.check, for_seconds=cap_hours * 3600 - recovery)
        left = {key for keys in world.keys_in_queues().values() for key in keys}
        journal, simulated = world.journal, world.clock.elapsed
    return figures(
        f"{design} {n_messages} msgs / {outage_minutes:g} min",
        _marked(journal, sent),
        kit=KitUse.OFF,
        good_keys=good_keys,
        poison_keys=set(),
        outage_minutes=outage_minutes,
        simulated=simulated,
        wall=time.perf_counter() - started,
        settled_at=settled.at,
        left_in_queues=left,
        requests=requests,
        kit_requests={},
    )


def _on_the_schedule(world: World, job: PublishedJob | Idle) -> None:
    """``job`` instead of this re-driver: the world calls ``redriver.run`` and journals the report."""
    world.redriver = cast(Any, job)


def _marked(journal: Journal, sent: set[str]) -> Journal:
    """The journal with each delivery of a message the baseline sent counted as a re-drive."""
    deliveries = [replace(d, redrives=1) if d.message_id in sent else d for d in journal.deliveries]
    return replace(journal, deliveries=deliveries)
