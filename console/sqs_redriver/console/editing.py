"""Edit and retry: a dead or parked message, corrected by the operator, sent back to its source.

The original is archived first (S3, under ``edited/``), the edited message is sent with the same
identity and its mark recording the edit, and only then is the original deleted. The rules of the
editable document are in edit_rules.py; this module acts, inside the action's audit record.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from sqs_redriver.console.aws import QueueScan
from sqs_redriver.console.edit_rules import Edited, changed, editable, render, shown_attribute
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.console.moves import Destination
from sqs_redriver.console.outcome_rules import Sent
from sqs_redriver.console.outcomes import Ticket, new_ticket, record_sent
from sqs_redriver.console.replay_records import ReplayKind
from sqs_redriver.console.shown import inert_str
from sqs_redriver.console.tool import NotFound, Tool, UsageError
from sqs_redriver.protocol.keys import EDIT_ARCHIVE_PREFIX
from sqs_redriver.protocol.limits import MAX_IDENTITY_CHARS
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.act.outgoing import outgoing
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import Outgoing
from sqs_redriver.runtime.adapters.s3_archive import S3Archive
from sqs_redriver.runtime.decide import fifo
from sqs_redriver.runtime.model.tracked import Tracked

EDIT_STEP = "edit"
# The DLQ MessageId as it appears in an archive key: S3-safe characters, cut (a UUID is 36).
KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
KEY_MESSAGE_ID_CHARS = 40


@dataclass
class EditReport:
    """What an edit did: archived where, sent where, and whether the original was deleted."""

    message_id: str
    identity: str
    where: Where
    archive_key: str
    source_queue: str
    archived: bool = False
    sent: bool = False
    deleted: bool = False
    error: str | None = None
    replay_id: str | None = None  # its outcome record (`sqs-redriver outcome ID`)
    interrupted: bool = False  # Ctrl-C at or after the send

    @property
    def clean(self) -> bool:
        return self.archived and self.sent and self.deleted

    @property
    def not_deleted(self) -> bool:
        """Sent, but the original is still in its queue (its delete failed): a duplicate."""
        return self.sent and not self.deleted

    def to_dict(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "identity": self.identity,
            "from": self.where.value,
            "archive_key": self.archive_key,
            "source_queue": self.source_queue,
            "archived": self.archived,
            "sent": self.sent,
            "deleted": self.deleted,
            "not_deleted": self.not_deleted,
            "error": self.error,
            "replay_id": self.replay_id,
            "interrupted": self.interrupted,
        }

    def summary(self) -> str:
        """One line on what happened, and what to do when something did not."""
        if self.clean:
            followed = f"; what became of it: sqs-redriver outcome {self.replay_id}" if self.replay_id else ""
            unrecorded = f" ({self.error})" if self.error else ""
            return (
                f"edited and sent to {self.source_queue}; the original is archived at {self.archive_key}"
                f"{followed}{unrecorded}"
            )
        if self.interrupted:
            return (
                f"{self.error}: the original is still in the {self.where.value}; look at {self.source_queue} "
                f"before editing again, or the edit is sent twice; archived at {self.archive_key}"
            )
        if self.not_deleted:
            return (
                f"edited and sent to {self.source_queue}, but the original is still in the "
                f"{self.where.value} (its delete failed: {self.error}): delete or purge it, or it is sent "
                f"twice; archived at {self.archive_key}"
            )
        return f"not sent ({self.error}): the original is still in the {self.where.value}, unchanged"


def document_of(item: Inspected) -> str:
    """The text the operator edits for ``item`` (see edit_rules.render)."""
    return render(original_of(item))


def original_of(item: Inspected) -> Edited:
    return editable(item.message.body, item.message.attributes)


def edit_and_retry(tool: Tool, item: Inspected, new_document: str) -> EditReport:
    """Send ``item`` edited as ``new_document`` says to its source queue, recorded in the trail.

    Before anything is sent: the document is checked (DocumentError, Unchanged: both ValueErrors),
    the archive and the source queue must exist (UsageError, NotFound). Then: the message is found
    again (NotFound when it moved meanwhile: nothing sent), its original archived (an AwsCallError:
    nothing sent), the edit sent (a failure is in the report: the original stays), and only then
    the original deleted (a failure is in the report: both queues hold it).
    """
    edited = changed(new_document, original_of(item))
    destination = tool.source_for(item)
    if destination is None:
        raise NotFound(f"no configured source queue is {inert_str(item.source)}: the edit has nowhere to go")
    bucket = tool.deployment.archive_bucket
    if not bucket:
        raise UsageError(
            "this re-driver has no archive bucket (archive=False, or --archive-bucket not given): an edit "
            "archives the original first, so it cannot edit"
        )
    ticket = new_ticket(tool)
    now = ticket.at
    report = EditReport(
        item.message.message_id, item.identity, item.where, edit_archive_key(item, now), destination.url
    )
    details = {
        "id": report.message_id,
        "identity": report.identity,
        "from": item.where.value,
        "archive_key": report.archive_key,
        "to": destination.url,
    }
    with tool.action("edit", **details) as tally, tool.scan(item.where) as scan:
        current = _found_again(scan.batches(), item)
        document = archive_document(current, edited, who=tool.who, now=now, source_queue=destination.url)
        try:
            S3Archive(bucket, tool.client("s3")).put(report.archive_key, document)
        except AwsCallError as exc:
            raise AwsCallError(f"cannot archive the original, so nothing was sent: {exc}") from exc
        report.archived = True
        sending = _outgoing(current, edited, now, report.archive_key, destination.url, ticket.verdict_key)
        try:
            _send_then_delete(tool, scan, current, destination, sending, ticket, report)
        except KeyboardInterrupt:
            # From the send on, the operator must learn what may have gone: the report, not a stop.
            report.interrupted = True
            report.error = "interrupted " + ("after the edit was sent" if report.sent else "while sending it")
        tally.count = int(report.sent)
        tally.problem = report.error
    return report


def _send_then_delete(
    tool: Tool,
    scan: QueueScan,
    current: Inspected,
    destination: Destination,
    sending: Outgoing,
    ticket: Ticket,
    report: EditReport,
) -> None:
    """Send the edit; only once it arrived, delete the original and record what was sent."""
    result = destination.send([sending])
    if result.succeeded:
        report.sent = True
        _delete_original(scan, current, report)
        _record(tool, current, destination.url, ticket, report)
        return
    failure = result.failed.get("0")
    report.error = result.call_error or (f"{failure.code}: {failure.message}" if failure else "not sent")


def _outgoing(
    current: Inspected, edited: Edited, now: int, archive_key: str, url: str, verdict_key: str
) -> Outgoing:
    """The edited message as it is sent: the original's identity and system attributes (FIFO group,
    trace header), the edit in its mark with the verdict key of its outcome record (the consumer
    kit reports under it), a FIFO deduplication id of its own."""
    mark = current.mark or Mark(identity=current.identity, first_failed_at=current.failed_at)
    edited_mark = replace(mark.edited(now, archive_key), verdict_key=verdict_key)
    tracked = Tracked(replace(current.message, body=edited.body, attributes=edited.attributes), edited_mark)
    return outgoing(
        "0",
        tracked,
        edited_mark.to_json(),
        delay=0,
        deduplication_id=fifo.deduplication_id(tracked, EDIT_STEP),
        fifo=url.endswith(".fifo"),
    )


def _record(tool: Tool, item: Inspected, source_url: str, ticket: Ticket, report: EditReport) -> None:
    """Record the edit sent, for ``outcome``; a failed write is said in the report, never hides
    that the edit went."""
    try:
        record_sent(
            tool,
            ReplayKind.EDIT,
            [Sent.of(item, source_url)],
            detail=f"edit of {item.identity}",
            ticket=ticket,
        )
        report.replay_id = ticket.replay_id
    except AwsCallError as exc:
        report.error = report.error or f"sent, but not recorded for `outcome`: {exc}"


def _found_again(batches: Iterator[list[Inspected]], item: Inspected) -> Inspected:
    """The message again, with a receipt handle of this scan's (the one shown may be stale)."""
    for batch in batches:
        for candidate in batch:
            if candidate.message.message_id == item.message.message_id:
                return candidate
    raise NotFound(
        f"message {inert_str(item.message.message_id)} moved meanwhile: it is no longer in the "
        f"{item.where.value} (replayed, purged or re-driven, or held by a run: look again with `show`); "
        "nothing was sent"
    )


