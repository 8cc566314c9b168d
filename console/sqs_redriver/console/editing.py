"""Edit and retry: a dead or parked message, corrected by the operator, sent back to its source.

In three parts, each using the one before it:

- exact JSON (``exact_loads``, ``exact_dumps``): numbers read and written as they were;
- the editable document and its rules, pure (no AWS): one JSON text, ``{"body": ..., "attributes":
  {...}}``, the body as JSON when it was a JSON object or array (else as a string), the message
  attributes as SQS gives them (binary values in base64), the re-driver's mark left out. ``parse``
  reads the edited text back into an ``Edited`` message, and refuses, with a ``DocumentError``
  naming the field, anything SQS would refuse or that would leave no room for the mark;
- the edit and retry itself (``edit_and_retry``), inside the action's audit record: the original
  archived first (S3, under ``edited/``), the edited message sent with the same identity and its
  mark recording the edit, and only once it arrived the original deleted (a ``Transfer``,
  core/transfer.py).

A dead letter of another service is edited the same way, but what the operator edits is its
payload (what goes back to its target: a function's event, a rule's event, what SNS would have
delivered) and the attributes delivered with it; the edit goes to its source's one target. It
carries no mark: its identity is its source's and its payload's, so the edited one is another
(``edited_identity``), and its outcome follows that one.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import math
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from sqs_redriver.console.aws import QueueScan
from sqs_redriver.console.errors import DocumentError, NotFound, Unchanged, UsageError
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.console.outcomes import ReplayKind, Sent, Ticket, new_ticket, record_sent
from sqs_redriver.console.replay import Destination, ScannedOrigin
from sqs_redriver.console.safe_text import inert_str
from sqs_redriver.console.tool import Tool
from sqs_redriver.core import delivery
from sqs_redriver.core.archive import S3Archive
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.message import Tracked, deduplication_id
from sqs_redriver.core.sqs import Outgoing, outgoing
from sqs_redriver.core.transfer import Transfer
from sqs_redriver.protocol.dead_letters import FUNCTION_DLQ_ATTRIBUTES, compact_json
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, MessageAttributes, message_size
from sqs_redriver.protocol.keys import EDIT_ARCHIVE_PREFIX
from sqs_redriver.protocol.limits import (
    MAX_IDENTITY_CHARS,
    MAX_MARK_BYTES,
    SQS_ATTRIBUTE_NAME_CHARACTERS,
    SQS_INVALID_CHARACTERS,
    SQS_MAX_ATTRIBUTE_NAME_CHARS,
    SQS_MAX_ATTRIBUTE_TYPE_CHARS,
    SQS_MAX_MESSAGE_ATTRIBUTES,
    SQS_MAX_MESSAGE_BYTES,
    SQS_MAX_NUMBER_DIGITS,
    SQS_RESERVED_ATTRIBUTE_PREFIXES,
)
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.sources import SourceKind
from sqs_redriver.protocol.wire import json_depth

# Exact JSON: a message body the operator edits must not have a number it holds rounded
# (``0.10000000000000000001`` or an amount's ``1.50`` through a float). Strict as RFC 8259 has it:
# no NaN or Infinity, no number too large for a float (consumers parse them as floats), no key
# twice; ValueError names what is wrong.

SHOWN_KEY_CHARS = 40


def exact_loads(text: str) -> Any:
    """``text`` as JSON, its non-integer numbers as ``Decimal`` (the literal's exact value)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_exact, object_pairs_hook=_unique)


def exact_dumps(value: Any, *, indent: int | None = None, ensure_ascii: bool = False) -> str:
    """``value`` as JSON (``json.dumps``'s forms), a ``Decimal`` written as its exact literal."""
    return _dump(value, indent, ensure_ascii, 0)


def _dump(value: Any, indent: int | None, ensure_ascii: bool, level: int) -> str:
    if isinstance(value, Decimal):
        return str(value)
    if not isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=ensure_ascii)
    colon = ":" if indent is None else ": "
    items = (
        [
            json.dumps(key, ensure_ascii=ensure_ascii) + colon + _dump(item, indent, ensure_ascii, level + 1)
            for key, item in value.items()
        ]
        if isinstance(value, dict)
        else [_dump(item, indent, ensure_ascii, level + 1) for item in value]
    )
    opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
    if not items or indent is None:
        return opening + ",".join(items) + closing
    inner, outer = "\n" + " " * indent * (level + 1), "\n" + " " * indent * level
    return opening + inner + ("," + inner).join(items) + outer + closing


