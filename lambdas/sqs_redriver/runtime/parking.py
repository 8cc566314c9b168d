"""Parking: when a message is parked and the reason it carries (pure), and the parking itself: the
message sent to the parking lot with its reason, archived to S3 when a bucket is set, deleted from
the DLQ only once it arrived."""

from __future__ import annotations

import base64
import json
import time
from typing import TYPE_CHECKING, Any

from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.message import deduplication_id
from sqs_redriver.core.sqs import CALL_FAILED, BatchResult, outgoing
from sqs_redriver.core.table import GroupAction, GroupMark, MessageRecord, ParkCause, ParkReason, RecordStatus
from sqs_redriver.protocol.failure import MAX_ERROR_MESSAGE_JSON_BYTES, bounded
from sqs_redriver.protocol.keys import ARCHIVE_PREFIX
from sqs_redriver.protocol.limits import MAX_ERROR_MESSAGE_CHARS
from sqs_redriver.protocol.redact import redact_untrusted
from sqs_redriver.runtime.consumer_health import suspect_reason_text
from sqs_redriver.runtime.ports import Archive, MessageStore, Queue
from sqs_redriver.runtime.report import log_decision
from sqs_redriver.runtime.routing import Routes, named_source

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from sqs_redriver.core.message import Tracked
    from sqs_redriver.core.sqs import EntryFailure
    from sqs_redriver.runtime.batch import ExecutionBooks
    from sqs_redriver.runtime.plan import Park


# The operator's words in a parking reason, bounded like the consumer's error (characters, and
# bytes as JSON) so a mark with the longest of both and a full history still fits its budget (tested).
MAX_OPERATOR_REASON_CHARS = 200


MAX_OPERATOR_REASON_JSON_BYTES = 480


MAX_OPERATOR_NAME_CHARS = 64


MAX_OPERATOR_NAME_JSON_BYTES = 160


# What a reason keeps of a problem's or a refusal's words (a dead letter's, a target's), bounded
# like the consumer's error message.
MAX_DETAIL_CHARS = MAX_ERROR_MESSAGE_CHARS


MAX_DETAIL_JSON_BYTES = MAX_ERROR_MESSAGE_JSON_BYTES


def over_limit(tracked: Tracked, max_redrive_count: int) -> bool:
    """It came back after its last allowed re-drive: poison, not re-driven again."""
    return tracked.mark.count >= max_redrive_count


def park_reason(tracked: Tracked, cause: ParkCause, why: str, *, now: int, routes: Routes) -> ParkReason:
    mark = tracked.mark
    if mark.failure is not None:
        why = f"{why}; consumer's {mark.failure.describe()}"
    dead_letter = tracked.message.dead_letter
    if dead_letter is not None and dead_letter.cause is not None:
        why = f"{why}; {dead_letter.cause.describe()}"
    return ParkReason(
        cause=cause,
        why=why,
        redrive_count=mark.count,
        first_failed_at=mark.first_failed_at,
        last_failed_at=now,
        source_queue=routes.describe_source(tracked),
        dlq_message_id=tracked.message_id,
        failure=mark.failure,
    )


def over_limit_reason(tracked: Tracked, max_redrive_count: int, *, now: int, routes: Routes) -> ParkReason:
    why = f"failed after {tracked.mark.count} re-drives (limit {max_redrive_count})"
    return park_reason(tracked, ParkCause.OVER_LIMIT, why, now=now, routes=routes)


def suspect_reason(tracked: Tracked, suspect_limit: int, *, now: int, routes: Routes) -> ParkReason:
    """A suspect of poison at its limit: it kept failing while the consumer processed others."""
    why = f"{suspect_reason_text(tracked)} (limit {suspect_limit}): poison, not an outage"
    return park_reason(tracked, ParkCause.SUSPECT, why, now=now, routes=routes)


def group_mark(tracked: Tracked, groups: Mapping[str, GroupMark]) -> GroupMark | None:
    """The operator's mark on the failure group of the message's last failure, if any."""
    failure = tracked.mark.failure
    return groups.get(failure.fingerprint) if failure is not None else None


def operator_parked(tracked: Tracked, groups: Mapping[str, GroupMark]) -> GroupMark | None:
    """An operator parked its failure group: parked on sight, terminal or transient, in every mode
    that reads the DLQ (as terminal failures are). The mark that says so, or None."""
    mark = group_mark(tracked, groups)
    return mark if mark is not None and mark.action is GroupAction.PARK else None


def operator_reason(tracked: Tracked, mark: GroupMark, *, now: int, routes: Routes) -> ParkReason:
    reason = bounded(mark.reason, MAX_OPERATOR_REASON_CHARS, MAX_OPERATOR_REASON_JSON_BYTES)
    by = bounded(mark.by, MAX_OPERATOR_NAME_CHARS, MAX_OPERATOR_NAME_JSON_BYTES)
    why = f"an operator parked its failure group (by {by or 'unknown'}: {reason or 'no reason given'})"
    return park_reason(tracked, ParkCause.OPERATOR, why, now=now, routes=routes)


