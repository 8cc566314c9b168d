"""A world in simulated time: hours of outage and recovery in seconds of wall time, no sleeping.

The default stack, synthesized and deployed into in-process moto (``mock_aws``), under a clock
frozen with freezegun that only the world moves. moto reads the time through ``datetime``, which
freezegun replaces, so visibility timeouts, DelaySeconds and the RedrivePolicy's receive counts
follow the simulated clock. In the world:

- the **real re-driver**, composed with ``local_redriver`` from the deployed function's settings,
  on the simulated clock, invoked every schedule period (``rate(5 minutes)``: 300 s) with a time
  budget that counts down on the simulated clock. Its waits (``pause``, the rate limiter's sleep,
  the long poll of an empty receive) advance the world, so the consumer runs while it waits. A run
  that hands over a continuation is followed by it a second later, as Lambda retries an
  asynchronous invocation it throttled (the function's concurrency is 1). Its
  batches run in one worker (``parallel_batches=1``): a wait moves the clock at once, so with
  parallel workers one that waits (polling verdicts every second) moved the clock by minutes while
  another was still mid-batch in real time (seen: a probe batch starved for a whole run). In
  simulated time parallel workers add no throughput: the rate limiter and the clock decide;
- **the consumer**, played as the SQS event source mapping plays it: one poller receives up to the
  mapping's batch size with all attributes, invokes the consumer, deletes the messages not listed
  in ``batchItemFailures`` (none when the invocation raised); an invocation takes
  ``consumer_call_seconds`` of simulated time. It is built by a ``ConsumerFactory`` from the
  simulated clock, the deployed consumer function's environment, and clients of its own (a consumer
  kit's AWS calls are counted apart from the re-driver's).

The clock jumps from event to event: the next schedule tick, the next moment a source-queue
message becomes visible (its visibility timeout or DelaySeconds ends), or the poller's next poll
while messages are visible. When messages become visible is read from moto's in-process backend
(``Message.visible_at`` and ``delayed_until``, in ms): the only thing read behind moto's API.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from functools import cache
from typing import Any

import boto3
from freezegun import freeze_time
from moto import mock_aws

from local_aws import REGION
from local_aws.clients import AtomicQueueCalls, Counted
from local_aws.cloudformation import Deployment, Synthesized, deploy_synthesized, synthesize_app
from local_aws.compose import local_redriver
from local_aws.consumers import (
    Consumer,
    ConsumerFactory,
    ConsumerHost,
    ReportsFulfilment,
    kit_logs_to_stderr,
    order_id_of,
)
from local_aws.environment import environment
from local_aws.events import sqs_event
from local_aws.journal import Delivery, Journal, Parking, Run
from local_aws.published_metrics import DEFAULT_LAG_SECONDS, MetricsOptions, PublishedMetrics
from local_aws.server import moto_sqs_sped_up
from local_aws.simulated_time import (
    SIM_EPOCH,
    UNFROZEN,
    SimulatedClock,
    SimulatedLongPoll,
    moto_queue,
    next_visible_ms,
    schedule_seconds,
)
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.sqs_limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime.act.ratelimit import TokenBucket
from sqs_redriver.runtime.model.continuation import Resume
from sqs_redriver.runtime.settings import Settings, load_settings

CONTINUATION_START_MS = 1000


@cache
def default_stack() -> Synthesized:
    """The default stack (cdk.json's context), synthesized once per process."""
    return synthesize_app({})


class World:
    """See the module's docstring. Built by ``open_world``."""

    def __init__(
        self,
        deployment: Deployment,
        clock: SimulatedClock,
        consumer_factory: ConsumerFactory,
        *,
        consumer_call_seconds: float,
        key: Callable[[str], str],
        seed: int,
        adjust_settings: Callable[[Settings], Settings] | None = None,
        metrics: MetricsOptions | None = None,
    ) -> None:
        self.deployment = deployment
        self.clock = clock
        # What CloudWatch says of the consumer, published as AWS would (or not at all).
        self.metrics = PublishedMetrics(
            boto3.client("cloudwatch", region_name=REGION),
            clock,
            deployment.consumer.name,
            metrics or MetricsOptions(),
        )
        self.journal = Journal()
        settings = load_settings(deployment.redriver.environment)
        settings = adjust_settings(settings) if adjust_settings else settings
        self.settings: Settings = replace(settings, parallel_batches=1)  # see the module's docstring
        self.schedule_seconds = schedule_seconds(deployment.schedule_expression)
        self._call_ms = round(consumer_call_seconds * 1000)
        self._key = key
        self._lock = threading.Lock()  # one thread moves the world at a time
        # One client for every queue call, the re-driver's and the consumer's: moto's receive is
        # not atomic across threads (SQS's is), and parallel batches run in threads.
        queue_calls = self.metrics.queue_client(AtomicQueueCalls(boto3.client("sqs", region_name=REGION)))
        self.sqs: Any = queue_calls
        self.dynamodb: Any = boto3.client("dynamodb", region_name=REGION)
        self.redriver_sqs = Counted(SimulatedLongPoll(queue_calls, self.pause))
        self.redriver_dynamodb = Counted(self.dynamodb)
        self.redriver_cloudwatch = Counted(boto3.client("cloudwatch", region_name=REGION))
        self.consumer_sqs = Counted(queue_calls)
        self.consumer_dynamodb = Counted(self.dynamodb)
        self.consumer: Consumer = consumer_factory(
            ConsumerHost(
                clock=clock,
                env=dict(deployment.consumer.environment),
                sqs=self.consumer_sqs,
                dynamodb=self.consumer_dynamodb,
            )
        )
        quiet = logging.getLogger("redriver-simulation")
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        self.redriver = local_redriver(
            self.settings,
            sqs=self.redriver_sqs,
            dynamodb=self.redriver_dynamodb,
            s3=boto3.client("s3", region_name=REGION),
            cloudwatch=self.redriver_cloudwatch,
            clock=clock,
            pause=self.pause,
            seed=seed,
            logger_name=quiet.name,
            # The default limiter reads the real monotonic clock and sleeps for real.
            limiter=TokenBucket(
                self.settings.max_redrives_per_second,
                burst=SQS_MAX_BATCH_SIZE,
                clock=clock,
                sleep=self.pause,
            ),
        )
        self.next_run_ms = clock.now_ms + self.schedule_seconds * 1000
        # A run's continuation: Lambda queues the asynchronous invocation, is throttled while the
        # run holds the function's one concurrency, and retries it a second later.
        self._continuation: Resume | None = None
        self._continuation_at_ms = 0
        self._poller_ready_ms = clock.now_ms
        self._empty_poll_at_ms: int | None = None

    # -- what the harness offers -------------------------------------------------------------------

    @property
    def requests(self) -> dict[str, int]:
        """The re-driver's AWS calls so far, by operation."""
        return dict(self.redriver_sqs.calls + self.redriver_dynamodb.calls + self.redriver_cloudwatch.calls)

    @property
    def consumer_requests(self) -> dict[str, int]:
        """The consumer's own AWS calls so far (a consumer kit's), by operation; the event source
        mapping's receives and deletes are not the consumer's."""
        return dict(self.consumer_sqs.calls + self.consumer_dynamodb.calls)

    def key_of(self, body: str) -> str:
        """The key the journal files a message body under (the order id)."""
        return self._key(body)

    def send(self, bodies: list[str], *, delay_seconds: int = 0) -> None:
        """Producers send to the source queue now (outside the re-driver's request count)."""
        for start in range(0, len(bodies), SQS_MAX_BATCH_SIZE):
            chunk = bodies[start : start + SQS_MAX_BATCH_SIZE]
            self.sqs.send_message_batch(
                QueueUrl=self.deployment.source_url,
                Entries=[
                    {"Id": str(i), "MessageBody": body, "DelaySeconds": delay_seconds}
                    for i, body in enumerate(chunk)
                ],
            )
            for body in chunk:
                self.journal.sent.setdefault(self._key(body), self.clock.elapsed)

    def run(self, *, until: Callable[[], bool] = lambda: False, for_seconds: float) -> None:
        """Move the world for ``for_seconds`` of simulated time, or until ``until()`` holds (checked
        after each consumer invocation and each re-driver run)."""
        end_ms = self.clock.now_ms + round(for_seconds * 1000)
        while not until() and self.clock.now_ms < end_ms:
            pending = self._continuation
            start_ms = self._continuation_at_ms if pending else self.next_run_ms
            with self._lock:
                self._advance(min(start_ms, end_ms), until)
            if self.clock.now_ms < start_ms:
                continue
            if pending is not None:
                self._continuation = None
                self._redriver_run(pending)
            else:
                self._redriver_run(None)
                # Ticks missed while runs held the function's one concurrency were throttled and
                # retried: they come down to one run, not a burst of catch-up runs.
                period_ms = self.schedule_seconds * 1000
                while self.next_run_ms <= self.clock.now_ms:
                    self.next_run_ms += period_ms

    def pause(self, seconds: float) -> None:
        """The re-driver waits: the world moves on (the consumer runs, no schedule tick fires: a
        run is in progress and the function's concurrency is 1). Waits that overlap in parallel
        workers end together."""
        target = self.clock.now_ms + math.ceil(seconds * 1000)
        with self._lock:
            self._advance(target, lambda: False)

    def keys_in_queues(self) -> dict[str, list[str]]:
        """Per queue (source, dlq, parking lot), the keys of the messages it holds, read from moto's
        backend without receiving them."""
        return {
            role: [self._key(m.body) for m in moto_queue(url)._messages]
            for role, url in (
                ("source", self.deployment.source_url),
                ("dlq", self.deployment.dlq_url),
                ("parking_lot", self.deployment.parking_lot_url),
            )
        }

    # -- the clock's moves ---------------------------------------------------------------------

    def _advance(self, target_ms: int, until: Callable[[], bool]) -> None:
        """Play the consumer up to ``target_ms`` (event to event), then set the clock there; or stop
        where ``until()`` starts to hold."""
        while not until():
            due = self._next_poll_ms()
            if due is None or due > target_ms:
                self.clock.move_to(max(target_ms, self.clock.now_ms))
                return
            self.clock.move_to(max(due, self.clock.now_ms))
            self._poll()

    def _next_poll_ms(self) -> int | None:
        now = self.clock.now_ms
        # After an empty poll, only a later change can give the poller something.
        not_before = now + 1 if self._empty_poll_at_ms == now else now
        visible = next_visible_ms(self.deployment.source_url, not_before=not_before)
        return None if visible is None else max(visible, self._poller_ready_ms)

    def _poll(self) -> None:
        """One poll of the event source mapping, and the invocation of the consumer."""
        deployment = self.deployment
        messages = self.sqs.receive_message(
            QueueUrl=deployment.source_url,
            MaxNumberOfMessages=min(deployment.consumer_batch_size, SQS_MAX_BATCH_SIZE),
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        now = self.clock.now_ms
        if not messages:
            self._empty_poll_at_ms = now
            return
        raised = False
        try:
            response = self.consumer(sqs_event(messages, deployment.source_queue_arn))
            failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        except Exception:  # noqa: BLE001 - to Lambda, any error fails the whole invocation
            failed = {m["MessageId"] for m in messages}
            raised = True
        self.metrics.invoked(error=raised)
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self.sqs.delete_message_batch(
                QueueUrl=deployment.source_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
        at = self.clock.elapsed
        # Handled is not fulfilled: the consumer kit handles a record it dead-letters itself.
        fulfilled = self.consumer.fulfilled if isinstance(self.consumer, ReportsFulfilment) else None
        for m in messages:
            redrives = int(_mark(m).get("n", 0))
            ok = m["MessageId"] not in failed and (fulfilled is None or m["MessageId"] in fulfilled)
            self.journal.deliveries.append(Delivery(at, self._key(m["Body"]), m["MessageId"], redrives, ok))
        self._poller_ready_ms = now + self._call_ms

    def _redriver_run(self, resume: Resume | None) -> None:
        """One invocation of the re-driver: a schedule tick's (``resume`` None) or a continuation."""
        started = self.clock.now_ms
        deadline_ms = started + self.deployment.redriver.timeout_seconds * 1000

        def remaining_ms() -> int:  # the Lambda context's, on the simulated clock
            return max(0, deadline_ms - self.clock.now_ms)

        report = self.redriver.run(remaining_ms, resume)
        if report.continue_with is not None:
            self._continuation = report.continue_with
            self._continuation_at_ms = self.clock.now_ms + CONTINUATION_START_MS
        self.journal.runs.append(
            Run(
                at=(started - self.clock.start_ms) / 1000,
                seconds=(self.clock.now_ms - started) / 1000,
                mode=report.mode.value,
                received=report.received,
                redriven=report.redriven,
                parked=report.parked,
                returned=report.returned,
                errors=report.errors,
                stopped_because=report.stopped_because.value,
                breaker_state=self._breaker_state(),
            )
        )
        self._collect_parked()

    def _breaker_state(self) -> str:
        item = self.dynamodb.get_item(
            TableName=self.settings.table_name,
            Key={"pk": {"S": self.settings.breaker_key}},
            ConsistentRead=True,
        ).get("Item")
        return str(item["state"]["S"]) if item else "CLOSED"

    def _collect_parked(self) -> None:
        """Take what the run parked out of the parking lot, as an operator would, into the journal."""
        while True:
            messages = self.sqs.receive_message(
                QueueUrl=self.deployment.parking_lot_url,
                MaxNumberOfMessages=SQS_MAX_BATCH_SIZE,
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                return
            for m in messages:
                mark = _mark(m)
                parked = mark.get("parked", {})
                redrives = int(parked.get("redrive_count", mark.get("n", 0)))
                self.journal.parkings.append(
                    Parking(
                        self.clock.elapsed,
                        self._key(m["Body"]),
                        redrives,
                        str(parked.get("why", "")),
                        error=mark.get("err"),
                    )
                )
            self.sqs.delete_message_batch(
                QueueUrl=self.deployment.parking_lot_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )


@contextmanager
def open_world(
    consumer: ConsumerFactory,
    *,
    app: Synthesized | None = None,
    consumer_call_seconds: float = 1.0,
    key: Callable[[str], str] = order_id_of,
    seed: int = 7,
    adjust_settings: Callable[[Settings], Settings] | None = None,
    publish_metrics: bool = True,
    metrics_lag_seconds: float = DEFAULT_LAG_SECONDS,
    metrics_lag_jitter_seconds: float = 0,
) -> Iterator[World]:
    """A World at simulated time SIM_EPOCH: the default stack (``app``, synthesized once per process
    unless given) deployed into a fresh in-process moto, with ``consumer`` behind the source queue.
    ``adjust_settings`` changes the re-driver's settings loaded from the deployed function (e.g.
    ``without_consumer_verdicts``). The world publishes its queues' AWS/SQS and its consumer's
    AWS/Lambda metrics into moto's CloudWatch (local_aws.published_metrics), each minute
    ``metrics_lag_seconds`` after its end, plus a jitter in ``[0, metrics_lag_jitter_seconds)`` per
    minute drawn from ``seed``; ``publish_metrics=False``: CloudWatch stays silent. The moto speed-up
    of local_aws.server is on inside (queues of hundreds stay fast)."""
    app = app or default_stack()  # before freezing: synthesis runs node
    with (
        environment({"AWS_DEFAULT_REGION": REGION}, unset=["AWS_ENDPOINT_URL", "AWS_PROFILE"]),
        mock_aws(),
        freeze_time(datetime.fromtimestamp(SIM_EPOCH, UTC), tick=False, ignore=UNFROZEN) as freezer,
        moto_sqs_sped_up(),
        kit_logs_to_stderr(),
    ):
        deployment = deploy_synthesized(app)
        # moto would invoke the consumer itself (in Docker) on every send: the world plays the mapping.
        boto3.client("lambda", region_name=REGION).update_event_source_mapping(
            UUID=deployment.consumer_mapping_id, Enabled=False
        )
        clock = SimulatedClock(freezer, SIM_EPOCH * 1000)
        yield World(
            deployment,
            clock,
            consumer,
            consumer_call_seconds=consumer_call_seconds,
            key=key,
            seed=seed,
            adjust_settings=adjust_settings,
            metrics=MetricsOptions(
                publish=publish_metrics,
                lag_seconds=metrics_lag_seconds,
                lag_jitter_seconds=metrics_lag_jitter_seconds,
                seed=seed,
            ),
        )


def without_consumer_verdicts(settings: Settings) -> Settings:
    """The re-driver's settings for a consumer without the kit: no verdicts to wait for."""
    return replace(settings, consumer_verdicts=False)


def _mark(message: dict[str, Any]) -> dict[str, Any]:
    value = (message.get("MessageAttributes") or {}).get(MARK_ATTRIBUTE, {}).get("StringValue")
    mark: dict[str, Any] = json.loads(value) if value else {}
    return mark
