"""Breaker writes: conditional on the version read, logged, and remembered for the run's report."""

from __future__ import annotations

import threading
from typing import Any

from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import BreakerStore
from sqs_redriver.runtime.decide.breaker import Breaker
from sqs_redriver.runtime.decide.canary import SILENT_PROBES_LIMIT
from sqs_redriver.runtime.model.breaker_state import State


class BreakerWriter:
    """Writes one breaker record for one run (its parallel workers share it)."""

    def __init__(self, state: BreakerStore, key: str, logger: Any) -> None:
        self._state = state
        self._key = key
        self._log = logger
        self._lock = threading.Lock()
        self.transitions: list[str] = []
        # The state of the last record this run wrote; None while it wrote none.
        self.last_state: State | None = None
        self._newest: Breaker | None = None  # the last record this run wrote

    def save(self, after: Breaker, before: Breaker) -> bool:
        """Write ``after`` if the stored record is still ``before``; False when another run wrote
        first. An AWS error propagates."""
        saved = self._state.save_breaker(self._key, after, expected_version=before.version)
        if not saved:
            self._log.warning(
                "breaker changed by another run; this run's transition is dropped",
                extra={"expected_version": before.version},
            )
            return False
        with self._lock:
            if after.state is not before.state:
                self.transitions.append(f"{before.state.value}->{after.state.value}")
                self._log.info(
                    "breaker transition",
                    extra={
                        "breaker": self._key,
                        "from": before.state.value,
                        "to": after.state.value,
                        "evidence": after.evidence.value,
                        "version": after.version,
                    },
                )
            self.last_state = after.state
            if self._newest is None or after.version > self._newest.version:
                self._newest = after
            if after.silent_probes >= SILENT_PROBES_LIMIT > before.silent_probes:
                self._log.warning(
                    "CONSUMER_VERDICTS is on but the consumer reported no verdict for its last probes: "
                    "judging it by its queue's metrics and the DLQ until it reports one",
                    extra={"breaker": self._key, "silent_probes": after.silent_probes},
                )
            elif before.silent_probes >= SILENT_PROBES_LIMIT > after.silent_probes:
                self._log.info(
                    "the consumer kit reports again: waiting for its verdicts", extra={"breaker": self._key}
                )
        return True

    def newest(self, breaker: Breaker) -> Breaker:
        """``breaker``, or the newer record another worker of this run wrote since it was read: a
        worker goes on from it, so its next conditional write is not lost to its own run."""
        with self._lock:
            newest = self._newest
        return newest if newest is not None and newest.version > breaker.version else breaker

    def transition(self, before: Breaker, after: Breaker) -> tuple[Breaker, int]:
        """Move to ``after``; on a lost race or an AWS error keep ``before``. Returns the breaker
        and the errors met (0 or 1)."""
        try:
            saved = self.save(after, before)
        except AwsCallError as exc:
            self._log.error("breaker write failed", extra={"error": str(exc)})
            return before, 1
        return (after if saved else before), 0
