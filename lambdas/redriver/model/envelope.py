"""What the re-driver knows about one DLQ message, and how that travels with the message.

SQS gives every SendMessage a new MessageId, so a message's identity and re-drive count travel in
one reserved message attribute (the *mark*). When a message has no room for the mark (10
attributes already, or the mark would push it past the size limit), its identity is a hash of its
content and its count lives only in the state table.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from redriver.model.failure import Failure
from redriver.sqs_limits import SQS_MAX_MESSAGE_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES

MARK_ATTRIBUTE = "dlq-redriver"
MAX_MESSAGE_ATTRIBUTES = SQS_MAX_MESSAGE_ATTRIBUTES
MAX_MESSAGE_BYTES = SQS_MAX_MESSAGE_BYTES
# Bytes reserved for the mark attribute (name, type and value, parking reason included); a message
# is only marked when it still fits the size limit with this much added. Settings cap the history
# length so a mark always fits (tested).
MARK_BUDGET_BYTES = 4096
HASH_IDENTITY_PREFIX = "sha256:"
# Replays an operator made of a parked message, kept in its mark (the last ones).
MAX_REPLAYS = 10

MessageAttributes = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Mark:
    """The re-drive history of one logical message, keyed by an identity that survives sends.

    The consumer kit adds ``failure`` when it dead-letters a message; the re-driver adds
    ``verdict_key`` (where the kit reports the consumer's verdict) and ``probe`` (a probe's first
    failure goes straight back to the DLQ) when it re-drives one. The operator's tool adds an entry
    to ``replays`` (replayed at, re-drive count before the replay) when it replays a parked one.
    """

    identity: str
    count: int = 0
    first_failed_at: int = 0
    redriven_at: tuple[int, ...] = ()
    failure: Failure | None = None
    verdict_key: str | None = None
    probe: bool = False
    replays: tuple[tuple[int, int], ...] = ()

    @property
    def last_redriven_at(self) -> int | None:
        return self.redriven_at[-1] if self.redriven_at else None

    @property
    def last_sent_at(self) -> int | None:
        """When it last went to its source queue: its last re-drive or its last replay."""
        last_replay = self.replays[-1][0] if self.replays else None
        times = [t for t in (self.last_redriven_at, last_replay) if t is not None]
        return max(times) if times else None

    def after_redrive(self, now: int, *, verdict_key: str | None = None, probe: bool = False) -> Mark:
        """The mark of the next re-drive; the last failure stays behind (the next one replaces it)."""
        return replace(
            self,
            count=self.count + 1,
            redriven_at=(*self.redriven_at, now),
            failure=None,
            verdict_key=verdict_key,
            probe=probe,
        )

    def replayed(self, now: int) -> Mark:
        """The mark of a parked message an operator sends back to its source: a fresh start (count
        0, no history, no failure), its first failure's time kept, and the replay recorded (the
        last ``MAX_REPLAYS``)."""
        return replace(
            self,
            count=0,
            redriven_at=(),
            failure=None,
            verdict_key=None,
            probe=False,
            replays=(*self.replays, (now, self.count))[-MAX_REPLAYS:],
        )

    def to_json(self, **extra: Any) -> str:
        payload: dict[str, Any] = {
            "id": self.identity,
            "n": self.count,
            "first": self.first_failed_at,
            "at": list(self.redriven_at),
        }
        if self.failure is not None:
            payload["err"] = self.failure.to_dict()
        if self.verdict_key is not None:
            payload["v"] = self.verdict_key
        if self.probe:
            payload["p"] = 1
        if self.replays:
            payload["rp"] = [[at, count] for at, count in self.replays]
        payload.update(extra)
        return json.dumps(payload, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Mark:
        """Parse a mark; raise ValueError when the text is not one this re-driver wrote."""
        try:
            payload = json.loads(text)
            mark = cls(
                identity=str(payload["id"]),
                count=int(payload["n"]),
                first_failed_at=int(payload["first"]),
                redriven_at=tuple(int(t) for t in payload["at"]),
                failure=Failure.from_dict(payload["err"]) if "err" in payload else None,
                verdict_key=str(payload["v"]) if "v" in payload else None,
                probe=bool(payload.get("p")),
                replays=tuple((int(at), int(count)) for at, count in payload.get("rp", ())),
            )
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a re-drive mark: {text[:80]!r}") from exc
        if mark.count < 0 or not isinstance(payload["id"], str) or not mark.identity:
            raise ValueError(f"not a re-drive mark: {text[:80]!r}")
        return mark


@dataclass(frozen=True)
class DlqMessage:
    """One message received from the DLQ, with the re-driver's mark split off its attributes."""

    message_id: str
    receipt_handle: str
    body: str
    attributes: MessageAttributes = field(default_factory=dict)
    system_attributes: Mapping[str, str] = field(default_factory=dict)
    mark: Mark | None = None
    malformed_mark: bool = False

    # Cached: both read the whole body (up to 1 MiB), and a run asks several times per message.
    @cached_property
    def has_room_for_mark(self) -> bool:
        """True when the mark fits: fewer than 10 attributes and size within the SQS limit."""
        if len(self.attributes) >= MAX_MESSAGE_ATTRIBUTES:
            return False
        return message_size(self.body, self.attributes) + MARK_BUDGET_BYTES <= MAX_MESSAGE_BYTES

    @cached_property
    def content_identity(self) -> str:
        """An identity derived from body and attributes, for messages that cannot carry a mark."""
        digest = hashlib.sha256(self.body.encode("utf-8"))
        for name in sorted(self.attributes):
            value = self.attributes[name]
            digest.update(b"\0" + name.encode("utf-8") + b"\0" + value["DataType"].encode("utf-8"))
            digest.update(b"\0" + _attribute_value_bytes(value))
        return HASH_IDENTITY_PREFIX + digest.hexdigest()

    @property
    def source_arn(self) -> str | None:
        return self.system_attributes.get("DeadLetterQueueSourceArn")


def from_sqs(raw: Mapping[str, Any]) -> DlqMessage:
    """Build a DlqMessage from one entry of a ReceiveMessage response."""
    attributes = dict(raw.get("MessageAttributes") or {})
    mark_value = attributes.pop(MARK_ATTRIBUTE, None)
    mark: Mark | None = None
    malformed = False
    if mark_value is not None:
        try:
            mark = Mark.from_json(mark_value.get("StringValue", ""))
        except ValueError:
            malformed = True
    return DlqMessage(
        message_id=raw["MessageId"],
        receipt_handle=raw["ReceiptHandle"],
        body=raw.get("Body", ""),
        attributes=attributes,
        system_attributes=dict(raw.get("Attributes") or {}),
        mark=mark,
        malformed_mark=malformed,
    )


def string_attribute(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}


def _attribute_value_bytes(value: Mapping[str, Any]) -> bytes:
    if "BinaryValue" in value:
        binary = value["BinaryValue"]
        return binary if isinstance(binary, bytes) else bytes(binary)
    return str(value.get("StringValue", "")).encode("utf-8")


def attribute_size(name: str, value: Mapping[str, Any]) -> int:
    """Bytes SQS counts for one attribute: name, data type and value, in UTF-8."""
    return (
        len(name.encode("utf-8"))
        + len(value["DataType"].encode("utf-8"))
        + len(_attribute_value_bytes(value))
    )


def message_size(body: str, attributes: MessageAttributes) -> int:
    """Bytes SQS counts against the message size limit: UTF-8 body plus every attribute."""
    return len(body.encode("utf-8")) + sum(attribute_size(name, value) for name, value in attributes.items())
