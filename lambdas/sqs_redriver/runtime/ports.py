"""The ports the run logic talks through, and the values that cross them.

The logic depends on these Protocols, never on the SQS or DynamoDB adapters; tests can hand it
in-memory fakes. The state table has one port per record kind (``MessageStore``, ``PauseStore``,
...; the breaker's, ``BreakerStore``, is core/breaker.py's), so each part of a run depends on the
kinds it uses alone. Adapters turn every ClientError
into ``AwsCallError`` or a per-entry failure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from sqs_redriver.core.breaker import BreakerStore
from sqs_redriver.core.table import RUN_HISTORY_LENGTH
from sqs_redriver.protocol.envelope import DlqMessage

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from sqs_redriver.core.sqs import BatchResult, Outgoing, RedriveWindow
    from sqs_redriver.core.table import DrainRecord, FleetView, GroupMark, HeldGroup, MessageRecord, Pause
    from sqs_redriver.protocol.failure import VerdictCounts
    from sqs_redriver.protocol.mark import Mark
    from sqs_redriver.runtime.consumer_health import QueueActivity, WatchedQueue


class Queue(Protocol):
    """An SQS queue, through the batch APIs."""

    url: str

    def receive(self, max_messages: int, *, wait_seconds: int, visibility_timeout: int) -> list[DlqMessage]:
        """Receive up to 10 messages with all their message and system attributes."""
        ...

    def send(self, messages: Sequence[Outgoing]) -> BatchResult:
        """Send in batches; a failed call fails only its own entries (``call_error`` says why)."""
        ...

    def delete(self, receipt_handles: Mapping[str, str]) -> BatchResult:
        """Delete by receipt handle; the keys name the entries in the result."""
        ...

    def change_visibility(self, hidden_for: Mapping[str, tuple[str, int]]) -> BatchResult:
        """Hide messages (key -> (receipt handle, seconds)); 0 seconds gives them back now."""
        ...

    def backlog(self) -> int:
        """Messages waiting to be received."""
        ...

    def redrive_window(self) -> RedriveWindow:
        """The queue's visibility timeout and its RedrivePolicy's maxReceiveCount."""
        ...

    def retention_seconds(self) -> int:
        """The queue's MessageRetentionPeriod."""
        ...


class Target(Protocol):
    """Where a source's dead letters go back: its source queue (an ``SqsQueue``), or the one target
    of a source of another kind (core/delivery.py). ``url`` is the source's queue URL or address."""

    url: str

    def send(self, messages: Sequence[Outgoing]) -> BatchResult:
        """Deliver each message; a failed call fails only its own entries (``call_error`` says why)."""
        ...

    def backlog(self) -> int:
        """Messages waiting to be taken (0: the target has no backlog to read)."""
        ...

    def redrive_window(self) -> RedriveWindow:
        """How the source retries a delivery before it dead-letters it."""
        ...

    def canary_window_seconds(self) -> int:
        """When a canary's absence from the DLQ is its verdict (0: its delivery answered it)."""
        ...


class PauseStore(Protocol):
    """The operator's pause (``PAUSE#<DLQ URL>``): runs honour it, only the operator's tool writes it."""

    def load_pause(self, key: str) -> Pause | None:
        """The pause an operator recorded, if any."""
        ...


class ContinuationStore(Protocol):
    """The one continuation slot of a re-driver's chain (``CONTINUATION#<DLQ URL>``): offered, held
    by the run it started, handed on or released."""

    def offer_continuation(
        self, key: str, token: str, *, stale_after: int, holder: str | None = None
    ) -> bool:
        """Offer the slot to ``token``; False while another run's continuation is pending or runs."""
        ...

    def take_continuation(self, key: str, token: str, *, hold_seconds: int) -> bool:
        """Hold the slot offered to ``token`` while its run runs; False when it is not ``token``'s."""
        ...

    def release_continuation(self, key: str, token: str) -> None:
        """Free the slot if ``token`` still holds it."""
        ...


