"""The gate every run passes first: the breaker says what the run may do."""

from __future__ import annotations

from dataclasses import dataclass

from sqs_redriver.runtime.act.breaker_writer import BreakerWriter
from sqs_redriver.runtime.adapters.ports import BreakerStore
from sqs_redriver.runtime.decide.breaker import Breaker, BreakerPolicy, begin_run
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.report import StopReason


@dataclass(frozen=True)
class Passage:
    breaker: Breaker
    mode: Mode
    # Set when the run may not touch the DLQ at all.
    stop: StopReason = StopReason.NONE


def pass_gate(
    state: BreakerStore, writer: BreakerWriter, key: str, policy: BreakerPolicy, now: int
) -> Passage:
    """Read the breaker and let time move it (an OPEN breaker whose cooldown ended becomes
    HALF_OPEN). When another run wrote that move first, this run does nothing."""
    stored = state.load_breaker(key)
    breaker, mode = begin_run(stored, now, policy)
    if breaker is not stored and not writer.save(breaker, stored):
        return Passage(breaker, Mode.SKIP)
    if mode is Mode.SKIP:
        return Passage(breaker, mode, StopReason.BREAKER_OPEN)
    return Passage(breaker, mode)
