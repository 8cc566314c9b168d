"""Parking: poison goes to the archive, then the parking lot, with its reason; what the archive
or the lot does not take stays in the DLQ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqs_redriver.runtime.act.archiving import archive_document, archive_key
from sqs_redriver.runtime.act.books import ExecutionBooks
from sqs_redriver.runtime.act.decision_log import log_decision
from sqs_redriver.runtime.act.outgoing import outgoing
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import (
    CALL_FAILED,
    Archive,
    BatchResult,
    MessageRecord,
    MessageStore,
    Queue,
    RecordStatus,
)
from sqs_redriver.runtime.decide import fifo
from sqs_redriver.runtime.decide.routing import Routes
from sqs_redriver.runtime.model.intents import Park
from sqs_redriver.runtime.model.reasons import ParkCause

# A message the parking lot refuses for good is hidden this long between tries. SQS caps a
# message's total visibility timeout at 12 hours from its receive, so 6 hours is always accepted.
UNPARKABLE_HIDE_SECONDS = 6 * 3600


class Parker:
    def __init__(
        self,
        *,
        parking_lot: Queue,
        dlq: Queue,
        state: MessageStore,
        routes: Routes,
        fifo: bool,
        logger: Any,
        archive: Archive | None = None,
    ) -> None:
        self.parking_lot = parking_lot
        self.archive = archive
        self.dlq = dlq
        self.state = state
        self.routes = routes
        self.fifo = fifo
        self.log = logger

    def park(self, parks: Sequence[Park], books: ExecutionBooks) -> str | None:
        """The archive, records with the reasons, then the parking-lot send; return a whole call's
        error. A message the archive did not take is not parked this run, unless it is expiring."""
        parks = self._archived(parks, books)
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
            if park.reason.cause is ParkCause.EXPIRING:
                books.expiring += 1
            log_decision(self.log, "parked", park.tracked, reason=park.reason.why)
        self._handle_unparkable(result, parks, books)
        return result.call_error

    def _archived(self, parks: Sequence[Park], books: ExecutionBooks) -> list[Park]:
        """Archive each one first, so the parking lot's 14 days lose nothing. One whose object was
        not stored stays in the DLQ and is tried again later; an expiring one is parked all the same
        (the DLQ would delete it, the lot keeps it 14 days). Either way the failure is logged and
        counted (metric ``Unarchived``), never held against the consumer's breaker."""
        if self.archive is None:
            return list(parks)
        stored = []
        for park in parks:
            try:
                self.archive.put(archive_key(park, books.now), archive_document(park, books.now))
            except AwsCallError as exc:
                books.unarchived += 1
                expiring = park.reason.cause is ParkCause.EXPIRING
                self.log.error(
                    "archiving failed; parked all the same: it is expiring"
                    if expiring
                    else "archiving failed; it stays in the DLQ",
                    extra={
                        "identity": park.tracked.mark.identity,
                        "message_id": park.tracked.message_id,
                        "error": str(exc),
                    },
                )
                if not expiring:
                    continue
            stored.append(park)
        return stored

    def _handle_unparkable(self, result: BatchResult, parks: Sequence[Park], books: ExecutionBooks) -> None:
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
