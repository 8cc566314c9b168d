"""Re-drives: the write-ahead table records, the rate limit, and the sends to each source."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqs_redriver.core.delivery import FUNCTION_ERROR, delivered
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.message import deduplication_id
from sqs_redriver.core.sqs import CALL_FAILED, BatchResult, EntryFailure, Outgoing, outgoing
from sqs_redriver.core.table import MessageRecord, RecordStatus
from sqs_redriver.protocol.envelope import invocation_trip
from sqs_redriver.runtime import fifo
from sqs_redriver.runtime.parking import rejected_reason
from sqs_redriver.runtime.plan import Park, Redrive
from sqs_redriver.runtime.ports import MessageStore, Target
from sqs_redriver.runtime.report import log_decision

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqs_redriver.core.message import Tracked
    from sqs_redriver.core.transfer import TokenBucket
    from sqs_redriver.protocol.mark import Mark
    from sqs_redriver.runtime.batch import ExecutionBooks
    from sqs_redriver.runtime.routing import Routes


# Entries not sent because an earlier message of their FIFO group was not: not an error of theirs.
BEHIND_UNSENT_GROUPMATE = "BehindUnsentGroupmate"


class RedriveSender:
    def __init__(
        self,
        *,
        sources: Sequence[Target],
        state: MessageStore,
        limiter: TokenBucket,
        routes: Routes,
        fifo: bool,
        record_every_redrive: bool,
        logger: Any,
    ) -> None:
        self.sources = {queue.url: queue for queue in sources}
        self.state = state
        self.limiter = limiter
        self.routes = routes
        self.fifo = fifo
        self.record_every_redrive = record_every_redrive
        self.log = logger

    def send(self, redrives: Sequence[Redrive], books: ExecutionBooks) -> str | None:
        """Write-ahead records, the rate limit, then the sends; return a whole call's error."""
        if not redrives:
            return None
        marks = [
            r.tracked.mark.after_redrive(
                books.now,
                verdict_key=r.tag.verdict_key if r.tag else None,
                probe=r.tag is not None and r.tag.probe,
            )
            for r in redrives
        ]
        self._write_ahead(redrives, marks)
        self.limiter.acquire(len(redrives))
        result = self._send_in_rounds(redrives, self._messages(redrives, marks))
        self._book_sent(result, redrives, marks, books)
        self._record_returns(result, redrives, marks, books)
        self._undo_table_counts(self._book_not_sent(result, redrives, books))
        return result.call_error

    def _write_ahead(self, redrives: Sequence[Redrive], marks: Sequence[Mark]) -> None:
        """Written before the send: for messages counted only in the table, a count written after
        would be lost by a crash in between, and the message could then loop forever. A marked
        message carries its own count and history; recording it too is optional (it costs one
        write unit per re-drive, more than the SQS requests of the whole re-drive). A function's
        asynchronous re-drive comes back under a trip known once it is sent: recorded then
        (``_record_returns``), not here."""
        self.state.save_records(
            [
                MessageRecord(
                    mark, RecordStatus.REDRIVEN, self.routes.describe_source(r.tracked), key=_key(r.tracked)
                )
                for r, mark in zip(redrives, marks, strict=True)
                if self._written_ahead(r)
            ]
        )

    def _written_ahead(self, redrive: Redrive) -> bool:
        carries_mark = redrive.tracked.carries_mark
        return (self.record_every_redrive or not carries_mark) and not _returns_in_a_trip(redrive)

    def _messages(self, redrives: Sequence[Redrive], marks: Sequence[Mark]) -> list[Outgoing]:
        """Each re-drive as sent, with its new mark; entry ids are the re-drives' positions. A dead
        letter of another service goes as what its target gets: the event a function was invoked
        with, not the record of its failure (its count is in the table)."""
        return [
            delivered(str(index), r.tracked.message.dead_letter, probe=r.tag is not None and r.tag.probe)
            if r.tracked.message.dead_letter is not None
            else outgoing(
                str(index),
                r.tracked,
                mark.to_json(),
                delay=r.delay_seconds,
                deduplication_id=deduplication_id(r.tracked, str(mark.count)),
                fifo=self.fifo,
            )
            for index, (r, mark) in enumerate(zip(redrives, marks, strict=True))
        ]

    def _book_sent(
        self, result: BatchResult, redrives: Sequence[Redrive], marks: Sequence[Mark], books: ExecutionBooks
    ) -> None:
        books.transfer.book(result, [r.tracked for r in redrives])
        for key in result.succeeded:
            redrive, mark = redrives[int(key)], marks[int(key)]
            books.sent.append(redrive.tracked)
            books.redriven += 1
            log_decision(
                self.log,
                "re-driven",
                redrive.tracked,
                redrive_count=mark.count,
                delay_seconds=redrive.delay_seconds,
            )

    def _record_returns(
        self, result: BatchResult, redrives: Sequence[Redrive], marks: Sequence[Mark], books: ExecutionBooks
    ) -> None:
        """Where a function's failure of a re-drive comes back: the re-drive's count under the trip
        of the request id its Invoke got back (``invocation_trip``), which Lambda writes into the
        failure's record. Only a dead letter found there is a return: one a sender replays, under
        any other request id, is a dead letter of its own. Written once the id is known, minutes
        before the failure can come back (after Lambda's retries). A trip not recorded (the write
        failed) makes its failure a dead letter of its own, counted from 0: logged, and an error
        of the run; the re-drive itself happened, so the message still leaves the DLQ."""
        records = []
        for key in result.succeeded:
            redrive, mark = redrives[int(key)], marks[int(key)]
            if not _returns_in_a_trip(redrive):
                continue
            request_id = result.request_ids.get(key)
            if not request_id:
                log_decision(
                    self.log,
                    "no request id in Invoke's answer: a failure of it comes back as new",
                    redrive.tracked,
                )
                continue
            source = self.routes.describe_source(redrive.tracked)
            trip = invocation_trip(mark.identity, request_id)
            records.append(MessageRecord(mark, RecordStatus.REDRIVEN, source, key=trip))
        try:
            self.state.save_records(records)
        except AwsCallError as exc:
            books.errors += 1
            self.log.error(
                "re-drives' returns not recorded: a failure of theirs will count as a new dead letter",
                extra={"re_drives": len(records), "error": str(exc)},
            )

    def _book_not_sent(
        self, result: BatchResult, redrives: Sequence[Redrive], books: ExecutionBooks
    ) -> list[Redrive]:
        """Rejected re-drives are parked; the others stay in the DLQ. Returns those whose re-drive did
        not happen (a canary the target failed did happen: its count stands)."""
        not_sent = []
        for key, failure in result.failed.items():
            tracked = redrives[int(key)].tracked
            if failure.sender_fault:
                reason = rejected_reason(tracked, failure, now=books.now, routes=self.routes)
                books.rejected.append(Park(tracked, reason))
                continue
            if failure.code == FUNCTION_ERROR:
                # A canary the function answered with its error: delivered and failed, as if it had
                # come back at once. Its count stands; it stays in the DLQ.
                books.failed_at_target.append(tracked)
                log_decision(
                    self.log,
                    "the function failed the canary; it stays in the DLQ",
                    tracked,
                    error=failure.message,
                )
                continue
            # A failed call is counted once, by the run that it stops.
            if failure.code not in (CALL_FAILED, BEHIND_UNSENT_GROUPMATE):
                books.errors += 1
            not_sent.append(redrives[int(key)])
            log_decision(
                self.log,
                "re-drive send failed; it stays in the DLQ",
                tracked,
                code=failure.code,
                error=failure.message,
            )
        return not_sent

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

    def _undo_table_counts(self, not_sent: list[Redrive]) -> None:
        """Put back the counts written ahead of re-drives that did not happen."""
        undo = [
            MessageRecord(
                r.tracked.mark_as_read,
                RecordStatus.REDRIVEN,
                self.routes.describe_source(r.tracked),
                key=_key(r.tracked),
            )
            for r in not_sent
            if self._written_ahead(r)
        ]
        if undo:
            self.state.save_records(undo)


def _returns_in_a_trip(redrive: Redrive) -> bool:
    """A function's dead letter re-driven asynchronously: its failure comes back under the request
    id of the Invoke, in a trip recorded once that id is known."""
    dead_letter = redrive.tracked.message.dead_letter
    probe = redrive.tag is not None and redrive.tag.probe
    return (
        dead_letter is not None
        and dead_letter.source is not None
        and dead_letter.source.returns_under_request_id(probe=probe)
    )


def _key(tracked: Tracked) -> str:
    """The subject of the record that counts a re-drive in the table: the message's own (a dead
    letter's trip) when the table alone counts it, else its mark's identity."""
    return tracked.mark.identity if tracked.carries_mark else tracked.record_key
