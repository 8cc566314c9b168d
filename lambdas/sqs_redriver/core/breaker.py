"""The circuit breaker of one source queue: its states and the modes a run works in, what moved it
last (``Evidence``), its record (``Breaker``, ``Canary``), the pure rules of its transitions
(``begin_run``, ``trips_now``, ``end_redrive_run``), ``BreakerWriter``, the run's conditional
writes of it, and ``BreakerStore``, the port its record is read and written through (the state
table). Shared by the re-driver and the operator's tool (status, open, close)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from enum import StrEnum
from fractions import Fraction
from typing import Any, Protocol

from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.protocol.keys import canary_verdict_key

# The breaker's states, and the modes a run works in: what ``begin_run`` decides, and what a run's
# report, the logs and the operator's tool name.


class State(StrEnum):
    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


class Mode(StrEnum):
    """What a run may do, decided by the breaker when the run starts."""

    REDRIVE = "REDRIVE"  # CLOSED: re-drive everything due
    PROBE = "PROBE"  # HALF_OPEN without a canary in flight: send one canary
    WATCH = "WATCH"  # HALF_OPEN with a canary in flight: hear the kit and the metrics, no receive
    VERDICT = "VERDICT"  # HALF_OPEN, the canary's window is over: look once more, then judge it
    SKIP = "SKIP"  # OPEN and cooling down: touch nothing (but the retention sweep)
    SWEEP = "SWEEP"  # a run's retention sweep: park the expiring, give back the rest


# What a breaker transition was based on (recorded on the breaker with each transition).


class Evidence(StrEnum):
    """What moved the breaker last: shown by ``status`` and logged with every transition."""

    NONE = "none"  # never moved
    VERDICTS = "verdicts"  # the consumer kit's first-hand verdicts
    METRICS = "metrics"  # the source queue's CloudWatch metrics (consumer_health.py)
    RETURNS = "returns"  # what came back to the DLQ, or a canary that did not
    ERRORS = "errors"  # AWS errors of the re-driver's own calls
    COOLDOWN = "cooldown"  # time: the cooldown of an OPEN breaker ended
    OPERATOR = "operator"  # the operator's tool


@dataclass(frozen=True)
class BreakerPolicy:
    failure_threshold: int = 3
    cooldown_seconds: int = 60
    success_threshold: int = 2
    failure_ratio: float = 0.5
    minimum_volume: int = 3


@dataclass(frozen=True)
class Canary:
    identities: tuple[str, ...]
    verdict_at: int
    # FIFO: the canaries' message groups, and when they were sent (see canary.py).
    groups: tuple[str, ...] = ()
    sent_at: int = 0

    @property
    def verdict_key(self) -> str:
        """Where the consumer kit reports the canaries' verdicts (one key per probe)."""
        return canary_verdict_key(self.sent_at, self.identities[0])


@dataclass(frozen=True)
class Breaker:
    state: State = State.CLOSED
    failures: int = 0
    successes: int = 0
    changed_at: int = 0
    version: int = 0
    canary: Canary | None = None
    evidence: Evidence = Evidence.NONE
    # The source queue's metrics of minutes before this were judged already: a later verdict
    # reads only newer minutes (a minute that opened the breaker must not open it twice).
    judged_until: int = 0
    # Probes whose verdict came from elsewhere while consumer verdicts were expected: the consumer
    # may not report them (canary.py: expects_verdicts).
    silent_probes: int = 0

    def _next(self, **changes: object) -> Breaker:
        return replace(self, version=self.version + 1, **changes)  # type: ignore[arg-type]

    def opened(self, now: int, evidence: Evidence, *, judged_until: int | None = None) -> Breaker:
        """OPEN from ``now``; metrics before ``judged_until`` (default: now) are not judged again."""
        return self._next(
            state=State.OPEN,
            failures=0,
            successes=0,
            changed_at=now,
            canary=None,
            evidence=evidence,
            judged_until=now if judged_until is None else judged_until,
        )

    def with_silent_probes(self, silent_probes: int) -> Breaker:
        """The same breaker, its consumer judged as silent (or not) by what came back."""
        return self._next(silent_probes=silent_probes)

    def closed(self, now: int, evidence: Evidence) -> Breaker:
        return self._next(
            state=State.CLOSED, failures=0, successes=0, changed_at=now, canary=None, evidence=evidence
        )


@dataclass(frozen=True)
class RunOutcome:
    """What a REDRIVE run observed, for the breaker's verdict: messages received from the DLQ and
    those of them that came back, AWS errors, and the consumer's first-hand verdicts (the kit)."""

    received: int
    returned: int
    errors: int
    ok_verdicts: int = 0
    transient_verdicts: int = 0


def begin_run(breaker: Breaker, now: int, policy: BreakerPolicy) -> tuple[Breaker, Mode]:
    """Decide what this run may do; the returned record differs from the input when time moved it."""
    if breaker.state is State.CLOSED:
        return breaker, Mode.REDRIVE
    if breaker.state is State.OPEN:
        if now < breaker.changed_at + policy.cooldown_seconds:
            return breaker, Mode.SKIP
        half_open = breaker._next(
            state=State.HALF_OPEN, successes=0, changed_at=now, canary=None, evidence=Evidence.COOLDOWN
        )
        return half_open, Mode.PROBE
    if breaker.canary is None:
        return breaker, Mode.PROBE
    if now < breaker.canary.verdict_at:
        return breaker, Mode.WATCH
    return breaker, Mode.VERDICT