def terminal(tracked: Tracked, groups: Mapping[str, GroupMark]) -> bool:
    """The consumer kit said it can never succeed: parked on first sight, never re-driven, unless
    an operator marked its fingerprint for retry."""
    failure = tracked.mark.failure
    if failure is None or not failure.terminal:
        return False
    mark = group_mark(tracked, groups)
    return mark is None or mark.action is not GroupAction.RETRY


def terminal_reason(tracked: Tracked, *, now: int, routes: Routes) -> ParkReason:
    return park_reason(tracked, ParkCause.TERMINAL, "the consumer failed it for good", now=now, routes=routes)


def unreplayable(tracked: Tracked) -> bool:
    """A dead letter of another service that cannot go back as it is: its source dropped the
    payload (a Lambda destination record too large for its queue), or it could not be read."""
    dead_letter = tracked.message.dead_letter
    return dead_letter is not None and (dead_letter.payload is None or dead_letter.problem is not None)


def unreplayable_reason(tracked: Tracked, *, now: int, routes: Routes) -> ParkReason:
    dead_letter = tracked.message.dead_letter
    assert dead_letter is not None, "only a dead letter of another service is unreplayable"
    if dead_letter.problem is not None:
        why = f"its dead letter cannot be read: {detail(str(dead_letter.problem))}"
    else:
        request = f" (request {dead_letter.request_id})" if dead_letter.request_id else ""
        why = f"its source dropped the payload{request}: nothing to deliver again"
    return park_reason(tracked, ParkCause.UNREPLAYABLE, why, now=now, routes=routes)


def unknown_source_reason(tracked: Tracked, *, now: int, routes: Routes) -> ParkReason:
    """No configured source is the one it names: the name it gave (a dead letter's origin, as
    read: redacted and bounded) or SQS's source ARN."""
    dead_letter = tracked.message.dead_letter
    if dead_letter is not None:
        named = f"it names {dead_letter.origin}" if dead_letter.origin else "it names none"
        why = f"its dead letter names no configured source ({named})"
        return park_reason(tracked, ParkCause.UNKNOWN_SOURCE, why, now=now, routes=routes)
    named_by = "" if tracked.message.source_arn else " (the consumer kit's err.src)"
    why = f"no configured source queue is {named_source(tracked)}{named_by}"
    return park_reason(tracked, ParkCause.UNKNOWN_SOURCE, why, now=now, routes=routes)


def rejected_reason(tracked: Tracked, refusal: EntryFailure, *, now: int, routes: Routes) -> ParkReason:
    """The target will never accept this message as it is (a sender fault): park it, never retry
    forever. A source queue's, or another kind's target's: its code and what it said (the field
    and the rule broken, when the delivery found it; AWS's words, which may quote the message,
    redacted)."""
    refused_by = "source queue" if tracked.message.dead_letter is None else "target"
    said = detail(refusal.message)
    why = f"{refused_by} rejected it: {refusal.code}" + (f" ({said})" if said else "")
    return park_reason(tracked, ParkCause.SOURCE_REJECTED, why, now=now, routes=routes)


def detail(text: str) -> str:
    """A problem's or a refusal's words as a reason keeps them: redacted and bounded."""
    return bounded(redact_untrusted(text, MAX_DETAIL_CHARS), MAX_DETAIL_CHARS, MAX_DETAIL_JSON_BYTES)


# What the archive keeps of a parked message, and under which key.


def archive_key(park: Park, now: int) -> str:
    """Unique per parking and browsable: by source queue, parking date, identity, DLQ MessageId."""
    tracked = park.tracked
    # A queue URL or ARN ends with the queue's name (a message SQS named no source: "None").
    source = park.reason.source_queue.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    day = time.strftime("%Y/%m/%d", time.gmtime(now))
    identity = tracked.mark.identity.replace("/", "_")
    return f"{ARCHIVE_PREFIX}/{source}/{day}/{identity}/{tracked.message_id}-{now}.json"


def archive_document(park: Park, now: int) -> bytes:
    """Body, message and system attributes, mark, reason and parking time, as JSON."""
    tracked = park.tracked
    message = tracked.message
    document = {
        "parked_at": now,
        "reason": park.reason.to_dict(),
        "mark": json.loads(tracked.mark.to_json()),
        "dlq_message_id": tracked.message_id,
        "body": message.body,
        "message_attributes": {name: _attribute(value) for name, value in message.attributes.items()},
        "system_attributes": dict(message.system_attributes),
    }
    return json.dumps(document, ensure_ascii=False, sort_keys=True).encode("utf-8")


def _attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    """A message attribute as JSON can hold it: binary values in base64."""
    if "BinaryValue" in value:
        binary = value["BinaryValue"]
        encoded = base64.b64encode(binary if isinstance(binary, bytes) else bytes(binary)).decode("ascii")
        return {"DataType": value["DataType"], "BinaryValue": encoded}
    return {"DataType": value["DataType"], "StringValue": value.get("StringValue", "")}


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
                    deduplication_id=deduplication_id(p.tracked, "parked"),
                    fifo=self.fifo,
                )
                for index, p in enumerate(parks)
            ]
        )
        books.transfer.book(result, [p.tracked for p in parks])
        for key in result.succeeded:
            park = parks[int(key)]
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
