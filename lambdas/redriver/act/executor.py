"""Carry out a batch's plan: write-ahead records, re-drives, parkings, then delete what arrived.

A DLQ message is deleted only after its send succeeded, even when a later step of the batch
fails. Counts kept only in the table are written before the send and put back when it fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from redriver.act.outgoing import outgoing
from redriver.act.ratelimit import TokenBucket
from redriver.adapters import AwsCallError
from redriver.adapters.ports import (
    CALL_FAILED,
    BatchResult,
    EntryFailure,
    MessageRecord,
    Outgoing,
    Queue,
    RecordStatus,
    StateStore,
)
from redriver.decide import fifo
from redriver.decide.parking import rejected_reason
from redriver.decide.routing import Routes
from redriver.model.intents import BatchPlan, Hold, Park, Redrive
from redriver.model.report import Tally
from redriver.model.tracked import Tracked

# A message the parking lot refuses for good is hidden this long between tries. SQS caps a
# message's total visibility timeout at 12 hours from its receive, so 6 hours is always accepted.
UNPARKABLE_HIDE_SECONDS = 6 * 3600
# Entries not sent because an earlier message of their FIFO group was not: not an error of theirs.
BEHIND_UNSENT_GROUPMATE = "BehindUnsentGroupmate"


@dataclass(frozen=True)
class Executed:
    tally: Tally
    sent_to_source: tuple[Tracked, ...] = ()
    # A whole AWS call failed; what did arrive was still deleted.
    failure: str | None = None


@dataclass
class _Execution:
    """The books of one plan's execution: what arrived (to delete) and what happened."""

    now: int
    arrived: dict[str, str] = field(default_factory=dict)
    sent: list[Tracked] = field(default_factory=list)
    rejected: list[Park] = field(default_factory=list)
    redriven: int = 0
    parked: int = 0
    unparkable: int = 0
    errors: int = 0

    def result(self, failure: str | None) -> Executed:
        tally = Tally(
            redriven=self.redriven, parked=self.parked, unparkable=self.unparkable, errors=self.errors
        )
        return Executed(tally, tuple(self.sent), failure)


