"""The gate every part of a run passes first: the operator's pause, then the breaker, say what
the part may do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqs_redriver.runtime.act.breaker_writer import BreakerWriter
from sqs_redriver.runtime.adapters.ports import BreakerStore, PauseStore
from sqs_redriver.runtime.decide.breaker import Breaker, BreakerPolicy, begin_run
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.report import StopReason


@dataclass(frozen=True)
class Passage:
    breaker: Breaker
    mode: Mode
    # Set when the run may not touch the DLQ at all.
    stop: StopReason = StopReason.NONE


def paused_by_operator(pauses: PauseStore, key: str, logger: Any) -> bool:
    """Whether an operator paused re-drives (the PAUSE# item); logged with who and why."""
    pause = pauses.load_pause(key)
    if pause is not None:
        logger.warning(
            "re-drives paused by an operator",
            extra={"by": pause.by, "reason": pause.reason, "since": pause.at},
        )
    return pause is not None


def pass_gate(
    state: BreakerStore, writer: BreakerWriter, key: str, policy: BreakerPolicy, now: int, *, paused: bool
) -> Passage:
    """Read the breaker and let time move it (an OPEN breaker whose cooldown ended becomes
    HALF_OPEN). When another run wrote that move first, this run does nothing. ``paused`` (by
    an operator): the part touches neither the DLQ nor the breaker (time does not move an OPEN
    one either)."""
    if paused:
        return Passage(state.load_breaker(key), Mode.SKIP, StopReason.PAUSED)
    stored = state.load_breaker(key)
    breaker, mode = begin_run(stored, now, policy)
    if breaker is not stored and not writer.save(breaker, stored):
        return Passage(breaker, Mode.SKIP)
    if mode is Mode.SKIP:
        return Passage(breaker, mode, StopReason.BREAKER_OPEN)
    return Passage(breaker, mode)
