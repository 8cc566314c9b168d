"""Consumer verdicts on re-driven messages, tallied during a batch and written once after it.

Only the first delivery of a re-drive counts (ApproximateReceiveCount 1): one verdict per
re-drive, whatever SQS does with the message afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqs_redriver.kit.records import InboundRecord
from sqs_redriver.protocol.failure import ConsumerVerdict, FailureKind


@dataclass
class Tally:
    """The verdicts of one verdict key (one run's re-drives) in this batch."""

    ok: int = 0
    transient: int = 0
    terminal: int = 0
    fingerprints: set[str] = field(default_factory=set)

    def add(self, verdict: ConsumerVerdict, fingerprint: str | None = None) -> None:
        setattr(self, verdict.value, getattr(self, verdict.value) + 1)
        if fingerprint:
            self.fingerprints.add(fingerprint)

    def counts(self) -> dict[str, int]:
        """The non-zero counters, by the attribute name they are added to."""
        values = {"ok": self.ok, "transient": self.transient, "terminal": self.terminal}
        return {name: value for name, value in values.items() if value}


@dataclass
class VerdictBuffer:
    """Verdicts by verdict key, until they are flushed."""

    tallies: dict[str, Tally] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tallies)

    def __contains__(self, verdict_key: object) -> bool:
        return verdict_key in self.tallies

    def succeeded(self, record: InboundRecord) -> None:
        """Count an OK verdict if ``record`` is the first delivery of a re-drive asking for one."""
        if _counts(record):
            self._tally(record).add(ConsumerVerdict.OK)

    def failed(self, record: InboundRecord, kind: FailureKind, fingerprint: str) -> None:
        """Count a TRANSIENT or TERMINAL verdict (with its fingerprint), as ``succeeded``."""
        if _counts(record):
            self._tally(record).add(ConsumerVerdict(kind.value), fingerprint)

    def take(self) -> dict[str, Tally]:
        """Everything buffered, leaving the buffer empty."""
        tallies, self.tallies = self.tallies, {}
        return tallies

    def _tally(self, record: InboundRecord) -> Tally:
        assert record.verdict_key is not None
        return self.tallies.setdefault(record.verdict_key, Tally())


def _counts(record: InboundRecord) -> bool:
    return record.verdict_key is not None and record.receive_count == 1