class Executor:
    def __init__(
        self,
        *,
        dlq: Queue,
        sources: Sequence[Queue],
        parking_lot: Queue,
        state: StateStore,
        limiter: TokenBucket,
        routes: Routes,
        fifo: bool,
        record_every_redrive: bool,
        logger: Any,
    ) -> None:
        self.dlq = dlq
        self.sources = {queue.url: queue for queue in sources}
        self.parking_lot = parking_lot
        self.state = state
        self.limiter = limiter
        self.routes = routes
        self.fifo = fifo
        self.record_every_redrive = record_every_redrive
        self.log = logger

    def execute(self, plan: BatchPlan, now: int) -> Executed:
        """Hold, re-drive, park, delete. An AWS call that fails as a whole ends the execution and is
        named in ``failure``; what arrived before it is deleted all the same."""
        try:
            self._hold(plan.hold)
        except AwsCallError as exc:
            return Executed(Tally(), failure=str(exc))
        books = _Execution(now)
        failure = None
        try:
            try:
                redrive_error = self._send_redrives(plan.redrive, books)
                park_error = self._send_parked([*plan.park, *books.rejected], books)
                failure = redrive_error or park_error
            except AwsCallError as exc:
                failure = str(exc)
        finally:
            # Even when parking fails after the re-drives went out: what arrived leaves the DLQ.
            try:
                self._delete_arrived(books)
            except AwsCallError as exc:
                failure = str(exc)
        return books.result(failure)

    def release(self, held: dict[str, str]) -> int:
        """Give back messages the run received but did not act on; return the errors met (0 or 1)."""
        if not held:
            return 0
        try:
            self.dlq.change_visibility({key: (handle, 0) for key, handle in held.items()})
        except AwsCallError as exc:
            # Not a loss: they become visible again when their visibility timeout ends.
            self.log.warning("could not release held messages", extra={"error": str(exc)})
            return 1
        return 0

    def _hold(self, holds: Sequence[Hold]) -> None:
        for hold in holds:
            log_decision(self.log, "backing off in the DLQ (FIFO)", hold.tracked, wait_seconds=hold.seconds)
        if holds:
            self.dlq.change_visibility(
                {h.tracked.message_id: (h.tracked.receipt_handle, h.seconds) for h in holds}
            )

    def _send_redrives(self, redrives: Sequence[Redrive], books: _Execution) -> str | None:
        if not redrives:
            return None
        marks = [r.tracked.mark.after_redrive(books.now) for r in redrives]
        # Written before the send: for messages counted only in the table, a count written after
        # would be lost by a crash in between, and the message could then loop forever. A marked
        # message carries its own count and history; recording it too is optional (it costs one
        # write unit per re-drive, more than the SQS requests of the whole re-drive).
        self.state.save_records(
            [
                MessageRecord(mark, RecordStatus.REDRIVEN, self.routes.describe_source(r.tracked))
                for r, mark in zip(redrives, marks, strict=True)
                if self.record_every_redrive or not r.tracked.carries_mark
            ]
        )
        self.limiter.acquire(len(redrives))
        messages = [
            outgoing(
                str(index),
                r.tracked,
                mark.to_json(),
                delay=r.delay_seconds,
                deduplication_id=fifo.deduplication_id(r.tracked, str(mark.count)),
                fifo=self.fifo,
            )
            for index, (r, mark) in enumerate(zip(redrives, marks, strict=True))
        ]
        result = self._send_in_rounds(redrives, messages)
        for key in result.succeeded:
            redrive, mark = redrives[int(key)], marks[int(key)]
            books.arrived[redrive.tracked.message_id] = redrive.tracked.receipt_handle
            books.sent.append(redrive.tracked)
            books.redriven += 1
            log_decision(
                self.log,
                "re-driven",
                redrive.tracked,
                redrive_count=mark.count,
                delay_seconds=redrive.delay_seconds,
            )
        not_sent = []
        for key, failure in result.failed.items():
            tracked = redrives[int(key)].tracked
            if failure.sender_fault:
                reason = rejected_reason(tracked, failure.code, now=books.now, routes=self.routes)
                books.rejected.append(Park(tracked, reason))
                continue
            # A failed call is counted once, by the run that it stops.
            if failure.code not in (CALL_FAILED, BEHIND_UNSENT_GROUPMATE):
                books.errors += 1
            not_sent.append(tracked)
            log_decision(
                self.log,
                "re-drive send failed; it stays in the DLQ",
                tracked,
                code=failure.code,
                error=failure.message,
            )
        self._undo_table_counts(not_sent)
        return result.call_error

    def _send_in_rounds(self, redrives: Sequence[Redrive], messages: list[Outgoing]) -> BatchResult:
        """One round on standard queues. On FIFO, a group's next message goes only after the one
        before it was sent; a message behind an unsent groupmate is not sent (it would reorder)."""
        groups = [r.tracked.group for r in redrives]
        rounds = fifo.send_rounds(groups) if self.fifo else [list(range(len(redrives)))]
        result = BatchResult()
        blocked_groups: set[str] = set()
        for round_positions in rounds:
            by_source: dict[str, list[Outgoing]] = {}
            for position in round_positions:
                if groups[position] in blocked_groups:
                    result.failed[str(position)] = EntryFailure(
                        BEHIND_UNSENT_GROUPMATE, "", sender_fault=False
                    )
                    continue
                source = self.routes.source_url(redrives[position].tracked) or self.routes.urls[0]
                by_source.setdefault(source, []).append(messages[position])
            for source, batch in by_source.items():
                sent_now = self.sources[source].send(batch)
                result.merge(sent_now)
                blocked_groups.update(groups[int(key)] for key in sent_now.failed)
        return result

    def _undo_table_counts(self, not_sent: list[Tracked]) -> None:
        """Put back the counts of table-counted messages whose re-drive did not happen."""
        undo = [
            MessageRecord(t.mark, RecordStatus.REDRIVEN, self.routes.describe_source(t))
            for t in not_sent
            if not t.carries_mark
        ]
        if undo:
            self.state.save_records(undo)

    def _send_parked(self, parks: Sequence[Park], books: _Execution) -> str | None:
        if not parks:
            return None
        self.state.save_records(
            [
                MessageRecord(
                    p.tracked.mark, RecordStatus.PARKED, self.routes.describe_source(p.tracked), p.reason
                )
                for p in parks
            ]
        )
        result = self.parking_lot.send(
            [
                outgoing(
                    str(index),
                    p.tracked,
                    p.tracked.mark.to_json(parked=p.reason.to_dict()),
                    delay=0,
                    deduplication_id=fifo.deduplication_id(p.tracked, "parked"),
                    fifo=self.fifo,
                )
                for index, p in enumerate(parks)
            ]
        )
        for key in result.succeeded:
            park = parks[int(key)]
            books.arrived[park.tracked.message_id] = park.tracked.receipt_handle
            books.parked += 1
            log_decision(self.log, "parked", park.tracked, reason=park.reason.why)
        self._handle_unparkable(result, parks, books)
        return result.call_error

    def _handle_unparkable(self, result: BatchResult, parks: Sequence[Park], books: _Execution) -> None:
        """A message the parking lot refuses for good stays in the DLQ, hidden for 6 hours.

        It is not a consumer failure, so it does not count toward the breaker; it is logged as an
        error and counted (metric ``Unparkable``) every time, so it cannot go unnoticed.
        """
        refused: dict[str, str] = {}
        for key, failure in result.failed.items():
            tracked = parks[int(key)].tracked
            if failure.sender_fault:
                books.unparkable += 1
                refused[tracked.message_id] = tracked.receipt_handle
                log_decision(
                    self.log,
                    "the parking lot refuses this message; it stays in the DLQ",
                    tracked,
                    code=failure.code,
                )
            else:
                if failure.code != CALL_FAILED:
                    books.errors += 1
                log_decision(self.log, "parking failed; it stays in the DLQ", tracked, code=failure.code)
        if refused:
            self.dlq.change_visibility(
                {key: (handle, UNPARKABLE_HIDE_SECONDS) for key, handle in refused.items()}
            )

    def _delete_arrived(self, books: _Execution) -> None:
        if not books.arrived:
            return
        deleted = self.dlq.delete(books.arrived)
        for key, failure in deleted.failed.items():
            books.errors += 1
            self.log.error(
                "delete from the DLQ failed: the message will be seen again (a duplicate)",
                extra={"message_id": key, "code": failure.code},
            )


def log_decision(logger: Any, decision: str, tracked: Tracked, **fields: Any) -> None:
    """One log line per decision, with the message's identity, MessageId and count."""
    logger.info(
        decision,
        extra={
            "identity": tracked.mark.identity,
            "message_id": tracked.message_id,
            "redrive_count": tracked.mark.count,
            **fields,
        },
    )
