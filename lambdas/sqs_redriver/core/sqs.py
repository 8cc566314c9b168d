"""An SQS queue through the batch APIs (``SqsQueue``), the message sent (``Outgoing``) and what a
batch send or delete returns (``BatchResult``): every AWS error turned into ``AwsCallError`` or a
per-entry failure."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.protocol.envelope import (
    MARK_ATTRIBUTE,
    DlqMessage,
    attribute_size,
    from_sqs,
    has_room_for_mark,
    message_size,
    string_attribute,
)
from sqs_redriver.protocol.limits import MAX_MARK_BYTES, SQS_MAX_BATCH_SIZE, SQS_MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from mypy_boto3_sqs import SQSClient

    from sqs_redriver.core.message import Tracked
    from sqs_redriver.protocol.sources import DeadLetterSource


# SQS's error codes for a queue that does not exist (JSON and query protocols).
QUEUE_MISSING_CODES = {"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue"}


# The per-entry code of a message too big to send (SQS's own code for it).
TOO_LONG = "MessageTooLong"


class SqsQueue:
    """One SQS queue (the ``Queue`` port), through the batch APIs."""

    def __init__(self, url: str, client: SQSClient, sources: Sequence[DeadLetterSource] = ()) -> None:
        """``sources``: a DLQ of another kind's sources; its messages are read as their dead letters."""
        self.url = url
        self._client = client
        self._sources = tuple(sources)
        self._retention: int | None = None

    def receive(self, max_messages: int, *, wait_seconds: int, visibility_timeout: int) -> list[DlqMessage]:
        """Receive up to 10 messages with all their message and system attributes."""
        response = self._call(
            "ReceiveMessage",
            self._client.receive_message,
            QueueUrl=self.url,
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=wait_seconds,
            VisibilityTimeout=visibility_timeout,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        )
        return [from_sqs(raw, self._sources) for raw in response.get("Messages", [])]

    def send(self, messages: Sequence[Outgoing]) -> BatchResult:
        """SendMessageBatch, split so each call holds at most 10 entries and 1 MiB in all.

        A call that fails as a whole marks only its own entries failed (``call_error`` says why),
        so entries that other calls did send can still be deleted from the DLQ. A message over
        the size limit by itself is not sent: SQS would fail its whole call, every time. It fails
        alone, for good (a sender fault, ``MessageTooLong``).
        """
        result = BatchResult()
        sendable = []
        for message in messages:
            if message.size > SQS_MAX_MESSAGE_BYTES:
                problem = f"{message.size} bytes, over the {SQS_MAX_MESSAGE_BYTES}-byte limit"
                result.failed[message.entry_id] = EntryFailure(TOO_LONG, problem, sender_fault=True)
            else:
                sendable.append(message)
        for chunk in chunks_by_size(sendable):
            entries = [_send_entry(message) for message in chunk]
            try:
                response = self._client.send_message_batch(QueueUrl=self.url, Entries=cast(Any, entries))
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code in QUEUE_MISSING_CODES:
                    # Not a failed call: no message can ever go there. Each entry fails for good.
                    for message in chunk:
                        result.failed[message.entry_id] = EntryFailure(code, str(exc), sender_fault=True)
                    continue
                self._fail_call(chunk, exc, result)
            except BotoCoreError as exc:
                self._fail_call(chunk, exc, result)
            else:
                _collect(response, result)
        return result

    def _fail_call(self, chunk: list[Outgoing], exc: Exception, result: BatchResult) -> None:
        result.call_error = f"SQS SendMessageBatch on {self.url} failed: {exc}"
        for message in chunk:
            result.failed[message.entry_id] = EntryFailure(CALL_FAILED, str(exc), sender_fault=False)

    def delete(self, receipt_handles: Mapping[str, str]) -> BatchResult:
        """DeleteMessageBatch; keys of ``receipt_handles`` name the entries in the result."""
        return self._per_ten(
            "DeleteMessageBatch",
            self._client.delete_message_batch,
            [{"Id": key, "ReceiptHandle": handle} for key, handle in receipt_handles.items()],
        )

    def change_visibility(self, hidden_for: Mapping[str, tuple[str, int]]) -> BatchResult:
        """ChangeMessageVisibilityBatch; ``hidden_for`` maps keys to (receipt handle, seconds).

        0 seconds gives a message back now; more hides it that long.
        """
        return self._per_ten(
            "ChangeMessageVisibilityBatch",
            self._client.change_message_visibility_batch,
            [
                {"Id": key, "ReceiptHandle": handle, "VisibilityTimeout": seconds}
                for key, (handle, seconds) in hidden_for.items()
            ],
        )

    def backlog(self) -> int:
        """Messages waiting to be received (ApproximateNumberOfMessages)."""
        return self._approximate_count("ApproximateNumberOfMessages")

    def undeleted(self) -> int:
        """Messages waiting and in flight, not the delayed (ApproximateNumberOfMessages and
        ApproximateNumberOfMessagesNotVisible): what the queue's consumer has not deleted yet."""
        return self._approximate_count("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")

    def _approximate_count(self, *names: str) -> int:
        """The sum of the queue's approximate counts ``names``, from one GetQueueAttributes."""
        response = self._call(
            "GetQueueAttributes",
            self._client.get_queue_attributes,
            QueueUrl=self.url,
            AttributeNames=list(names),
        )
        attributes = response.get("Attributes", {})
        return sum(int(attributes.get(name, 0)) for name in names)

    def canary_window_seconds(self) -> int:
        """How long a failing canary takes, at most, to be back in the DLQ: the redrive window, and
        never 0 (a queue's consumer takes its canary later: it is not judged in the run that sent it)."""
        return max(self.redrive_window().seconds, 1)

    def redrive_window(self) -> RedriveWindow:
        """Read the queue's visibility timeout and its RedrivePolicy's maxReceiveCount."""
        response = self._call(
            "GetQueueAttributes",
            self._client.get_queue_attributes,
            QueueUrl=self.url,
            AttributeNames=["VisibilityTimeout", "RedrivePolicy"],
        )
        attributes = response.get("Attributes", {})
        policy = json.loads(attributes.get("RedrivePolicy") or "{}")
        return RedriveWindow(
            visibility_timeout_seconds=int(attributes.get("VisibilityTimeout", 30)),
            max_receive_count=int(policy.get("maxReceiveCount", 1)),
        )

    def retention_seconds(self) -> int:
        """MessageRetentionPeriod, read once per adapter (an execution environment): it works for
        imported queues, and a changed retention is seen by the next cold start."""
        if self._retention is None:
            response = self._call(
                "GetQueueAttributes",
                self._client.get_queue_attributes,
                QueueUrl=self.url,
                AttributeNames=["MessageRetentionPeriod"],
            )
            self._retention = int(response["Attributes"]["MessageRetentionPeriod"])
        return self._retention

    def _per_ten(self, operation: str, call: Any, entries: list[dict[str, Any]]) -> BatchResult:
        result = BatchResult()
        for start in range(0, len(entries), SQS_MAX_BATCH_SIZE):
            response = self._call(
                operation, call, QueueUrl=self.url, Entries=entries[start : start + SQS_MAX_BATCH_SIZE]
            )
            _collect(response, result)
        return result

    def _call(self, operation: str, call: Any, **kwargs: Any) -> Any:
        try:
            return call(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise AwsCallError(f"SQS {operation} on {self.url} failed: {exc}") from exc


def _send_entry(message: Outgoing) -> dict[str, Any]:
    entry: dict[str, Any] = {"Id": message.entry_id, "MessageBody": message.body}
    if message.group_id is None:
        entry["DelaySeconds"] = message.delay_seconds  # FIFO queues refuse per-message delays
    else:
        entry["MessageGroupId"] = message.group_id
        entry["MessageDeduplicationId"] = message.deduplication_id
    if message.attributes:
        entry["MessageAttributes"] = {name: dict(value) for name, value in message.attributes.items()}
    if message.trace_header:
        entry["MessageSystemAttributes"] = {
            "AWSTraceHeader": {"DataType": "String", "StringValue": message.trace_header}
        }
    return entry


def chunks_by_size(messages: Sequence[Outgoing]) -> Iterator[list[Outgoing]]:
    """Consecutive calls' entries: at most 10 a call, and at most 1 MiB in all unless one
    message is that big alone (SendMessageBatch's limits)."""
    chunk: list[Outgoing] = []
    chunk_bytes = 0
    for message in messages:
        size = message.size
        if chunk and (len(chunk) == SQS_MAX_BATCH_SIZE or chunk_bytes + size > SQS_MAX_MESSAGE_BYTES):
            yield chunk
            chunk, chunk_bytes = [], 0
        chunk.append(message)
        chunk_bytes += size
    if chunk:
        yield chunk


def _collect(response: Mapping[str, Any], result: BatchResult) -> None:
    result.succeeded.extend(entry["Id"] for entry in response.get("Successful", []))
    for entry in response.get("Failed", []):
        result.failed[entry["Id"]] = EntryFailure(
            code=entry.get("Code", ""),
            message=entry.get("Message", ""),
            sender_fault=bool(entry.get("SenderFault")),
        )


@dataclass(frozen=True)
class Outgoing:
    """A message to send; ``entry_id`` is unique within one call and names the result."""

    entry_id: str
    body: str
    attributes: Mapping[str, Mapping[str, Any]]
    delay_seconds: int = 0
    trace_header: str | None = None
    # FIFO queues: the message's group, and a deduplication id (SQS drops a repeat for 5 minutes).
    group_id: str | None = None
    deduplication_id: str | None = None
    # A canary: a target that can answer with its verdict at once is asked to (core/delivery.py).
    probe: bool = False

    @property
    def size(self) -> int:
        return message_size(self.body, self.attributes)


@dataclass(frozen=True)
class EntryFailure:
    code: str
    message: str
    sender_fault: bool


@dataclass
class BatchResult:
    """Per-entry results of a batch call (or of several calls, merged)."""

    succeeded: list[str] = field(default_factory=list)
    failed: dict[str, EntryFailure] = field(default_factory=dict)
    # Set when a whole call failed; its entries are in ``failed``, other calls' results stand.
    call_error: str | None = None
    # Of succeeded entries: the request id the target's answer gave (a function's asynchronous
    # Invoke: Lambda writes it into the record of that invocation's failure).
    request_ids: dict[str, str] = field(default_factory=dict)

    def merge(self, other: BatchResult) -> None:
        self.succeeded.extend(other.succeeded)
        self.failed.update(other.failed)
        self.request_ids.update(other.request_ids)
        self.call_error = self.call_error or other.call_error


# The code of entries that failed because their whole batch call failed (a SendMessageBatch, or
# the DeleteMessageBatch of a transfer: core/transfer.py).
CALL_FAILED = "CallFailed"


@dataclass(frozen=True)
class RedriveWindow:
    """How long the source queue takes, at most, to send a failing message to its DLQ."""

    visibility_timeout_seconds: int
    max_receive_count: int

    @property
    def seconds(self) -> int:
        # maxReceiveCount failed receives, each holding the message for a visibility timeout,
        # plus one more timeout of slack for the receive that moves it to the DLQ.
        return self.visibility_timeout_seconds * (self.max_receive_count + 1)


# A DLQ message as it goes out again: body and attributes unchanged, the mark, the trace header.


def outgoing(
    entry_id: str, tracked: Tracked, mark_json: str, *, delay: int, deduplication_id: str, fifo: bool
) -> Outgoing:
    """On FIFO queues the message keeps its group, and gets a deduplication id that is new for
    each re-drive (a reused one is dropped for 5 minutes). For a marked message it is the same if
    this very re-drive is sent again after a crash, so SQS drops that duplicate; a message counted
    in the table has moved its count ahead, so its retry is a duplicate, never a loss."""
    return Outgoing(
        entry_id=entry_id,
        body=tracked.message.body,
        attributes=with_mark(tracked, mark_json),
        delay_seconds=delay,
        trace_header=tracked.message.system_attributes.get("AWSTraceHeader"),
        group_id=tracked.group if fifo else None,
        deduplication_id=deduplication_id if fifo else None,
    )


def with_mark(tracked: Tracked, mark_json: str) -> dict[str, Any]:
    """The message's own attributes, plus the mark when the message has room for it. A dead letter
    of another service never goes back with one (``delivery.delivered``), but its parked copy
    carries its parking reason in it as an SQS message's does, when there is room for it."""
    attributes: dict[str, Any] = dict(tracked.message.attributes)
    mark = string_attribute(mark_json)
    if tracked.carries_mark or (
        tracked.message.dead_letter is not None
        and has_room_for_mark(tracked.message.body, attributes)
        and attribute_size(MARK_ATTRIBUTE, mark) <= MAX_MARK_BYTES
    ):
        attributes[MARK_ATTRIBUTE] = mark
    return attributes
