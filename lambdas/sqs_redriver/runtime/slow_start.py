"""Slow start: a REDRIVE run does not send the backlog back on trust; the rules (pure) and the
pacing of a run's batches by them.

Every message in the DLQ was failed by this consumer. With the consumer kit, a run first sends a
trial (``minimum_volume`` messages, no delay) and waits for their verdicts: a broken consumer
trips the breaker after a handful of deliveries, a healthy one lets the run go on at the full
rate. Without verdicts (no kit, or the kit does not answer in time) slow start can only follow
time: the run's rate doubles from 1 message a second up to the rate limit."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqs_redriver.core.breaker import BreakerPolicy, RunOutcome, ratio_failed
from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime.plan import VerdictTag

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqs_redriver.runtime.ports import VerdictStore


class Phase(StrEnum):
    TRIAL = "trial"  # the trial's messages are out: wait for their verdicts
    FULL = "full"  # the consumer answered well: the rate limit alone paces the run
    TIMED = "timed"  # no verdicts to go by: the rate rises with time


@dataclass(frozen=True)
class TrialResult:
    """What the trial's verdicts say: trip the breaker, go to ``phase``, or keep waiting (None)."""

    trip: bool = False
    phase: Phase | None = None


def judge_trial(verdicts: VerdictCounts, *, trial_sent: int, policy: BreakerPolicy) -> TrialResult:
    """Enough transient failures, and a large enough share (the breaker's ratio rule): trip.
    More successes than transient failures: full rate. Terminal verdicts say nothing about the
    consumer: once the whole trial has answered without either, another trial goes out."""
    if ratio_failed(verdict_outcome(verdicts), policy):
        return TrialResult(trip=True)
    if verdicts.ok > verdicts.transient:
        return TrialResult(phase=Phase.FULL)
    if verdicts.total >= trial_sent:
        return TrialResult(phase=Phase.TRIAL)
    return TrialResult()


def judge_recent(now: VerdictCounts, before: VerdictCounts, *, policy: BreakerPolicy) -> bool:
    """At full rate: whether the verdicts that came in since the last read (``before``) say the
    consumer broke (the breaker's ratio rule over them alone). Over the whole run's, a consumer that
    broke after thousands of successes would trip only after as many failures."""
    recent = VerdictCounts(
        ok=max(0, now.ok - before.ok),
        transient=max(0, now.transient - before.transient),
        terminal=max(0, now.terminal - before.terminal),
    )
    return ratio_failed(verdict_outcome(recent), policy)


def verdict_outcome(verdicts: VerdictCounts) -> RunOutcome:
    """The consumer kit's verdicts as the breaker's failure signal."""
    return RunOutcome(
        received=0, returned=0, errors=0, ok_verdicts=verdicts.ok, transient_verdicts=verdicts.transient
    )


def time_allowance(elapsed: float, *, max_rate: float, slow_start_seconds: float) -> float:
    """How many re-drives a run may have sent ``elapsed`` seconds in, without verdicts: the first
    at once, then a rate that doubles from 1/s and reaches ``max_rate`` after
    ``slow_start_seconds`` (0 turns slow start off)."""
    if slow_start_seconds <= 0 or max_rate <= 1:
        return math.inf
    doubling = slow_start_seconds / math.log2(max_rate)
    rising = min(elapsed, slow_start_seconds)
    risen = doubling / math.log(2) * (2 ** (rising / doubling) - 1)
    return 1 + risen + max(0.0, elapsed - slow_start_seconds) * max_rate


def seconds_until_allowed(
    wanted: float, elapsed: float, *, max_rate: float, slow_start_seconds: float
) -> float:
    """How long until the time allowance reaches ``wanted`` re-drives (0 when it already has)."""
    if time_allowance(elapsed, max_rate=max_rate, slow_start_seconds=slow_start_seconds) >= wanted:
        return 0.0
    doubling = slow_start_seconds / math.log2(max_rate)
    at_full = time_allowance(slow_start_seconds, max_rate=max_rate, slow_start_seconds=slow_start_seconds)
    if wanted > at_full:
        return slow_start_seconds + (wanted - at_full) / max_rate - elapsed
    return doubling * math.log2((wanted - 1) * math.log(2) / doubling + 1) - elapsed


VERDICT_POLL_SECONDS = 1.0


MIN_SLEEP_SECONDS = 0.01


# In FULL phase the verdicts are read again after this many re-drives, and those that came in since
# the read before are judged: a consumer that breaks mid-drain trips the breaker within a few batches.
# A large drain's worker reads them before every batch instead, with its check (``heard``).
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
        drain: bool = False,
    ) -> None:
        """``full_rate``: the run follows one that finished its slow start, so it starts at full rate;
        ``drain``: the run is a large drain's worker (its re-drives' first failures come straight back)."""
        self.drain = drain
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

    @property
    def judged_key(self) -> str | None:
        """The verdict key a large drain's check before each batch reads for this run: at full rate
        with verdicts (None otherwise: a trial reads its own, a run without verdicts has none)."""
        return self.verdict_key if self.phase is Phase.FULL and self.rules.consumer_verdicts else None

    def heard(self, verdicts: VerdictCounts) -> bool:
        """The run's verdicts as a drain's check before a batch read them (``judged_key``): judge
        those that came in since the last read, as ``_full`` does every VERDICT_CHECK_EVERY
        re-drives; whether they trip the breaker (sticky, as there)."""
        with self._lock:
            self._checked_at_sent = self.sent
            before, self.verdicts = self.verdicts, verdicts
            self.tripped = self.tripped or judge_recent(verdicts, before, policy=self.rules.breaker)
            return self.tripped

    def _full(self) -> tuple[Admission | None, float]:
        if not self.rules.consumer_verdicts:
            self.reserved += SQS_MAX_BATCH_SIZE
            return Admission(SQS_MAX_BATCH_SIZE, None), 0
        if self.sent - self._checked_at_sent >= VERDICT_CHECK_EVERY:
            self._checked_at_sent = self.sent
            before, self.verdicts = self.verdicts, self.state.load_verdicts(self.verdict_key)
            self.tripped = judge_recent(self.verdicts, before, policy=self.rules.breaker)
            if self.tripped:
                return Admission(0, None, trip=True), 0
        self.reserved += SQS_MAX_BATCH_SIZE
        return Admission(SQS_MAX_BATCH_SIZE, VerdictTag(self.verdict_key, first_failure_back=self.drain)), 0

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
