"""The event a run sends to its own function so that draining goes on at once (continuation).

It looks like an EventBridge event (an ``id``, a ``source``, a ``detail``), so the handler's
idempotency guard keys it by ``id`` like a scheduled tick: a delivery Lambda repeats is answered
from the first run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CONTINUATION_SOURCE = "sqs-redriver.continuation"


@dataclass(frozen=True)
class Resume:
    """A run that follows another: the slot ``token`` it was offered, its place in the chain, and
    whether the run before it had finished its slow start."""

    token: str
    generation: int
    full_rate: bool

    def to_event(self) -> dict[str, Any]:
        return {
            "id": self.token,
            "source": CONTINUATION_SOURCE,
            "detail": {"generation": self.generation, "full_rate": self.full_rate},
        }

    @staticmethod
    def from_event(event: Mapping[str, Any]) -> Resume | None:
        """The continuation this event carries; None for a scheduled tick (any other source)."""
        if event.get("source") != CONTINUATION_SOURCE:
            return None
        detail = event.get("detail") or {}
        generation, full_rate, token = detail.get("generation"), detail.get("full_rate"), event.get("id")
        if not isinstance(token, str) or not isinstance(generation, int) or not isinstance(full_rate, bool):
            raise ValueError(f"malformed continuation event: {dict(event)!r}")
        return Resume(token=token, generation=generation, full_rate=full_rate)
