"""Carry out a batch's plan: holds, re-drives, parkings, then delete what arrived.

A DLQ message is deleted only after its send succeeded, even when a later step of the batch
fails. Counts kept only in the table are written before the send and put back when it fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqs_redriver.runtime.act.books import Executed, ExecutionBooks
from sqs_redriver.runtime.act.decision_log import log_decision
from sqs_redriver.runtime.act.parking import Parker
from sqs_redriver.runtime.act.redriving import RedriveSender
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import Queue
from sqs_redriver.runtime.model.intents import BatchPlan, Hold
from sqs_redriver.runtime.model.report import Tally


class Executor:
    """Carries out batch plans (shared by parallel workers: it keeps no state of a batch)."""

    def __init__(self, *, dlq: Queue, redrives: RedriveSender, parker: Parker, logger: Any) -> None:
        self.dlq = dlq
        self.redrives = redrives
        self.parker = parker
        self.log = logger

    def execute(self, plan: BatchPlan, now: int) -> Executed:
        """Hold, re-drive, park, delete. An AWS call that fails as a whole ends the execution and is
        named in ``failure``; what arrived before it is deleted all the same."""
        try:
            self._hold(plan.hold)
        except AwsCallError as exc:
            return Executed(Tally(), failure=str(exc))
        books = ExecutionBooks(now)
        failure = None
        try:
            try:
                redrive_error = self.redrives.send(plan.redrive, books)
                park_error = self.parker.park([*plan.park, *books.rejected], books)
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
            log_decision(self.log, "backing off in the DLQ", hold.tracked, wait_seconds=hold.seconds)
        if holds:
            self.dlq.change_visibility(
                {h.tracked.message_id: (h.tracked.receipt_handle, h.seconds) for h in holds}
            )

    def _delete_arrived(self, books: ExecutionBooks) -> None:
        if not books.arrived:
            return
        deleted = self.dlq.delete(books.arrived)
        for key, failure in deleted.failed.items():
            books.errors += 1
            self.log.error(
                "delete from the DLQ failed: the message will be seen again (a duplicate)",
                extra={"message_id": key, "code": failure.code},
            )