class DrainStore(Protocol):
    """A large drain's shared record (``DRAIN#<DLQ URL>``) and its workers' leases
    (``WORKER#<DLQ URL>#<n>``): runtime/workers.py."""

    def load_drain(self, key: str) -> DrainRecord | None: ...

    def save_drain(self, key: str, record: DrainRecord, *, expected_version: int | None) -> bool: ...

    def load_fleet_view(
        self, breaker_key: str, pause_key: str, drain_key: str, verdict_key: str | None = None
    ) -> FleetView: ...

    def offer_worker(self, key: str, token: str, *, expires_at: int) -> bool: ...

    def hold_worker(self, key: str, token: str, *, expires_at: int, successor: str | None = None) -> bool: ...

    def release_worker(self, key: str, token: str) -> None: ...


class SweepStore(Protocol):
    """When a re-driver's next retention sweep is due (``SWEEP#<DLQ URL>``)."""

    def load_sweep_due(self, key: str) -> int:
        """When the next retention sweep is due (0 when none was recorded)."""
        ...

    def save_sweep_due(self, key: str, due_at: int) -> None:
        """Record when the next retention sweep is due."""
        ...


class RunHistoryStore(Protocol):
    """A re-driver's run history (``RUNS#<DLQ URL>``), which the operator's tool reads."""

    def record_run(self, key: str, summary: Mapping[str, object], keep: int = RUN_HISTORY_LENGTH) -> None:
        """Put a run's summary first in the run history ``key``, keeping the ``keep`` newest."""
        ...


class VerdictStore(Protocol):
    """The consumer kit's verdict counts of a run's re-drives or a probe (``VERDICTS#<verdict key>``)."""

    def load_verdicts(self, verdict_key: str) -> VerdictCounts:
        """The consumer kit's verdicts reported under ``verdict_key``."""
        ...


class MessageStore(Protocol):
    """Message records (``MSG#<identity>``, a dead letter's ``MSG#<identity>#<trip>``), with the
    consumer kit's failure records (``FAILURE#<DLQ URL>#<identity>``) of messages that had no room
    for a mark."""

    def load_marks(self, subjects: Iterable[str]) -> dict[str, Mark]:
        """Marks recorded under these subjects, by subject (absent or expired ones omitted), with
        the failure the consumer kit recorded for messages that had no room for it."""
        ...

    def save_records(self, records: Sequence[MessageRecord]) -> None:
        """Write message records (none: no call)."""
        ...


class GroupMarkStore(Protocol):
    """An operator's retry and park records of failure groups (``RETRY#``/``PARK#<fingerprint>``)."""

    def load_group_marks(self, fingerprints: Iterable[str]) -> dict[str, GroupMark]:
        """An operator's retry or park mark of each of these fingerprints that has one (parking
        wins when both are recorded)."""
        ...

    def load_failure_groups(
        self, fingerprints: Iterable[str], held_key: str | None
    ) -> tuple[dict[str, GroupMark], tuple[HeldGroup, ...]]:
        """The same marks and, with ``held_key``, the groups held in a partial outage (held.py),
        read together."""
        ...


class RunRecords(
    BreakerStore,
    PauseStore,
    ContinuationStore,
    SweepStore,
    RunHistoryStore,
    VerdictStore,
    DrainStore,
    Protocol,
):
    """The record kinds one run's phases use; the runner hands each phase the one it needs. What
    only the operator's tool writes (``save_pause``, ``save_group_mark``, ``forget_marks``, ...) is
    on the state table adapter alone."""


class ActivitySource(Protocol):
    """What CloudWatch published about the source queues' consumers (consumer_health.py)."""

    def read(self, queues: Sequence[WatchedQueue], *, start: int, end: int) -> dict[str, QueueActivity]:
        """The complete minutes in ``[start, end)`` of every queue, by queue URL, in one
        ``GetMetricData`` call (paged). A queue whose datapoints are not valid is left out (and
        logged); ``AwsCallError`` when the call fails."""
        ...


class Archive(Protocol):
    """Where parked messages are kept past SQS retention (an S3 bucket), one object each."""

    def put(self, key: str, document: bytes) -> None:
        """Store one object; raise ``AwsCallError`` when it was not stored."""
        ...
