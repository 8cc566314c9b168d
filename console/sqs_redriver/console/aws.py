"""The operator's tool's reads of AWS: queue depths, the DLQ's oldest age and the queues' depth
over the last hours (CloudWatch), who is calling, and scans that read a queue without consuming it;
``aws_call``, which turns AWS's failures into AwsCallError (the clients: tool.Connection)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

from sqs_redriver.console.inventory import Inspected, Where, inspect, with_park_reasons
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.sqs import SqsQueue
from sqs_redriver.core.table import StateTable
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.protocol.sources import DeadLetterSource

# How long a scan hides each message it has read: long enough to read a large queue once, short
# enough that a scan killed without releasing them gives them back soon.
SCAN_HOLD_SECONDS = 300
# Receives in a row that bring only messages already read (their hold lapsed) end a scan.
STALE_RECEIVES = 3
# The fleet view reads every queue of an account: one that does not answer is reported after
# about half a minute, not after the minutes tool.TOOL_CONFIG would wait.
FLEET_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=10)
OLDEST_AGE_WINDOW_SECONDS = 900
# What a call to AWS may raise: a refusal, a failure to call, or an answer that is not AWS's (an
# endpoint that is not AWS, or a local one that does not serve the region).
AWS_FAILURES = (ClientError, BotoCoreError, ResponseParserError)


def aws_date(http_response: Any) -> float | None:
    """The time (epoch seconds) in a response's Date header, if it has a readable one."""
    headers = getattr(http_response, "headers", None) or {}
    try:
        return parsedate_to_datetime(headers["Date"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None


def caller(sts: Any) -> str:
    """Who is running the tool: the caller's ARN, else the local user name."""
    try:
        return str(sts.get_caller_identity()["Arn"])
    except AWS_FAILURES:
        return os.environ.get("USER", "unknown")


@dataclass(frozen=True)
class QueueDepth:
    """A queue's approximate message counts and its retention."""

    url: str
    visible: int
    in_flight: int
    delayed: int
    retention_seconds: int

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def total(self) -> int:
        return self.visible + self.in_flight + self.delayed

    def describe(self) -> str:
        """``3 message(s) (1 visible, 2 in flight, 0 delayed)``."""
        return (
            f"{self.total} message(s) ({self.visible} visible, {self.in_flight} in flight, "
            f"{self.delayed} delayed)"
        )


def queue_depth(sqs: Any, url: str) -> QueueDepth:
    attributes = aws_call(
        "GetQueueAttributes",
        sqs.get_queue_attributes,
        QueueUrl=url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
            "MessageRetentionPeriod",
        ],
    )["Attributes"]
    return QueueDepth(
        url=url,
        visible=int(attributes.get("ApproximateNumberOfMessages", 0)),
        in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
        retention_seconds=int(attributes.get("MessageRetentionPeriod", 0)),
    )


def oldest_age_seconds(cloudwatch: Any, queue_name: str, now: float) -> int | None:
    """The queue's ApproximateAgeOfOldestMessage as SQS last published it to CloudWatch (None when
    there is no recent datapoint: an empty or idle queue, or a local endpoint). Reading it consumes
    nothing, unlike receiving messages to look at their age."""
    response = aws_call(
        "GetMetricStatistics",
        cloudwatch.get_metric_statistics,
        Namespace="AWS/SQS",
        MetricName="ApproximateAgeOfOldestMessage",
        Dimensions=[{"Name": "QueueName", "Value": queue_name}],
        StartTime=datetime.fromtimestamp(now - OLDEST_AGE_WINDOW_SECONDS, UTC),
        EndTime=datetime.fromtimestamp(now + 60, UTC),  # the minute under way too
        Period=60,
        Statistics=["Maximum"],
    )
    points = sorted(response.get("Datapoints", []), key=lambda point: point["Timestamp"])
    return int(points[-1]["Maximum"]) if points else None


@dataclass(frozen=True)
class Coverage:
    """What a scan read, and what it could not: messages still visible or delayed when it ended (a
    FIFO group waits behind the messages the scan holds; a standard queue's count lags), and messages
    someone else holds (the re-driver, during a backoff or a run)."""

    read: int
    unread: int
    held_elsewhere: int

    @property
    def complete(self) -> bool:
        return not (self.unread or self.held_elsewhere)

    def describe(self) -> str:
        """One line for the operator; empty when the scan read everything."""
        parts = []
        if self.unread:
            parts.append(
                f"about {self.unread} more not read (visible or delayed when the scan ended: a FIFO "
                "group waits behind the messages read; run again after moving those)"
            )
        if self.held_elsewhere:
            parts.append(
                f"about {self.held_elsewhere} held by others (the re-driver during a backoff or a run)"
            )
        return f"read {self.read}; " + "; ".join(parts) if parts else ""


class QueueScan:
    """Reads each message of a queue once without consuming it.

    Every message read stays hidden (held) until ``release`` gives it back or the caller deletes
    it (``forget``), so a scan never sees a message twice. Use it as a context manager: leaving it,
    by an error or Ctrl-C too, gives back everything still held; a scan killed outright gives them
    back when their hold ends (``SCAN_HOLD_SECONDS``).
    """

    def __init__(
        self,
        queue: SqsQueue,
        sqs: Any,
        where: Where,
        *,
        hold_seconds: int = SCAN_HOLD_SECONDS,
        wait_seconds: int = 1,
        sources: Sequence[DeadLetterSource] = (),
        park_records: StateTable | None = None,
    ) -> None:
        """``sources``: a DLQ of another kind's; each message is read as its dead letter.
        ``park_records``: where each dead letter's parking reason is read (a batch per receive)."""
        self.queue = queue
        self.where = where
        self._sources = tuple(sources)
        self._park_records = park_records
        self._sqs = sqs
        self.hold_seconds = hold_seconds
        # A long poll asks every SQS server, so an empty answer means an empty queue.
        self._wait_seconds = wait_seconds
        self._held: dict[str, str] = {}  # message id -> receipt handle
        self._seen: set[str] = set()
        self.coverage: Coverage | None = None  # known once a pass of ``batches`` ended
        self.unreleased = 0  # held messages the last ``release`` could not give back

    def __enter__(self) -> QueueScan:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()

    def batches(self) -> Iterator[list[Inspected]]:
        """Batches of up to 10 messages not seen before, until a receive finds none (or only
        messages seen before, ``STALE_RECEIVES`` times in a row: their holds lapsed in a long scan).
        Then ``coverage`` tells what the scan could not read."""
        stale = 0
        while stale < STALE_RECEIVES:
            response = aws_call(
                "ReceiveMessage",
                self._sqs.receive_message,
                QueueUrl=self.queue.url,
                MaxNumberOfMessages=SQS_MAX_BATCH_SIZE,
                WaitTimeSeconds=self._wait_seconds,
                VisibilityTimeout=self.hold_seconds,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
            )
            raws = response.get("Messages", [])
            if not raws:
                break
            fresh = []
            for raw in raws:
                self._held[raw["MessageId"]] = raw["ReceiptHandle"]
                if raw["MessageId"] not in self._seen:  # seen before: its hold had lapsed
                    self._seen.add(raw["MessageId"])
                    fresh.append(inspect(raw, self.where, self._sources))
            stale = 0 if fresh else stale + 1
            if fresh:
                yield self._with_park_reasons(fresh)
        self.coverage = self._coverage()

    def _with_park_reasons(self, items: list[Inspected]) -> list[Inspected]:
        if self._park_records is None:
            return items
        dead_letters = [item.identity for item in items if item.dead_letter is not None]
        return with_park_reasons(items, self._park_records.load_park_reasons(dead_letters))

    def _coverage(self) -> Coverage:
        depth = queue_depth(self._sqs, self.queue.url)
        return Coverage(
            read=len(self._seen),
            unread=depth.visible + depth.delayed,
            held_elsewhere=max(0, depth.in_flight - len(self._held)),
        )

    def handle(self, message_id: str, received_with: str) -> str:
        """The latest receipt handle of a held message (a re-receive after a lapsed hold gives a
        new one, and a delete with an older one may do nothing)."""
        return self._held.get(message_id, received_with)

    def everything(self) -> list[Inspected]:
        """Every message of the queue (still held until ``release``)."""
        return [item for batch in self.batches() for item in batch]

    def forget(self, message_ids: Sequence[str]) -> None:
        """These were deleted: nothing to give back."""
        for message_id in message_ids:
            self._held.pop(message_id, None)

    def release(self) -> int:
        """Give back every held message now; return (and keep in ``unreleased``) how many could not
        be: they come back when their hold ends."""
        held, self._held = self._held, {}
        if held:
            try:
                result = self.queue.change_visibility({mid: (handle, 0) for mid, handle in held.items()})
                self.unreleased = len(result.failed)
            except AwsCallError:
                self.unreleased = len(held)
        return self.unreleased


def aws_call(operation: str, call: Any, **kwargs: Any) -> Mapping[str, Any]:
    """``call(**kwargs)``; a refusal or failure of AWS as AwsCallError naming ``operation``."""
    try:
        response: Mapping[str, Any] = call(**kwargs)
    except AWS_FAILURES as exc:
        raise AwsCallError(f"{operation} failed: {exc}") from exc
    return response


# The depth of a deployment's queues over the last hours, as SQS publishes it to CloudWatch
# (``ApproximateNumberOfMessagesVisible``), read with GetMetricStatistics. A local endpoint
# publishes no SQS metrics: the series are then empty.
DEPTH_WINDOW_SECONDS = 3 * 3600
DEPTH_PERIOD_SECONDS = 300
DEPTH_METRIC = "ApproximateNumberOfMessagesVisible"


@dataclass(frozen=True)
class DepthSeries:
    """One queue's visible messages over time: (epoch seconds, depth), oldest first."""

    label: str
    queue_name: str
    points: tuple[tuple[int, float], ...]


def depth_history(
    cloudwatch: Any,
    queues: Sequence[tuple[str, str]],
    now: int,
    *,
    window_seconds: int = DEPTH_WINDOW_SECONDS,
    period_seconds: int = DEPTH_PERIOD_SECONDS,
) -> list[DepthSeries]:
    """The depth of each ``(label, queue name)`` over the ``window_seconds`` before ``now``, the
    maximum of each period. GetMetricStatistics, one call a queue: what ``grant_operator`` already
    grants for ``status``."""
    return [
        DepthSeries(label, name, _points(cloudwatch, name, now, window_seconds, period_seconds))
        for label, name in queues
    ]


def _points(
    cloudwatch: Any, queue_name: str, now: int, window: int, period: int
) -> tuple[tuple[int, float], ...]:
    response = aws_call(
        "GetMetricStatistics",
        cloudwatch.get_metric_statistics,
        Namespace="AWS/SQS",
        MetricName=DEPTH_METRIC,
        Dimensions=[{"Name": "QueueName", "Value": queue_name}],
        StartTime=datetime.fromtimestamp(now - window, UTC),
        EndTime=datetime.fromtimestamp(now, UTC),
        Period=period,
        Statistics=["Maximum"],
    )
    found = []
    for point in response.get("Datapoints", []):
        try:  # what CloudWatch answers is read as untrusted: a point without a time or a value is left out
            found.append((int(point["Timestamp"].timestamp()), float(point["Maximum"])))
        except (KeyError, TypeError, AttributeError, ValueError, OverflowError):
            continue
    return tuple(sorted(found))