def _exact(text: str) -> Decimal:
    if not math.isfinite(float(text)):
        raise ValueError(f"the number {text[:24]} is too large")
    return Decimal(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            shown = key[:SHOWN_KEY_CHARS] + ("..." if len(key) > SHOWN_KEY_CHARS else "")
            raise ValueError(f"the key {json.dumps(shown)} is given twice")
        found[key] = value
    return found


# The editable document of a message and its rules: pure, no AWS.

# A body nested deeper than this is edited as text (Python's JSON parser recurses).
MAX_BODY_JSON_DEPTH = 100
# The document and an attribute's value wrap the body: {"body": ..., "attributes": {"n": {...}}}.
MAX_DOCUMENT_DEPTH = MAX_BODY_JSON_DEPTH + 1
# What the body and its attributes may weigh: SQS's limit less the bytes kept for the mark.
MAX_EDITED_BYTES = SQS_MAX_MESSAGE_BYTES - MAX_MARK_BYTES
# At most this many attributes of the operator's: the mark is the tenth.
MAX_EDITED_ATTRIBUTES = SQS_MAX_MESSAGE_ATTRIBUTES - 1
DOCUMENT_KEYS = ("body", "attributes")
NAME_PATTERN = re.compile(f"[{SQS_ATTRIBUTE_NAME_CHARACTERS}]+")
TYPE_PATTERN = re.compile(f"(String|Number|Binary)(\\.[{SQS_ATTRIBUTE_NAME_CHARACTERS}]+)?")
NUMBER_PATTERN = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
INVALID_CHARACTER = re.compile(SQS_INVALID_CHARACTERS)
SHOWN_NAME_CHARS = 60


@dataclass(frozen=True)
class Edited:
    """A message's body and attributes (SQS's form: binary values as bytes), the mark left out."""

    body: str
    attributes: Mapping[str, Mapping[str, Any]]

    @property
    def size(self) -> int:
        return message_size(self.body, self.attributes)


def editable(body: str, attributes: MessageAttributes) -> Edited:
    """A message's body and attributes (the mark already split off) as the edit starts from them."""
    return Edited(body, {name: _sqs_form(value) for name, value in attributes.items()})


def render(message: Edited) -> str:
    """The document the operator edits: indented JSON, the body's own key order kept; characters
    as they are, unless the body's JSON escapes a lone surrogate (then every one escaped)."""
    structured = structured_body(message.body)
    document = {
        "body": message.body if structured is None else structured,
        "attributes": {name: shown_attribute(value) for name, value in sorted(message.attributes.items())},
    }
    text = exact_dumps(document, indent=2) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return exact_dumps(document, indent=2, ensure_ascii=True) + "\n"
    return text


def shown_attribute(value: Mapping[str, Any]) -> dict[str, str]:
    """An attribute as JSON holds it: binary values in base64."""
    if "BinaryValue" in value:
        binary = value["BinaryValue"]
        encoded = base64.b64encode(binary if isinstance(binary, bytes) else bytes(binary)).decode("ascii")
        return {"DataType": str(value["DataType"]), "BinaryValue": encoded}
    return {"DataType": str(value["DataType"]), "StringValue": str(value.get("StringValue", ""))}


def _sqs_form(value: Mapping[str, Any]) -> dict[str, Any]:
    if "BinaryValue" in value:
        binary = value["BinaryValue"]
        return {"DataType": value["DataType"], "BinaryValue": bytes(binary)}
    return {"DataType": value["DataType"], "StringValue": value.get("StringValue", "")}


def structured_body(body: str) -> Any:
    """The body as a JSON object or array when it is one (strict JSON, not too deep), else None."""
    if json_depth(body) > MAX_BODY_JSON_DEPTH:
        return None
    try:
        value = _strict_json(body)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def parse(text: str, original: Edited) -> Edited:
    """The edited document, checked: valid JSON with a body and attributes SQS accepts, within its
    limits with room for the mark, and a body that stays JSON when it was. Raises DocumentError."""
    if json_depth(text) > MAX_DOCUMENT_DEPTH:
        raise DocumentError("document", f"nests more than {MAX_DOCUMENT_DEPTH} deep")
    try:
        document = _strict_json(text)
    except ValueError as exc:
        raise DocumentError("document", f"is not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise DocumentError("document", 'must be a JSON object: {"body": ..., "attributes": {...}}')
    unknown = sorted(set(document) - set(DOCUMENT_KEYS))
    if unknown or "body" not in document:
        problem = f"has {_name(unknown[0])}" if unknown else "has no body"
        raise DocumentError("document", f'{problem}: it holds "body" and "attributes" only')
    edited = Edited(_body(document["body"], original.body), _attributes(document.get("attributes", {})))
    check_limits(edited)
    return edited


def check_limits(message: Edited) -> None:
    """SQS's limits, with room for the re-driver's mark (one attribute, ``MAX_MARK_BYTES``)."""
    if len(message.attributes) > MAX_EDITED_ATTRIBUTES:
        raise DocumentError(
            "attributes",
            f"{len(message.attributes)} of them and the re-driver's mark make {len(message.attributes) + 1}; "
            f"SQS takes {SQS_MAX_MESSAGE_ATTRIBUTES}: keep at most {MAX_EDITED_ATTRIBUTES}",
        )
    size = message.size
    if size > MAX_EDITED_BYTES:
        field = "body" if len(message.body.encode("utf-8")) > MAX_EDITED_BYTES else "attributes"
        raise DocumentError(
            field,
            f"the body and attributes would be {size} bytes; SQS takes {SQS_MAX_MESSAGE_BYTES} in all, "
            f"{MAX_MARK_BYTES} of them kept for the re-driver's mark: at most {MAX_EDITED_BYTES}",
        )


def diff(before: str, after: str) -> str:
    """A unified diff of two documents, for the operator to confirm."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), "before", "after"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _body(value: object, original: str) -> str:
    was_json = structured_body(original)
    if isinstance(value, dict | list):
        if value == was_json:
            return original  # unchanged: its own spacing and number forms kept
        body = exact_dumps(value)
    elif isinstance(value, str):
        body = value
        if was_json is not None and structured_body(body) is None:
            raise DocumentError(
                "body", "was a JSON object or array and must stay one (give it as JSON, or as text that is)"
            )
    else:
        raise DocumentError("body", "must be a JSON object or array (sent as JSON) or a string (sent as is)")
    if not body:
        raise DocumentError("body", "is empty: SQS takes no empty message")
    _check_characters(body, "body")
    return body


def _attributes(value: object) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise DocumentError(
            "attributes", 'must be an object: {"name": {"DataType": ..., "StringValue": ...}}'
        )
    return {_attribute_name(name): _attribute(name, entry) for name, entry in value.items()}


def _attribute_name(name: str) -> str:
    field = f"attributes.{_name(name)}"
    if len(name) > SQS_MAX_ATTRIBUTE_NAME_CHARS or not NAME_PATTERN.fullmatch(name):
        raise DocumentError(
            field, f"a name is 1 to {SQS_MAX_ATTRIBUTE_NAME_CHARS} of {SQS_ATTRIBUTE_NAME_CHARACTERS}"
        )
    if name.startswith(".") or name.endswith(".") or ".." in name:
        raise DocumentError(field, "a name neither starts nor ends with a period, nor has two in a row")
    if name.lower().startswith(SQS_RESERVED_ATTRIBUTE_PREFIXES):
        raise DocumentError(field, "names starting with AWS. or Amazon. are reserved by AWS")
    if name == MARK_ATTRIBUTE:
        raise DocumentError(field, "is the re-driver's mark: the tool writes it (leave it out)")
    return name


def _attribute(name: str, entry: object) -> dict[str, Any]:
    field = f"attributes.{_name(name)}"
    if not isinstance(entry, dict):
        raise DocumentError(field, 'must be {"DataType": ..., "StringValue": ...} (or "BinaryValue": base64)')
    data_type = entry.get("DataType")
    if (
        not isinstance(data_type, str)
        or len(data_type) > SQS_MAX_ATTRIBUTE_TYPE_CHARS
        or not TYPE_PATTERN.fullmatch(data_type)
    ):
        raise DocumentError(f"{field}.DataType", "is String, Number or Binary, with an optional .label")
    binary = data_type.startswith("Binary")
    value_key = "BinaryValue" if binary else "StringValue"
    if set(entry) != {"DataType", value_key}:
        raise DocumentError(
            field, f'a {data_type.split(".")[0]} attribute holds "DataType" and "{value_key}" only'
        )
    value = entry[value_key]
    if not isinstance(value, str) or not value:
        raise DocumentError(f"{field}.{value_key}", "must be a non-empty string")
    if binary:
        return {"DataType": data_type, "BinaryValue": _binary(value, f"{field}.{value_key}")}
    _check_characters(value, f"{field}.{value_key}")
    if data_type.startswith("Number"):
        _check_number(value, f"{field}.{value_key}")
    return {"DataType": data_type, "StringValue": value}


def _binary(value: str, field: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise DocumentError(field, "is not base64") from None


def _check_number(value: str, field: str) -> None:
    digits = sum(char.isdigit() for char in value.split("e")[0].split("E")[0])
    if not NUMBER_PATTERN.fullmatch(value) or digits > SQS_MAX_NUMBER_DIGITS:
        raise DocumentError(field, f"is not a number SQS takes (at most {SQS_MAX_NUMBER_DIGITS} digits)")


def _check_characters(text: str, field: str) -> None:
    found = INVALID_CHARACTER.search(text)
    if found:
        code = ord(found.group())
        raise DocumentError(field, f"holds U+{code:04X} at {found.start()}, a character SQS refuses")


def _strict_json(text: str) -> Any:
    """JSON as RFC 8259 has it, every number exact (``exact_loads``)."""
    return exact_loads(text)


def _name(name: str) -> str:
    """A name from the document, cut short for an error message."""
    return json.dumps(name[:SHOWN_NAME_CHARS] + ("..." if len(name) > SHOWN_NAME_CHARS else ""))


def changed(text: str, original: Edited) -> Edited:
    """``parse``, and Unchanged when the edit changes nothing (nothing to send)."""
    edited = parse(text, original)
    if edited == original:
        raise Unchanged("no change: nothing sent")
    return edited


# Edit and retry: the edited message sent, the original archived and then deleted.

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
    """The text the operator edits for ``item`` (see ``render``)."""
    return render(original_of(item))


def original_of(item: Inspected) -> Edited:
    """What the edit starts from: the message, or a dead letter's payload and the attributes
    delivered with it; UsageError for a dead letter that cannot go back (nothing to edit)."""
    dead_letter = item.dead_letter
    if dead_letter is None:
        return editable(item.message.body, item.message.attributes)
    refusal = item.unreplayable
    if refusal is not None or dead_letter.payload is None:
        shown = inert_str(item.message.message_id)
        raise UsageError(f"message {shown} cannot be edited and sent back: {refusal}")
    return editable(dead_letter.payload, dead_letter.attributes)


def edited_identity(item: Inspected, payload: str) -> str:
    """The identity of a dead letter edited to ``payload``: its source's and the payload's as the
    source writes it back when it fails again (a function's destination record holds the event
    re-serialised as compact JSON; a function's DLQ, the event as it was invoked), so that
    ``outcome`` finds it back in the DLQ under it."""
    dead_letter = item.dead_letter
    assert dead_letter is not None and dead_letter.source is not None, "a dead letter of a source"
    returned = payload
    from_record = not any(name in item.message.attributes for name in FUNCTION_DLQ_ATTRIBUTES)
    if dead_letter.source.kind is SourceKind.FUNCTION and from_record:
        try:
            returned = compact_json(json.loads(payload))
        except (ValueError, RecursionError):  # not JSON (Lambda refuses it), or too deep to read back
            returned = payload
    return replace(item.message, dead_letter=replace(dead_letter, payload=returned)).content_identity


def edit_and_retry(tool: Tool, item: Inspected, new_document: str) -> EditReport:
    """Send ``item`` edited as ``new_document`` says to its source queue (a dead letter's payload to
    its source's target), recorded in the trail.

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
    to = destination.source.target_arn if isinstance(destination, delivery.Target) else destination.url
    bucket = tool.deployment.archive_bucket
    if not bucket:
        raise UsageError(
            "this re-driver has no archive bucket (archive=False, or --archive-bucket not given): an edit "
            "archives the original first, so it cannot edit"
        )
    ticket = new_ticket(tool)
    now = ticket.at
    report = EditReport(item.message.message_id, item.identity, item.where, edit_archive_key(item, now), to)
    details = {
        "id": report.message_id,
        "identity": report.identity,
        "from": item.where.value,
        "archive_key": report.archive_key,
        "to": to,
    }
    with tool.action("edit", **details) as tally, tool.scan(item.where) as scan:
        current = _found_again(scan.batches(), item)
        document = archive_document(current, edited, who=tool.who, now=now, source_queue=to)
        try:
            S3Archive(bucket, tool.client("s3")).put(report.archive_key, document)
        except AwsCallError as exc:
            raise AwsCallError(f"cannot archive the original, so nothing was sent: {exc}") from exc
        report.archived = True
        edit = _as_edited(current, edited, now, report.archive_key, ticket.verdict_key)
        try:
            _send_then_delete(tool, scan, current, destination, edit, ticket, report)
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
    edit: Tracked,
    ticket: Ticket,
    report: EditReport,
) -> None:
    """Send the edit (with a FIFO deduplication id of its own); only once it arrived, delete the
    original and record what was sent."""
    transfer = Transfer(ScannedOrigin(scan))
    result = destination.send([_sending(edit, destination)])
    transfer.book(result, [edit])
    if not transfer.arrived:
        failure = result.failed.get("0")
        report.error = result.call_error or (f"{failure.code}: {failure.message}" if failure else "not sent")
        return
    report.sent = True
    _delete_original(transfer, report)
    _record(tool, current, edit, destination.url, ticket, report)


def _sending(edit: Tracked, destination: Destination) -> Outgoing:
    """The edit as it goes: with its mark; a dead letter's, as its target gets it (no mark)."""
    if edit.message.dead_letter is not None:
        return Outgoing("0", edit.message.body, edit.message.attributes)
    return outgoing(
        "0",
        edit,
        edit.mark.to_json(),
        delay=0,
        deduplication_id=deduplication_id(edit, EDIT_STEP),
        fifo=destination.url.endswith(".fifo"),
    )


def _as_edited(current: Inspected, edited: Edited, now: int, archive_key: str, verdict_key: str) -> Tracked:
    """The original as its edit goes out: its identity and system attributes (FIFO group, trace
    header), the edited body and attributes, the edit in its mark with the verdict key of its
    outcome record (the consumer kit reports under it)."""
    mark = current.mark or Mark(identity=current.identity, first_failed_at=current.failed_at)
    edited_mark = replace(mark.edited(now, archive_key), verdict_key=verdict_key)
    return Tracked(replace(current.message, body=edited.body, attributes=edited.attributes), edited_mark)


def _record(
    tool: Tool, item: Inspected, edit: Tracked, source_url: str, ticket: Ticket, report: EditReport
) -> None:
    """Record the edit sent, for ``outcome`` (a dead letter's under its edited identity); a failed
    write is said in the report, never hides that the edit went."""
    sent = Sent.of(item, source_url)
    if item.dead_letter is not None:
        sent = replace(sent, identity=edited_identity(item, edit.message.body))
    try:
        record_sent(tool, ReplayKind.EDIT, [sent], detail=f"edit of {item.identity}", ticket=ticket)
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


def _delete_original(transfer: Transfer, report: EditReport) -> None:
    """Delete the original, which arrived edited; a failure is said in the report."""
    deleted = transfer.delete_arrived()
    if deleted.succeeded:
        report.deleted = True
        return
    failure = next(iter(deleted.failed.values()), None)
    report.error = deleted.call_error or (f"{failure.code}: {failure.message}" if failure else "not deleted")


def edit_archive_key(item: Inspected, now: int) -> str:
    """``edited/<yyyy/mm/dd>/<identity>/<time>-<MessageId>.json``: unique per edit, browsable by
    day and identity, within the mark's key limits (protocol.limits.MAX_EDIT_KEY_CHARS)."""
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
