"""A consumer's verdict on one delivery, as the consumer kit writes it and the re-driver reads it.

This module is the protocol between the two: the failure the kit carries in a message's mark
(``err``), the verdict counters it adds to the state table for the re-driver's waves, and the keys
of the table records both sides use. Neither side has a copy of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from redriver.model import keys

# The records' keys are built in model/keys.py; named here too, where the kit imports them.
FAILURE_RECORD_PREFIX = keys.FAILURE_RECORD_PREFIX
PARK_RECORD_PREFIX = keys.PARK_RECORD_PREFIX
RETRY_RECORD_PREFIX = keys.RETRY_RECORD_PREFIX
VERDICT_RECORD_PREFIX = keys.VERDICT_RECORD_PREFIX
failure_record_key = keys.failure_record_key
park_record_key = keys.park_record_key
retry_record_key = keys.retry_record_key
verdict_record_key = keys.verdict_record_key

# Longest error message kept in a mark; the class and fingerprint identify the failure anyway.
# Bounded in characters and, as JSON (non-ASCII is escaped: up to 12 bytes a character), in bytes,
# so a mark with a failure and a parking reason still fits its budget (tested).
MAX_ERROR_MESSAGE_CHARS = 240
MAX_ERROR_MESSAGE_JSON_BYTES = 480
MAX_ERROR_CLASS_CHARS = 120
MAX_ERROR_CLASS_JSON_BYTES = 240
# Verdict and failure records are read within minutes; a day is plenty.
VERDICT_RECORD_TTL_SECONDS = 86_400


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
    def from_dict(cls, payload: Mapping[str, Any]) -> Failure:
        """Parse a failure; raise ValueError when it is not one the consumer kit wrote."""
        try:
            return cls(
                kind=FailureKind(payload["kind"]),
                error_class=str(payload["class"]),
                message=str(payload["msg"]),
                fingerprint=str(payload["fp"]),
                at=int(payload["at"]),
                attempt=int(payload["try"]),
                source=str(payload["src"]),
            )
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"not a consumer failure: {str(payload)[:80]!r}") from exc

    @property
    def terminal(self) -> bool:
        return self.kind is FailureKind.TERMINAL

    def describe(self) -> str:
        """One line for a parking reason: what failed, and the group it belongs to."""
        fields = self.to_dict()
        return f"{self.kind.value} error {fields['class']}: {fields['msg']} (fingerprint {self.fingerprint})"


@dataclass(frozen=True)
class VerdictCounts:
    """The verdicts the consumer kit reported under one verdict key (a wave of re-drives)."""

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
