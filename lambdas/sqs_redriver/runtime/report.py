"""What a run did: the counts added up batch by batch (``Tally``), why it stopped (``StopReason``),
the breaker's moves, and the one log line of each decision about a message. ``RunReport`` is what
the handler logs, publishes as metrics and returns."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqs_redriver.core.breaker import Mode, State

if TYPE_CHECKING:
    from sqs_redriver.core.message import Tracked
    from sqs_redriver.core.table import DrainRecord, Resume


class StopReason(StrEnum):
    NONE = ""
    BREAKER_OPEN = "breaker open"  # SKIP: nothing touched
    DLQ_EMPTY = "DLQ empty"
    PER_RUN_LIMIT = "per-run limit"
    TIME_BUDGET = "time budget"
    SOURCE_BACKLOG = "source backlog"
    HALTED = "halted"  # another parallel worker stopped the run
    AWS_ERROR = "AWS error"
    BREAKER_OPENED = "breaker opened"
    CANARY_FAILED = "canary failed"
    CANARY_SENT = "canary sent"
    PROBE_TAKEN = "another run holds the probe"
    PAUSED = "paused"  # an operator's pause: nothing touched but the retention sweep
    # The target's own Powertools breaker is OPEN: nothing sent (consumer_breaker.py)
    CONSUMER_BREAKER_OPEN = "consumer's breaker open"
    # It lets a probe through: re-drives held to a canary's worth (consumer_breaker.py)
    CONSUMER_BREAKER_PROBE = "consumer's breaker probing"
    CONTINUATION_TAKEN = "continuation already taken"  # a repeated or superseded continuation
    FEWER_WORKERS = "fewer workers wanted"  # a large drain's pace wants fewer workers than this slot
    # A chain's run at full rate found FAN_OUT_BACKLOG in the DLQ: its continuation starts the drain
    LARGE_BACKLOG = "large backlog"

    @property
    def stops_the_run(self) -> bool:
        """A reason that ends the whole run, not only the loop that met it."""
        return self not in (StopReason.DLQ_EMPTY, StopReason.PER_RUN_LIMIT, StopReason.HALTED)


@dataclass(frozen=True)
class Tally:
    """Counts of one batch, a worker or a run; tallies add up."""

    received: int = 0
    redriven: int = 0
    parked: int = 0
    expiring: int = 0  # of the parked: by the retention guard
    returned: int = 0
    canaries: int = 0
    errors: int = 0
    unparkable: int = 0
    # Parkings whose archive write failed: not a consumer failure, so never held against the breaker.
    unarchived: int = 0
    # Received in one source's part but belonging to another source (a shared DLQ): given back,
    # never held for or against this source's breaker.
    others: int = 0
    # Parked because an operator parked their failure group: the operator's verdict, not evidence
    # about the consumer, so left out of the breaker's ratio (many of them would dilute it).
    unjudged: int = 0
    # Received with a mark (or a consumer failure in it) that failed validation: left out, the
    # message handled as unmarked (decision 0058 in docs/decisions/).
    rejected_marks: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    @property
    def received_own(self) -> int:
        """The received messages of the part's own source."""
        return self.received - self.others

    @property
    def received_judged(self) -> int:
        """What the breaker's ratio counts: the part's own, less what an operator's group parked."""
        return self.received_own - self.unjudged


@dataclass(frozen=True)
class RunReport:
    """What one run did; the handler turns it into metrics and a summary, tests assert on it."""

    mode: Mode
    breaker_state: State
    tally: Tally = Tally()
    stopped_because: StopReason = StopReason.NONE
    breaker_transitions: list[str] = field(default_factory=list)
    # Its re-drives had finished their slow start: a run that follows at once starts at full rate.
    full_rate: bool = False
    # The continuation to start now (the handler invokes the function with it), if any.
    continue_with: Resume | None = None
    # A shared DLQ with a breaker per source: the source queue this part of a run was for, and a
    # run's parts (one per source, in the order they ran).
    source: str | None = None
    parts: tuple[RunReport, ...] = ()
    # The large drain the run was a worker of, as the run last saw it (None: it was not one).
    drain: DrainRecord | None = None

    @property
    def by_source(self) -> tuple[RunReport, ...]:
        """One report per source: the parts, or the run itself when it has one source."""
        return self.parts or (self,)

    @property
    def received(self) -> int:
        return self.tally.received

    @property
    def redriven(self) -> int:
        return self.tally.redriven

    @property
    def parked(self) -> int:
        return self.tally.parked

    @property
    def expiring(self) -> int:
        return self.tally.expiring

    @property
    def returned(self) -> int:
        return self.tally.returned

    @property
    def canaries(self) -> int:
        return self.tally.canaries

    @property
    def errors(self) -> int:
        return self.tally.errors

    @property
    def unparkable(self) -> int:
        return self.tally.unparkable

    @property
    def unarchived(self) -> int:
        return self.tally.unarchived

    @property
    def rejected_marks(self) -> int:
        return self.tally.rejected_marks


STATE_SEVERITY = (State.CLOSED, State.HALF_OPEN, State.OPEN)


def combine(parts: list[RunReport], source_queue_url: str) -> RunReport:
    """A run of several sources from its parts. ``mode`` and ``stopped_because`` are those of
    ``source_queue_url``'s part (SOURCE_QUEUE_URL's first queue, today's breaker);
    ``breaker_state`` is the worst, so the BreakerState metric shows any broken consumer. A
    continuation starts at full rate when every source whose breaker ended CLOSED ended its slow
    start (the others' parts start slowly anyway: see Redriver._part)."""
    leading = next(p for p in parts if p.source == source_queue_url)
    tally = Tally()
    for part in parts:
        tally += part.tally
    return RunReport(
        mode=leading.mode,
        breaker_state=max((p.breaker_state for p in parts), key=STATE_SEVERITY.index),
        tally=tally,
        stopped_because=leading.stopped_because,
        breaker_transitions=[
            f"{_queue_name(p.source)}: {move}" for p in parts for move in p.breaker_transitions
        ],
        full_rate=all(p.full_rate for p in parts if p.breaker_state is State.CLOSED),
        parts=tuple(parts),
    )


def _queue_name(url: str | None) -> str:
    return (url or "").rstrip("/").rsplit("/", 1)[-1]


# One log line per decision about a message, with the fields an operator searches by.


def log_decision(logger: Any, decision: str, tracked: Tracked, **fields: Any) -> None:
    """One log line per decision, with the message's identity, MessageId and count; a dead letter
    of another service's source and request id as well (a function's failure of this delivery)."""
    dead_letter = tracked.message.dead_letter
    if dead_letter is not None:
        fields = {
            "source": dead_letter.source.address if dead_letter.source else None,
            "request_id": dead_letter.request_id or None,
            **fields,
        }
    logger.info(
        decision,
        extra={
            "identity": tracked.mark.identity,
            "message_id": tracked.message_id,
            "redrive_count": tracked.mark.count,
            **fields,
        },
    )
