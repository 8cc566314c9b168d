"""The HALF_OPEN probe: which messages go as canaries (``choose``, ``claim``), what their absence
proves (``judge``), and what the kit's verdicts and the source queue's metrics make of the breaker
(``after_consumer_verdicts``, ``after_health``); and whether a consumer expected to report through
the kit is silent (``silenced``, ``heard_in_returns``), so that runs stop waiting for its verdicts.

A failed FIFO canary returns behind its group's other messages in the DLQ, where a scan that
holds one of them cannot see it; the verdict then waits, and never closes on unread evidence."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from enum import StrEnum
from typing import TYPE_CHECKING

from sqs_redriver.core.breaker import (
    SILENT_PROBES_LIMIT,
    Breaker,
    BreakerPolicy,
    Canary,
    Evidence,
    State,
    canary_passed,
    expects_verdicts,
    without_canary,
)
from sqs_redriver.runtime.consumer_health import Health, HealthReading

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqs_redriver.core.message import Tracked
    from sqs_redriver.protocol.failure import VerdictCounts


SILENT_PROBES_COUNTED = 10


class Verdict(StrEnum):
    PASSED = "passed"  # not back after its window: one success
    FAILED = "failed"  # hidden behind its FIFO group for two windows: open the breaker
    POSTPONED = "postponed"  # may be hidden behind its FIFO group: look again


def choose(due: Sequence[Tracked], *, size: int, fifo: bool) -> list[Tracked]:
    """The canary tests the consumer, not the message: those that failed least often go first.

    On FIFO only a group's first message may go (a later one would overtake it), and a group
    alone in the batch first: a failed canary returns behind its group's other messages.
    """
    if not fifo:
        return sorted(due, key=lambda t: t.mark.count)[:size]
    groups = Counter(t.group for t in due)
    heads = {t.group: t for t in reversed(due)}
    return sorted(heads.values(), key=lambda t: (groups[t.group], t.mark.count))[:size]


def claim(canaries: Sequence[Tracked], *, window_seconds: int, now: int, fifo: bool) -> Canary:
    """The probe record: who the canaries are, and when their absence becomes a verdict."""
    return Canary(
        identities=tuple(t.mark.identity for t in canaries),
        verdict_at=now + window_seconds,
        groups=tuple(t.group for t in canaries) if fifo else (),
        sent_at=now,
    )


def came_back(tracked: Sequence[Tracked], canary: Canary) -> list[Tracked]:
    """Canaries found in the DLQ: the consumer failed them again."""
    return [t for t in tracked if t.mark.identity in canary.identities]


def may_hide(tracked: Sequence[Tracked], canary: Canary) -> bool:
    """A scan holds a groupmate of a FIFO canary, so the canary could sit unseen behind it."""
    return any(t.group in canary.groups and t.mark.identity not in canary.identities for t in tracked)


def judge(canary: Canary, *, may_have_hidden: bool, now: int) -> Verdict:
    """The scan after the canary's window did not find it: a success, unless it could not see.
    After a second window without a clear view it counts as a failure."""
    if not may_have_hidden:
        return Verdict.PASSED
    if now >= canary.verdict_at + (canary.verdict_at - canary.sent_at):
        return Verdict.FAILED
    return Verdict.POSTPONED


def after_consumer_verdicts(
    breaker: Breaker, verdicts: VerdictCounts, now: int, policy: BreakerPolicy
) -> Breaker | None:
    """The consumer kit's first-hand verdict on the canaries, or None while there is none.

    A transient failure reopens the breaker; a success counts one; a terminal failure says the
    canary was poison, not that the consumer is broken: the probe is released for another message.
    """
    if verdicts.transient:
        return breaker.opened(now, Evidence.VERDICTS)
    if verdicts.ok:
        return canary_passed(breaker, now, policy, Evidence.VERDICTS)
    if verdicts.terminal:
        return without_canary(breaker)
    return None


def after_health(breaker: Breaker, reading: HealthReading, now: int) -> Breaker | None:
    """The source queue's metrics on a HALF_OPEN breaker's consumer: receives that were never
    deleted reopen it (the minutes judged are not judged again); deletes flowing again close it.
    Nothing else moves it: no datapoints is never a verdict, and a breaker not HALF_OPEN is not
    the metrics' to move."""
    if breaker.state is not State.HALF_OPEN:
        return None
    if reading.health is Health.DOWN:
        return breaker.opened(now, Evidence.METRICS, judged_until=reading.judged_until)
    if reading.health is Health.HEALTHY:
        return breaker.closed(now, Evidence.METRICS)
    return None


def heard_elsewhere(before: Breaker, after: Breaker, *, from_kit: bool) -> Breaker:
    """Count the probes whose verdict the consumer kit did not give while it was expected to: a
    verdict from the kit resets the count (``expects_verdicts`` reads it)."""
    silent = 0 if from_kit else before.silent_probes + 1
    return replace(after, silent_probes=min(silent, SILENT_PROBES_COUNTED))


def heard_in_returns(
    breaker: Breaker,
    returned: Sequence[Tracked],
    *,
    consumer_verdicts: bool,
    fifo: bool,
    policy: BreakerPolicy,
) -> Breaker | None:
    """What the failures in the DLQ say of the consumer kit, in any breaker state; None: nothing.

    The kit dead-letters every failure it sees with its own words (the mark's ``failure``), on the
    last attempt at the latest: a failure without them went past the kit (a handler that does not
    use it yet, a second consumer without it, a kit whose writes fail). ``minimum_volume`` of those
    in a batch, at least as many as in the kit's words, and the consumer is judged as one that does
    not report (by its queue's metrics; slow start by time) before the batch is planned. While it is
    judged so, ``minimum_volume`` failures in the kit's words and none without say the kit is back.
    Not on FIFO: Powertools' FIFO processor fails the records behind a failed one unseen, so a
    reporting kit's group-mates reach the DLQ without its words (the canaries' rule still holds).
    """
    if not consumer_verdicts or fifo:
        return None
    volume = max(policy.minimum_volume, 1)
    heard = sum(1 for t in returned if t.mark.failure is not None)
    unheard = len(returned) - heard
    if not expects_verdicts(breaker, consumer_verdicts):
        return breaker.with_silent_probes(0) if heard >= volume and not unheard else None
    if unheard < volume or unheard < heard:
        return None
    return breaker.with_silent_probes(SILENT_PROBES_LIMIT)


def silenced(before: Breaker, after: Breaker, *, consumer_verdicts: bool) -> Breaker:
    """``after``, counting one silent probe when a canary was out and the kit's verdict was
    expected but the move came from elsewhere (the metrics, a scan)."""
    if not consumer_verdicts or before.canary is None:
        return after
    return heard_elsewhere(before, after, from_kit=False)
