"""The SQS event source mapping as the simulated world (local_aws.simulation) plays it.

One poller receives up to the mapping's batch size with all attributes, invokes the consumer, and
deletes the messages not listed in ``batchItemFailures`` (none when the invocation raised); an
invocation takes ``call_seconds`` of simulated time. When the next message of the source queue
becomes visible is read from moto's in-process backend (local_aws.simulated_time.next_visible_ms).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from local_aws.cloudformation import Deployment
from local_aws.consumers import Consumer, ReportsFulfilment
from local_aws.events import sqs_event
from local_aws.journal import Delivery, Journal
from local_aws.published_metrics import PublishedMetrics
from local_aws.queues import mark_data
from local_aws.simulated_time import SimulatedClock, next_visible_ms
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE


class SimulatedEventSource:
    """The mapping's one poller: when it can next poll, and one poll with its invocation."""

    def __init__(
        self,
        deployment: Deployment,
        clock: SimulatedClock,
        consumer: Consumer,
        *,
        call_seconds: float,
        metrics: PublishedMetrics,
        journal: Journal,
        key: Callable[[str], str],
    ) -> None:
        self._deployment = deployment
        self._clock = clock
        self._consumer = consumer
        self._call_ms = round(call_seconds * 1000)
        self._metrics = metrics
        self._journal = journal
        self._key = key
        self._ready_ms = clock.now_ms
        self._empty_poll_at_ms: int | None = None

    def next_poll_ms(self) -> int | None:
        """When a poll can next receive something (None: the source queue is empty)."""
        now = self._clock.now_ms
        # After an empty poll, only a later change can give the poller something.
        not_before = now + 1 if self._empty_poll_at_ms == now else now
        visible = next_visible_ms(self._deployment.source_url, not_before=not_before)
        return None if visible is None else max(visible, self._ready_ms)

    def poll(self, sqs: Any) -> None:
        """One poll through ``sqs`` (the world's queue client), and the consumer's invocation."""
        deployment = self._deployment
        messages = sqs.receive_message(
            QueueUrl=deployment.source_url,
            MaxNumberOfMessages=min(deployment.consumer_batch_size, SQS_MAX_BATCH_SIZE),
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        now = self._clock.now_ms
        if not messages:
            self._empty_poll_at_ms = now
            return
        failed = self._invoke(messages)
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=deployment.source_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
        self._record(messages, failed)
        self._ready_ms = now + self._call_ms

    def _invoke(self, messages: list[dict[str, Any]]) -> set[str]:
        """Invoke the consumer; the MessageIds it failed (all of them when it raised)."""
        raised = False
        try:
            response = self._consumer(sqs_event(messages, self._deployment.source_queue_arn))
            failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        except Exception:  # noqa: BLE001 - to Lambda, any error fails the whole invocation
            failed = {m["MessageId"] for m in messages}
            raised = True
        self._metrics.invoked(error=raised)
        return failed

    def _record(self, messages: list[dict[str, Any]], failed: set[str]) -> None:
        """Each delivery in the journal, fulfilled or not."""
        at = self._clock.elapsed
        # Handled is not fulfilled: the consumer kit handles a record it dead-letters itself.
        consumer = self._consumer
        fulfilled = consumer.fulfilled if isinstance(consumer, ReportsFulfilment) else None
        for m in messages:
            redrives = int(mark_data(m).get("n", 0))
            ok = m["MessageId"] not in failed and (fulfilled is None or m["MessageId"] in fulfilled)
            self._journal.deliveries.append(Delivery(at, self._key(m["Body"]), m["MessageId"], redrives, ok))
