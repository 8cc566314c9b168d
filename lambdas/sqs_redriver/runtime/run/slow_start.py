"""The slow start of one REDRIVE run, shared by its parallel workers (decide/slow_start.py has the rules).

Before each batch a worker asks the slow start how many messages it may take (``admit``); after
it, it says how many it re-drove (``settle``). While the trial's messages are out it polls the
consumer kit's verdicts (one consistent GetItem a second); without verdicts it paces by time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime.adapters.ports import VerdictStore
from sqs_redriver.runtime.decide.breaker import BreakerPolicy
from sqs_redriver.runtime.decide.slow_start import (
    Phase,
    TrialResult,
    judge_trial,
    seconds_until_allowed,
    time_allowance,
)
from sqs_redriver.runtime.model.intents import VerdictTag

VERDICT_POLL_SECONDS = 1.0
MIN_SLEEP_SECONDS = 0.01
# In FULL phase the verdicts are read again after this many re-drives: a consumer that breaks
# mid-drain trips the breaker within a few batches.
VERDICT_CHECK_EVERY = 50


@dataclass(frozen=True)
class SlowStartRules:
    """The settings slow start depends on."""

    consumer_verdicts: bool
    verdict_wait_seconds: int
    slow_start_seconds: int
    max_rate: int
    breaker: BreakerPolicy


@dataclass(frozen=True)
class Admission:
    """How many messages the next batch may take (0: none now), the tag of its re-drives, and
    whether the consumer's verdicts say it is broken (open the breaker, take nothing)."""

    room: int
    tag: VerdictTag | None
    trip: bool = False


class SlowStart:
    def __init__(
        self,
        rules: SlowStartRules,
        *,
        verdict_key: str,
        state: VerdictStore,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        logger: Any,
        full_rate: bool = False,
    ) -> None:
        """``full_rate``: the run follows one that finished its slow start, so it starts at full rate."""
        self.rules = rules
        self.verdict_key = verdict_key
        self.state = state
        self.clock = clock
        self.sleep = sleep
        self.log = logger
        self.started = clock()
        if full_rate:
            self.phase = Phase.FULL
        else:
            self.phase = Phase.TRIAL if rules.consumer_verdicts else Phase.TIMED
        self.verdicts = VerdictCounts()
        # Sticky: once a read of the verdicts trips, every worker is told so. Otherwise a worker
        # asking between that read and the run's halt sees the whole trial answered and sends more.
        self.tripped = False
        self.sent = 0  # re-drives of this run
        self.trial_sent = 0
        self.reserved = 0  # admitted to batches not yet settled
        self._checked_at_sent = 0
        self._waiting_since: float | None = None
        self._lock = threading.Lock()

    def admit(self, out_of_time: Callable[[], bool]) -> Admission:
        """Room for the next batch, waiting (``sleep``) while the trial's messages are out or time
        holds the rate; returns room 0 when ``out_of_time`` says the run must stop waiting."""
        while not out_of_time():
            with self._lock:
                admission, wait = self._admit_now()
            if admission is not None:
                return admission
            before = self.clock()
            self.sleep(max(wait, MIN_SLEEP_SECONDS))
            if self.clock() <= before:
                raise RuntimeError("the slow start's sleep did not move its clock: it would wait forever")
        return Admission(0, None)

    def settle(self, admitted: int, redriven: int) -> None:
        """A batch that was admitted ``admitted`` messages re-drove ``redriven`` of them."""
        with self._lock:
            self.reserved -= admitted
            self.sent += redriven
            if self.phase is Phase.TRIAL:
                self.trial_sent += redriven

    def _admit_now(self) -> tuple[Admission | None, float]:
        if self.tripped:
            return Admission(0, None, trip=True), 0
        if self.phase is Phase.TRIAL:
            return self._trial()
        if self.phase is Phase.FULL:
            return self._full()
        return self._timed()

    @property
    def at_full_rate(self) -> bool:
        """Slow start is over: the consumer's verdicts allowed the full rate, or time did."""
        if self.phase is Phase.FULL:
            return True
        seconds = self.rules.slow_start_seconds
        return self.phase is Phase.TIMED and (seconds <= 0 or self.clock() - self.started >= seconds)

    def _full(self) -> tuple[Admission | None, float]:
        if not self.rules.consumer_verdicts:
            self.reserved += SQS_MAX_BATCH_SIZE
            return Admission(SQS_MAX_BATCH_SIZE, None), 0
        if self.sent - self._checked_at_sent >= VERDICT_CHECK_EVERY:
            self._checked_at_sent = self.sent
            if self._read_verdicts().trip:
                return Admission(0, None, trip=True), 0
        self.reserved += SQS_MAX_BATCH_SIZE
        return Admission(SQS_MAX_BATCH_SIZE, self._tag(trial=False)), 0

    def _trial(self) -> tuple[Admission | None, float]:
        volume = max(self.rules.breaker.minimum_volume, 1)
        in_flight = self.trial_sent - self.verdicts.total
        if self.reserved:
            return None, VERDICT_POLL_SECONDS  # another worker's trial batch is out
        if in_flight <= 0:
            room = min(volume, SQS_MAX_BATCH_SIZE)
            self.reserved += room
            self._waiting_since = None
            return Admission(room, self._tag(trial=True)), 0
        result = self._read_verdicts()
        if result.trip:
            return Admission(0, None, trip=True), 0
        if result.phase is not None:
            self.phase = result.phase
            return self._admit_now()
        now = self.clock()
        self._waiting_since = self._waiting_since or now
        if now - self._waiting_since >= self.rules.verdict_wait_seconds:
            self.log.warning(
                "no verdict from the consumer kit in time: slow start follows time",
                extra={"verdict_key": self.verdict_key, "trial": in_flight},
            )
            self.phase = Phase.TIMED
            return self._admit_now()
        return None, VERDICT_POLL_SECONDS

    def _timed(self) -> tuple[Admission | None, float]:
        """Whole batches as the time allowance grows (the first message goes at once): admitting
        each message as soon as it is allowed would cost a receive, a send and a delete each."""
        rules = self.rules
        tag = self._tag(trial=False) if rules.consumer_verdicts else None
        if self.at_full_rate:  # the rate limiter alone paces the rest of the run
            self.reserved += SQS_MAX_BATCH_SIZE
            return Admission(SQS_MAX_BATCH_SIZE, tag), 0
        elapsed = self.clock() - self.started
        taken = self.sent + self.reserved
        wanted = taken + (SQS_MAX_BATCH_SIZE if taken else 1)
        pace = {"max_rate": rules.max_rate, "slow_start_seconds": rules.slow_start_seconds}
        allowance = time_allowance(elapsed, **pace)
        if allowance < wanted:
            return None, seconds_until_allowed(wanted, elapsed, **pace)
        room = int(min(SQS_MAX_BATCH_SIZE, allowance - taken))
        self.reserved += room
        return Admission(room, tag), 0

    def _read_verdicts(self) -> TrialResult:
        self.verdicts = self.state.load_verdicts(self.verdict_key)
        result = judge_trial(self.verdicts, trial_sent=self.trial_sent, policy=self.rules.breaker)
        self.tripped = result.trip
        return result

    def _tag(self, *, trial: bool) -> VerdictTag:
        return VerdictTag(self.verdict_key, trial=trial)
