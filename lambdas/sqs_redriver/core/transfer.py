"""Moving messages out of a queue: a ``Transfer`` deletes from its origin only what arrived
elsewhere, and a ``TokenBucket`` paces the sends.

The rule every move follows (the re-driver's re-drives and parkings, the operator's replay and
edit): a message leaves its queue only after a send said it arrived. Each send's ``BatchResult``
is booked (``Transfer.book``); ``delete_arrived`` then deletes those messages, and only those, also
when a later send failed, and says which could not be deleted.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Protocol

from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.sqs import CALL_FAILED, BatchResult, EntryFailure

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from sqs_redriver.core.message import Tracked


class Origin(Protocol):
    """The queue messages leave: deleted from by receipt handle (keys name the entries)."""

    def delete(self, receipt_handles: Mapping[str, str]) -> BatchResult: ...


class Transfer:
    """Messages leaving ``origin`` for other queues: what arrived, deleted from the origin.

    Not shared between threads: each batch (or each move) has its own.
    """

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self._arrived: dict[str, str] = {}  # MessageId -> receipt handle, not deleted yet

    def book(self, result: BatchResult, leaving: Sequence[Tracked]) -> None:
        """Book what a send's ``result`` says arrived; its entry ids are positions in ``leaving``,
        the origin's messages that the send carried."""
        for key in result.succeeded:
            tracked = leaving[int(key)]
            self._arrived[tracked.message_id] = tracked.receipt_handle

    @property
    def arrived(self) -> list[str]:
        """The MessageIds that arrived and are not deleted yet."""
        return list(self._arrived)

    def delete_arrived(self) -> BatchResult:
        """Delete from the origin what arrived since the last call, keyed by MessageId; see
        ``delete_from`` for what the result says."""
        arrived, self._arrived = self._arrived, {}
        return delete_from(self.origin, arrived)


def delete_from(origin: Origin, receipt_handles: Mapping[str, str]) -> BatchResult:
    """Delete ``receipt_handles`` from ``origin``. Never raises for AWS: a call that failed as a
    whole is in ``call_error``, with each of its messages failed as ``CALL_FAILED`` (maybe still
    in the origin), as ``SqsQueue.send`` says a failed send."""
    if not receipt_handles:
        return BatchResult()
    try:
        return origin.delete(receipt_handles)
    except AwsCallError as exc:
        failure = EntryFailure(CALL_FAILED, str(exc), sender_fault=False)
        return BatchResult(failed=dict.fromkeys(receipt_handles, failure), call_error=str(exc))


class TokenBucket:
    """``rate`` tokens a second, holding at most ``burst``; it starts full."""

    def __init__(
        self,
        rate: float,
        *,
        burst: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"rate must be > 0 and burst >= 1, got {rate} and {burst}")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = burst
        self._updated = clock()
        self._lock = threading.Lock()
        self._prepaid = threading.local()  # tokens a thread took ahead for its next acquire

    def prepay(self, count: int) -> float:
        """Take up to ``count`` tokens now, sleeping until there are enough, for this thread's next
        ``acquire`` (what it holds already counts); return the seconds slept. A large drain's
        worker waits for its share before its check of the breaker and the verdicts, so the batch
        it sends next was checked just before, not a bucket's wait ago."""
        held = getattr(self._prepaid, "tokens", 0)
        wanted = max(0, count - held)
        waited = self._take(wanted) if wanted else 0.0
        self._prepaid.tokens = held + wanted
        return waited

    def acquire(self, count: int) -> float:
        """Take ``count`` tokens, sleeping until there are enough; return the seconds slept. What
        this thread prepaid is taken first.

        Safe across threads: waiters take their turn, so parallel batches share one rate.
        """
        held = getattr(self._prepaid, "tokens", 0)
        if held:
            used = min(held, count)
            self._prepaid.tokens = held - used
            count -= used
            if not count:
                return 0.0
        return self._take(count)

    def _take(self, count: int) -> float:
        if count > self.burst:
            raise ValueError(f"cannot take {count} tokens from a bucket of {self.burst}")
        with self._lock:
            self._refill()
            waited = 0.0
            if self._tokens < count:
                waited = (count - self._tokens) / self.rate
                self._sleep(waited)
                self._refill()
            self._tokens -= count
            return waited

    def set_rate(self, rate: float) -> None:
        """From now on, ``rate`` tokens a second (a large drain's worker takes its share of the pace)."""
        if rate <= 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        with self._lock:
            self._refill()
            self.rate = rate

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.rate)
        self._updated = now