def canary_passed(breaker: Breaker, now: int, policy: BreakerPolicy, evidence: Evidence) -> Breaker:
    """The canary succeeded (its verdict, or a scan that did not find it after its window): one
    success."""
    if breaker.state is not State.HALF_OPEN or breaker.canary is None:
        raise ValueError("only a HALF_OPEN breaker with a canary in flight can pass one")
    successes = breaker.successes + 1
    if successes >= policy.success_threshold:
        return breaker.closed(now, evidence)
    return breaker._next(successes=successes, canary=None)


def without_canary(breaker: Breaker) -> Breaker:
    """The canary proved nothing about the consumer (it was poison): probe again with another."""
    if breaker.state is not State.HALF_OPEN:
        raise ValueError(f"only a HALF_OPEN breaker has a canary, not {breaker.state.value}")
    return breaker._next(canary=None)


def with_canary(breaker: Breaker, canary: Canary) -> Breaker:
    """Claim the HALF_OPEN probe for these messages; written before the canary is sent."""
    if breaker.state is not State.HALF_OPEN:
        raise ValueError(f"a canary needs a HALF_OPEN breaker, not {breaker.state.value}")
    return breaker._next(canary=canary)


def ratio_failed(outcome: RunOutcome, policy: BreakerPolicy) -> bool:
    """Enough distinct messages failed again, and a large enough share: the consumer is broken.

    Two signals, each with the minimum volume: messages that came back to the DLQ (out of those
    received), and the consumer kit's transient verdicts (out of all its verdicts). Below the
    minimum volume a run cannot fail by ratio, so one or two poison messages never trip it.
    """
    return _share_failed(outcome.returned, outcome.received, policy) or _share_failed(
        outcome.transient_verdicts, outcome.transient_verdicts + outcome.ok_verdicts, policy
    )


def ratio_evidence(outcome: RunOutcome, policy: BreakerPolicy) -> Evidence:
    """Which signal failed the run by ratio: the kit's verdicts, or what came back."""
    if _share_failed(outcome.transient_verdicts, outcome.transient_verdicts + outcome.ok_verdicts, policy):
        return Evidence.VERDICTS
    return Evidence.RETURNS


def _share_failed(failed: int, out_of: int, policy: BreakerPolicy) -> bool:
    # Compare in whole numbers: 0.07 * 100 is 7.000000000000001 in floating point.
    threshold = Fraction(str(policy.failure_ratio)) * out_of
    return failed >= max(policy.minimum_volume, 1) and failed >= threshold


def is_failed_run(outcome: RunOutcome, policy: BreakerPolicy) -> bool:
    """A REDRIVE run fails on an AWS error, or when enough of what it re-drove failed again."""
    return bool(outcome.errors) or ratio_failed(outcome, policy)


def trips_now(breaker: Breaker, so_far: RunOutcome, policy: BreakerPolicy) -> bool:
    """Whether a REDRIVE run's tally so far opens the breaker: then the batch in hand is not
    re-driven into the consumer the run has just judged broken.

    A failure by ratio opens it at once, as mature breakers do once the minimum volume is there:
    waiting for more failed runs would send the whole backlog into the outage again. AWS errors
    open it after ``failure_threshold`` consecutive failed runs.
    """
    if ratio_failed(so_far, policy):
        return True
    return bool(so_far.errors) and breaker.failures + 1 >= policy.failure_threshold


def end_redrive_run(breaker: Breaker, outcome: RunOutcome, now: int, policy: BreakerPolicy) -> Breaker | None:
    """The record after a REDRIVE run, or None when nothing needs writing.

    An empty DLQ proves nothing: a run that received nothing and hit no error changes nothing.
    """
    if breaker.state is not State.CLOSED:
        return None
    if ratio_failed(outcome, policy):
        return breaker.opened(now, ratio_evidence(outcome, policy))
    if outcome.errors:
        failures = breaker.failures + 1
        if failures >= policy.failure_threshold:
            return breaker.opened(now, Evidence.ERRORS)
        return breaker._next(failures=failures)
    if outcome.received and breaker.failures:
        return breaker._next(failures=0)
    return None


# A consumer expected to report verdicts that let this many probes go unanswered is judged as
# one that does not report (by its metrics and the DLQ); counting stops there.
SILENT_PROBES_LIMIT = 2


def expects_verdicts(breaker: Breaker, consumer_verdicts: bool) -> bool:
    """Whether a run waits for the consumer kit's verdicts: configured, and not given up on."""
    return consumer_verdicts and breaker.silent_probes < SILENT_PROBES_LIMIT


# Breaker writes: conditional on the version read, logged, and remembered for the run's report.


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

    @property
    def key(self) -> str:
        return self._key

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


class BreakerStore(Protocol):
    """The breaker records (``BREAKER#<source queue URL>``), one per source queue."""

    def load_breaker(self, key: str) -> Breaker:
        """The stored breaker, or a fresh CLOSED one (version 0)."""
        ...

    def save_breaker(self, key: str, breaker: Breaker, *, expected_version: int) -> bool:
        """Write if the stored version is still ``expected_version``; False when another run won."""
        ...
