"""A world in simulated time: hours of outage and recovery in seconds of wall time, no sleeping.

The default stack, synthesized and deployed into in-process moto (``mock_aws``), under a clock
frozen with freezegun that only the world moves. moto reads the time through ``datetime``, which
freezegun replaces, so visibility timeouts, DelaySeconds and the RedrivePolicy's receive counts
follow the simulated clock. In the world:

- the **real re-driver** (local_aws.simulated_redriver), composed from the deployed function's
  settings on the simulated clock, invoked every schedule period (``rate(5 minutes)``: 300 s) with a time
  budget that counts down on the simulated clock. Its waits (its ``sleep``, the rate limiter's,
  the long poll of an empty receive) advance the world, so the consumer runs while it waits. A run
  that hands over a continuation is followed by it a second later, as Lambda starts an
  asynchronous invocation; the world plays one run at a time. Its batches run in one thread
  (``parallel_batches=1``): a wait moves the clock at once, so with parallel batches one that
  waits (polling verdicts every second) moved the clock by minutes while another was still
  mid-batch in real time (seen: a trial batch starved for a whole run). In simulated time parallel
  batches add no throughput: the rate limiter and the clock decide;
- **the consumer**, played as the SQS event source mapping plays it
  (local_aws.simulated_event_source): one poller receives up to the
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
from local_aws.consumers import Consumer, ConsumerFactory, ConsumerHost, kit_logs_to_stderr, order_id_of
from local_aws.environment import environment
from local_aws.journal import Journal
from local_aws.published_metrics import DEFAULT_LAG_SECONDS, MetricsOptions, PublishedMetrics
from local_aws.resources import breaker_state
from local_aws.server import moto_sqs_sped_up
from local_aws.simulated_event_source import SimulatedEventSource
from local_aws.simulated_redriver import Invocations, collect_parked, run_record, simulated_redriver
from local_aws.simulated_time import (
    SIM_EPOCH,
    UNFROZEN,
    SimulatedClock,
    SimulatedLongPoll,
    moto_queue,
    schedule_seconds,
)
from sqs_redriver.core.table import Resume
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime.settings import Settings, load_settings


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
        cloudwatch = boto3.client("cloudwatch", region_name=REGION)
        self.metrics = PublishedMetrics(
            cloudwatch, clock, deployment.consumer.name, metrics or MetricsOptions()
        )
        self.journal = Journal()
        self.settings = _redriver_settings(deployment, adjust_settings)
        self._key = key
        self._lock = threading.Lock()  # one thread moves the world at a time
        # One client for every queue call, the re-driver's and the consumer's: moto's receive is
        # not atomic across threads (SQS's is), and parallel batches run in threads.
        queue_calls = self.metrics.queue_client(AtomicQueueCalls(boto3.client("sqs", region_name=REGION)))
        self.sqs: Any = queue_calls
        self.dynamodb: Any = boto3.client("dynamodb", region_name=REGION)
        self.redriver_sqs = Counted(SimulatedLongPoll(queue_calls, self.sleep))
        self.redriver_dynamodb = Counted(self.dynamodb)
        self.redriver_cloudwatch = Counted(boto3.client("cloudwatch", region_name=REGION))
        self.consumer_sqs = Counted(queue_calls)
        self.consumer_dynamodb = Counted(self.dynamodb)
        host = ConsumerHost(
            clock=clock,
            env=dict(deployment.consumer.environment),
            sqs=self.consumer_sqs,
            dynamodb=self.consumer_dynamodb,
        )
        self.consumer: Consumer = consumer_factory(host)
        self.redriver = simulated_redriver(
            self.settings,
            sqs=self.redriver_sqs,
            dynamodb=self.redriver_dynamodb,
            s3=boto3.client("s3", region_name=REGION),
            cloudwatch=self.redriver_cloudwatch,
            clock=clock,
            sleep=self.sleep,
            seed=seed,
        )
        self._event_source = SimulatedEventSource(
            deployment,
            clock,
            self.consumer,
            call_seconds=consumer_call_seconds,
            metrics=self.metrics,
            journal=self.journal,
            key=key,
        )
        self._invocations = Invocations(clock, schedule_seconds(deployment.schedule_expression))

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
            start_ms = self._invocations.next_ms()
            with self._lock:
                self._advance(min(start_ms, end_ms), until)
            if self.clock.now_ms >= start_ms:
                self._redriver_run(self._invocations.take())

    def sleep(self, seconds: float) -> None:
        """The re-driver waits: the world moves on (the consumer runs, no schedule tick fires: the
        world plays one run at a time). Waits that overlap in parallel batches end together."""
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
            due = self._event_source.next_poll_ms()
            if due is None or due > target_ms:
                self.clock.move_to(max(target_ms, self.clock.now_ms))
                return
            self.clock.move_to(max(due, self.clock.now_ms))
            self._event_source.poll(self.sqs)

    def _redriver_run(self, resume: Resume | None) -> None:
        """One invocation of the re-driver: a schedule tick's (``resume`` None) or a continuation."""
        started = self.clock.now_ms
        deadline_ms = started + self.deployment.redriver.timeout_seconds * 1000

        def remaining_ms() -> int:  # the Lambda context's, on the simulated clock
            return max(0, deadline_ms - self.clock.now_ms)

        report = self.redriver.run(remaining_ms, resume)
        self._invocations.returned(report, scheduled=resume is None)
        state = breaker_state(self.dynamodb, self.settings.table_name, self.settings.breaker_key)
        self.journal.runs.append(
            run_record(report, started_ms=started, clock=self.clock, breaker_state=state)
        )
        collect_parked(
            self.sqs, self.deployment.parking_lot_url, self.journal, key=self._key, at=self.clock.elapsed
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


def _redriver_settings(deployment: Deployment, adjust: Callable[[Settings], Settings] | None) -> Settings:
    """The deployed function's settings, adjusted; its batches in one thread (see the module's
    docstring)."""
    settings = load_settings(deployment.redriver.environment)
    settings = adjust(settings) if adjust else settings
    return replace(settings, parallel_batches=1)