def _delete_original(scan: QueueScan, current: Inspected, report: EditReport) -> None:
    message_id = current.message.message_id
    try:
        result = scan.queue.delete({message_id: scan.handle(message_id, current.message.receipt_handle)})
    except AwsCallError as exc:
        report.error = str(exc)
        return
    if message_id in result.succeeded:
        scan.forget([message_id])
        report.deleted = True
    else:
        failure = result.failed.get(message_id)
        report.error = f"{failure.code}: {failure.message}" if failure else "not deleted"


def edit_archive_key(item: Inspected, now: int) -> str:
    """``edited/<yyyy/mm/dd>/<identity>/<time>-<MessageId>.json``: unique per edit, browsable by
    day and identity, within the mark's key limits (message_limits.MAX_EDIT_KEY_CHARS)."""
    day = time.strftime("%Y/%m/%d", time.gmtime(now))
    message_id = KEY_UNSAFE.sub("_", item.message.message_id)[:KEY_MESSAGE_ID_CHARS]
    identity = KEY_UNSAFE.sub("_", item.identity)[:MAX_IDENTITY_CHARS]
    return f"{EDIT_ARCHIVE_PREFIX}/{day}/{identity}/{now}-{message_id}.json"


def archive_document(item: Inspected, edited: Edited, *, who: str, now: int, source_queue: str) -> bytes:
    """The original whole (body, attributes, mark with any parking reason, where it was), who edited
    it and when, and what it became: enough to send the original again."""
    mark = item.mark
    parked = dict(item.parked) if item.parked is not None else None
    document = {
        "edited_at": now,
        "edited_by": who,
        "from": item.where.value,
        "message_id": item.message.message_id,
        "identity": item.identity,
        "source_queue": source_queue,
        "body": item.message.body,
        "message_attributes": {name: shown_attribute(v) for name, v in item.message.attributes.items()},
        "system_attributes": dict(item.message.system_attributes),
        "mark": json.loads(mark.to_json(**({"parked": parked} if parked else {}))) if mark else None,
        "edited_to": {
            "body": edited.body,
            "message_attributes": {name: shown_attribute(v) for name, v in edited.attributes.items()},
        },
    }
    return json.dumps(document, ensure_ascii=False, sort_keys=True).encode("utf-8")
