"""The run history: one compact summary per run, the newest first, kept in the state table.

Every run (a scheduled tick, a continuation, a paused run) adds its summary to the item
``RUNS#<DLQ URL>`` (``Settings.runs_key``), which keeps the last ``RUN_HISTORY_LENGTH``; the
operator's tool reads them with ``RunSummary.from_dict``, which tolerates fields it does not know
and fields an older re-driver did not write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqs_redriver.protocol.limits import MAX_EPOCH_SECONDS
from sqs_redriver.runtime.model.report import RunReport, StopReason

RUN_HISTORY_LENGTH = 20

# The counts of a summary, as RunReport names them.
COUNTS = (
    "received",
    "redriven",
    "parked",
    "returned",
    "canaries",
    "expiring",
    "errors",
    "unparkable",
    "unarchived",
)


def run_summary(
    report: RunReport, *, at: int, duration_ms: int, continuation: bool, source_queue_url: str
) -> dict[str, Any]:
    """The history line of a run that started at ``at`` (epoch seconds) and took ``duration_ms``;
    ``continuation``: it was started by a continuation; ``source_queue_url`` names the only source of
    a run with one (its report has no parts)."""
    return RunSummary(
        at=at,
        duration_ms=duration_ms,
        mode=report.mode.value,
        breaker_state=report.breaker_state.value,
        stopped_because=report.stopped_because.value,
        **{name: getattr(report, name) for name in COUNTS},
        breaker_transitions=tuple(report.breaker_transitions),
        paused=report.stopped_because is StopReason.PAUSED,
        continuation=continuation,
        sources={part.source or source_queue_url: part.breaker_state.value for part in report.by_source},
    ).to_dict()


@dataclass(frozen=True)
class RunSummary:
    """One line of the run history, as read back: missing fields get their zero value."""

    at: int = 0
    duration_ms: int = 0
    mode: str = ""
    breaker_state: str = ""
    stopped_because: str = ""
    received: int = 0
    redriven: int = 0
    parked: int = 0
    returned: int = 0
    canaries: int = 0
    expiring: int = 0
    errors: int = 0
    unparkable: int = 0
    unarchived: int = 0
    breaker_transitions: tuple[str, ...] = ()
    paused: bool = False
    continuation: bool = False
    sources: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> RunSummary:
        """Read a summary; unknown fields are ignored, missing, mistyped or out-of-range ones get zero
        values."""
        transitions = payload.get("breaker_transitions")
        sources = payload.get("sources")
        return cls(
            at=_int(payload.get("at")),
            duration_ms=_int(payload.get("duration_ms")),
            mode=_str(payload.get("mode")),
            breaker_state=_str(payload.get("breaker_state")),
            stopped_because=_str(payload.get("stopped_because")),
            **{name: _int(payload.get(name)) for name in COUNTS},
            breaker_transitions=tuple(str(t) for t in transitions) if isinstance(transitions, list) else (),
            paused=payload.get("paused") is True,
            continuation=payload.get("continuation") is True,
            sources={str(k): str(v) for k, v in sources.items()} if isinstance(sources, dict) else {},
        )

    def to_dict(self) -> dict[str, Any]:
        """The summary as the re-driver writes it."""
        return {
            "at": self.at,
            "duration_ms": self.duration_ms,
            "mode": self.mode,
            "breaker_state": self.breaker_state,
            "stopped_because": self.stopped_because,
            **{name: getattr(self, name) for name in COUNTS},
            "breaker_transitions": list(self.breaker_transitions),
            "paused": self.paused,
            "continuation": self.continuation,
            "sources": dict(self.sources),
        }


def _int(value: object) -> int:
    """A count or a time: a whole number from 0 to the end of year 9999, else 0 (a summary may be
    read from a record anyone with the operator's grant could write; the tool prints its times)."""
    # bool is an int to Python, and not a count
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if 0 <= value <= MAX_EPOCH_SECONDS else 0  # NaN fails both comparisons


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""
