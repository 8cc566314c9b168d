"""A consumer's verdict on one delivery, as the consumer kit writes it and the re-driver reads it.

This module is the protocol between the two: the failure the kit carries in a message's mark
(``err``), the verdict counters it adds to the state table for the re-driver's runs, and the
attributes of those records (their keys are built in keys.py). Neither side has a copy of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqs_redriver.protocol import wire
from sqs_redriver.protocol.limits import (
    FINGERPRINT_PATTERN,
    MAX_COUNT,
    MAX_EPOCH_SECONDS,
    MAX_ERROR_CLASS_CHARS,
    MAX_ERROR_MESSAGE_CHARS,
    MAX_FINGERPRINT_CHARS,
    MAX_QUEUE_ARN_CHARS,
)
from sqs_redriver.protocol.redact import redact_untrusted
from sqs_redriver.protocol.str_enum import StrEnum
from sqs_redriver.protocol.wire import Rejection

# The longest error message and class kept in a mark (limits.py) are also bounded as JSON
# (non-ASCII is escaped: up to 12 bytes a character), so a mark with a failure and a parking
# reason still fits its budget (tested).
MAX_ERROR_MESSAGE_JSON_BYTES = 480
MAX_ERROR_CLASS_JSON_BYTES = 240
FAILURE_SUBJECT = "a consumer failure"
# Verdict and failure records are read within minutes; a day is plenty.
VERDICT_RECORD_TTL_SECONDS = 86_400

# The attributes the kit writes (UpdateItem), the key included: its IAM grant allows these alone.
FAILURE_RECORD_ATTRIBUTES = ("pk", "failure", "failed_at", "expires_at")
VERDICT_RECORD_ATTRIBUTES = ("pk", "ok", "transient", "terminal", "fingerprints", "expires_at")


class FailureKind(StrEnum):
    TERMINAL = "terminal"  # it will never succeed as it is: park it, never re-drive it
    TRANSIENT = "transient"  # trying again later may succeed: back off and re-drive


class ConsumerVerdict(StrEnum):
    """What the consumer made of one delivery of a re-driven message."""

    OK = "ok"
    TRANSIENT = "transient"
    TERMINAL = "terminal"


@dataclass(frozen=True)
class Failure:
    """Why the consumer failed a message: written by the consumer kit, carried in the mark."""

    kind: FailureKind
    error_class: str
    message: str
    fingerprint: str
    at: int
    attempt: int
    source: str  # the ARN of the queue the consumer received it from

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "class": bounded(self.error_class, MAX_ERROR_CLASS_CHARS, MAX_ERROR_CLASS_JSON_BYTES),
            "msg": bounded(self.message, MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_MESSAGE_JSON_BYTES),
            "fp": self.fingerprint,
            "at": self.at,
            "try": self.attempt,
            "src": self.source,
        }

    @classmethod
    def from_dict(cls, payload: object) -> Failure:
        """Parse a failure; raise a ``Rejection`` (a ValueError) naming the field that is not one
        the consumer kit writes (limits in limits.py). Its words are redacted as they are read:
        the kit redacted them, but anyone who may send to the DLQ can write a mark."""
        if not isinstance(payload, Mapping):
            raise Rejection("", "is not a JSON object", subject=FAILURE_SUBJECT)
        try:
            kind = wire.text_of(payload, "kind", max_chars=16)
            if kind not in set(FailureKind):
                raise Rejection("kind", f"is {kind!r}, not terminal or transient")
            return cls(
                kind=FailureKind(kind),
                error_class=_words(payload, "class", MAX_ERROR_CLASS_CHARS),
                message=_words(payload, "msg", MAX_ERROR_MESSAGE_CHARS),
                fingerprint=wire.text_of(
                    payload, "fp", max_chars=MAX_FINGERPRINT_CHARS, pattern=FINGERPRINT_PATTERN
                ),
                at=wire.integer_of(payload, "at", low=0, high=MAX_EPOCH_SECONDS),
                attempt=wire.integer_of(payload, "try", low=0, high=MAX_COUNT),
                # Where it came from: routing takes it only when it names a configured source.
                source=_words(payload, "src", MAX_QUEUE_ARN_CHARS),
            )
        except Rejection as rejection:
            raise Rejection(rejection.field, rejection.problem, subject=FAILURE_SUBJECT) from None

    @property
    def terminal(self) -> bool:
        return self.kind is FailureKind.TERMINAL

    def describe(self) -> str:
        """One line for a parking reason: what failed, and the group it belongs to."""
        fields = self.to_dict()
        return f"{self.kind.value} error {fields['class']}: {fields['msg']} (fingerprint {self.fingerprint})"


def _words(payload: Mapping[str, Any], field: str, max_chars: int) -> str:
    return redact_untrusted(wire.text_of(payload, field, max_chars=max_chars), max_chars)


@dataclass(frozen=True)
class VerdictCounts:
    """The verdicts the consumer kit reported under one verdict key (a run's re-drives, or a
    probe's canaries)."""

    ok: int = 0
    transient: int = 0
    terminal: int = 0

    @property
    def total(self) -> int:
        return self.ok + self.transient + self.terminal


def bounded(text: str, max_chars: int, max_json_bytes: int) -> str:
    """``text`` cut to ``max_chars`` characters, and shorter still until its JSON form fits."""
    text = text[:max_chars]
    while len(json.dumps(text)) > max_json_bytes:
        text = text[: len(text) * 3 // 4]
    return text
