"""The editable document of a message and its rules: pure, no AWS.

An operator edits one JSON text, ``{"body": ..., "attributes": {...}}``: the body as JSON when it
was a JSON object or array (else as a string), and the message attributes as SQS gives them
(binary values in base64), the re-driver's mark left out. ``parse`` reads the edited text back into
an ``Edited`` message, and refuses, with a ``DocumentError`` naming the field, anything SQS would
refuse or that would leave no room for the mark.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqs_redriver.console import exact_json
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, MessageAttributes, message_size
from sqs_redriver.protocol.limits import (
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
from sqs_redriver.protocol.wire import json_depth

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


class DocumentError(ValueError):
    """An edited document SQS or the re-driver would refuse: ``field`` names where, the message what
    is allowed."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


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
    text = exact_json.dumps(document, indent=2) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return exact_json.dumps(document, indent=2, ensure_ascii=True) + "\n"
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
        body = exact_json.dumps(value)
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
    """JSON as RFC 8259 has it, every number exact (exact_json)."""
    return exact_json.loads(text)


def _name(name: str) -> str:
    """A name from the document, cut short for an error message."""
    return json.dumps(name[:SHOWN_NAME_CHARS] + ("..." if len(name) > SHOWN_NAME_CHARS else ""))


class Unchanged(ValueError):
    """The edited document says what the message already says."""


def changed(text: str, original: Edited) -> Edited:
    """``parse``, and Unchanged when the edit changes nothing (nothing to send)."""
    edited = parse(text, original)
    if edited == original:
        raise Unchanged("no change: nothing sent")
    return edited
