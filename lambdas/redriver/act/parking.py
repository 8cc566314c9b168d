"""Parking: poison goes to the parking lot with its reason; what the lot refuses stays hidden."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redriver.act.books import ExecutionBooks
from redriver.act.decision_log import log_decision
from redriver.act.outgoing import outgoing
from redriver.adapters.ports import CALL_FAILED, BatchResult, MessageRecord, Queue, RecordStatus, StateStore
from redriver.decide import fifo
from redriver.decide.routing import Routes
from redriver.model.intents import Park

# A message the parking lot refuses for good is hidden this long between tries. SQS caps a
# message's total visibility timeout at 12 hours from its receive, so 6 hours is always accepted.
UNPARKABLE_HIDE_SECONDS = 6 * 3600


class Parker:
    def __init__(
        self, *, parking_lot: Queue, dlq: Queue, state: StateStore, routes: Routes, fifo: bool, logger: Any
    ) -> None:
        self.parking_lot = parking_lot
        self.dlq = dlq
        self.state = state
        self.routes = routes
        self.fifo = fifo
        self.log = logger

    def park(self, parks: Sequence[Park], books: ExecutionBooks) -> str | None:
        """Records with the reasons, then the parking-lot send; return a whole call's error."""
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
