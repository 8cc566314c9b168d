"""Plan one received batch: park, re-drive with a delay, hold, leave, open the breaker, or probe;
the plan's intents are the values batch.py's executor carries out.

Pure: it takes the batch with identities resolved, the run's mode and tally, the breaker and the
time, and returns a BatchPlan. Nothing here calls AWS."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Evidence, Mode, RunOutcome, trips_now
from sqs_redriver.core.table import MAX_HELD_GROUPS, ParkCause
from sqs_redriver.protocol.keys import canary_verdict_key
from sqs_redriver.protocol.limits import SQS_MAX_DELAY_SECONDS
from sqs_redriver.runtime import backoff, canary, fifo
from sqs_redriver.runtime.consumer_health import ConsumerSignal, Judged, judge
from sqs_redriver.runtime.held import CanaryRules, Held, decide, failure_group
from sqs_redriver.runtime.parking import (
    operator_parked,
    operator_reason,
    over_limit,
    over_limit_reason,
    suspect_reason,
    terminal,
    terminal_reason,
    unknown_source_reason,
    unreplayable,
    unreplayable_reason,
)
from sqs_redriver.runtime.report import StopReason, Tally
from sqs_redriver.runtime.retention import Retention, capped_hold, expiring, expiring_reason

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Mapping

    from sqs_redriver.core.message import Tracked, Tracking
    from sqs_redriver.core.table import GroupMark, HeldGroup, ParkReason
    from sqs_redriver.runtime.routing import Routes


# A batch's plan: what to do with each message, and what the breaker should do, before any of it
# is done. The ``Planner`` (below) makes it; batch.py's ``Executor`` carries it out.


@dataclass(frozen=True)
class VerdictTag:
    """Where the consumer kit reports the verdicts of a run's re-drives, and whether their verdicts
    are awaited: the slow start's trial, or a probe's canaries (their first failure goes straight
    back to the DLQ: its verdict is known)."""

    verdict_key: str
    trial: bool = False
    # A large drain's re-drive (not awaited, delayed as any): its first failure goes straight back
    # to the DLQ too, so a consumer that broke mid-drain gets each message once, not maxReceiveCount
    # times, before every worker has stopped.
    first_failure_back: bool = False

    @property
    def probe(self) -> bool:
        """Whether the kit sends the re-drive's first failure back to the DLQ (the mark's probe flag)."""
        return self.trial or self.first_failure_back


@dataclass(frozen=True)
class Redrive:
    tracked: Tracked
    delay_seconds: int
    tag: VerdictTag | None = None


@dataclass(frozen=True)
class Park:
    tracked: Tracked
    reason: ParkReason


@dataclass(frozen=True)
class Hold:
    """Backoff in the DLQ (FIFO, or a standard step past 900 s): hide the message for the rest of its
    wait, or as long as SQS allows."""

    tracked: Tracked
    seconds: int


@dataclass(frozen=True)
class BatchPlan:
    redrive: tuple[Redrive, ...] = ()
    park: tuple[Park, ...] = ()
    hold: tuple[Hold, ...] = ()
    # Given back to the DLQ at the end of the run, for a later run to see.
    leave: tuple[Tracked, ...] = ()
    # HALF_OPEN probe: claim these as canaries; they are re-driven only if the claim is written.
    canaries: tuple[Tracked, ...] = ()
    open_breaker: bool = False
    # What opening it is based on: messages back in the DLQ, counted as returned because they
    # were re-driven in the breaker's period or (METRICS) failed while the consumer deleted nothing.
    evidence: Evidence = Evidence.RETURNS
    canaries_back: tuple[Tracked, ...] = ()
    # Received messages re-driven in the breaker's current period: the consumer failed them again.
    returned: int = 0
    # Received messages of another source than the part's (a shared DLQ); see Tally.others.
    others: int = 0
    # Parked for an operator's PARK# record of their failure group; see Tally.unjudged.
    unjudged: int = 0
    canary_may_hide: bool = False
    stop: StopReason = StopReason.NONE
    # Failure groups held in a partial outage (held.py) that this plan changed, and the canaries
    # of held groups among its re-drives.
    held: tuple[HeldGroup, ...] = ()
    group_canaries: tuple[Tracked, ...] = ()

    def with_claimed_canaries(self, verdict_key: str) -> BatchPlan:
        """The probe is this run's: the canaries go now, with no delay (the cooldown was theirs)."""
        tag = VerdictTag(verdict_key, trial=True)
        return replace(
            self,
            redrive=tuple(Redrive(t, 0, tag) for t in self.canaries),
            stop=StopReason.CANARY_SENT,
        )

    def with_probe_taken(self) -> BatchPlan:
        """Another run claimed the probe first: the canaries stay in the DLQ."""
        return replace(self, leave=self.leave + self.canaries, stop=StopReason.PROBE_TAKEN)


@dataclass(frozen=True)
class PlanRules:
    """The settings a plan depends on."""

    max_redrive_count: int
    fifo: bool
    canary_size: int
    base_delay_seconds: int
    max_delay_seconds: int
    breaker: BreakerPolicy
    routes: Routes
    # Failures while the consumer processed others before a message is parked (consumer_health.py).
    suspect_limit: int = 3
    # A DLQ of another kind: its targets take no DelaySeconds, so every backoff step is waited out
    # in the DLQ, as FIFO's are (but each message on its own).
    waits_in_dlq: bool = False


@dataclass(frozen=True)
class BatchState:
    """Where the run stands when the batch arrives."""

    mode: Mode
    breaker: Breaker
    so_far: Tally  # the run's (or worker's) tally, this batch's receive included
    now: int
    # An operator's marks on the failure groups of the batch (retry or park), by fingerprint.
    groups: Mapping[str, GroupMark] = field(default_factory=dict)
    # REDRIVE with consumer verdicts: the tag the run's re-drives carry.
    tag: VerdictTag | None = None
    # The DLQ's retention: messages near its end are parked in every mode (None: no guard).
    retention: Retention | None = None
    # A shared DLQ with a breaker per source: the source whose part of the run this is. Messages
    # of other sources are left for their own part; None: every message is the run's.
    source: str | None = None
    # What the source queues' metrics say about their consumers, by source URL (none: not read).
    signals: Mapping[str, ConsumerSignal] = field(default_factory=dict)
    # A batch of a large drain (runtime/workers.py): a re-drive is delayed only by what is left of
    # its backoff step, so the consumer answers the pace at once (a backlog's messages have waited
    # their step out in the DLQ).
    drain: bool = False
    # The failure groups held in a partial outage (held.py), by group.
    held: Mapping[str, HeldGroup] = field(default_factory=dict)


@dataclass(frozen=True)
class Due:
    """The batch's messages of the run's source (one per identity), the part of them that is due
    for the mode's handling (not parked), and the waits of messages still backing off in the DLQ."""

    batch: list[Tracked]
    messages: list[Tracked]
    waits: dict[str, int]
    # The groups of the messages whose failure is named transient (held.py), by DLQ MessageId.
    groups: dict[str, str] = field(default_factory=dict)


class Planner:
    """Plans batches; pure but for the random jitter of the delays (an injected Random)."""

    def __init__(self, rules: PlanRules, rng: random.Random) -> None:
        self.rules = rules
        self.rng = rng
        self._by_mode: dict[Mode, Callable[[BatchPlan, Due, BatchState], BatchPlan]] = {
            Mode.REDRIVE: self._redrive,
            Mode.PROBE: self._probe,
            Mode.WATCH: self._look_for_canary,
            Mode.VERDICT: self._look_for_canary,
            Mode.SWEEP: self._sweep,
        }

    def plan(self, tracking: Tracking, state: BatchState) -> BatchPlan:
        """Failures of a group an operator parked, terminal failures, poison, messages from unknown
        sources and messages the DLQ's retention is about to delete are parked in every mode that
        reads the DLQ (parking never touches the consumer); what is
        due is then handled as the mode says. Messages of another source than ``state.source`` are
        left whole for that source's part (a poison one that came back is evidence for its own
        breaker), unless the retention is about to delete them."""
        rules = self.rules
        others = {t.message_id for t in tracking.unique if self._of_another_source(t, state.source)}
        judged = [self._judge(t, state) if t.message_id not in others else Judged(t) for t in tracking.unique]
        unique = [j.tracked for j in judged]
        outage = {j.tracked.message_id for j in judged if j.outage}
        batch = [t for t in unique if t.message_id not in others]
        waits = self._waits(batch, state.now)
        # Named transient: never parked by its count; its group may be held (held.py). Not on FIFO,
        # where a held message would hold its whole message group behind it.
        groups = {} if rules.fifo else {t.message_id: g for t in batch if (g := failure_group(t))}
        counted = self._returned(batch, outage, waits, state, groups)
        by_metrics = any(
            t.message_id in outage and not t.redriven_since(state.breaker.changed_at) for t in counted
        )
        park, due, leave = [], [], list(tracking.duplicates)
        for t in unique:
            if t.message_id in others and not (
                state.retention and expiring(t, state.retention, now=state.now)
            ):
                leave.append(t)
            elif parked_group := operator_parked(t, state.groups):
                park.append(Park(t, operator_reason(t, parked_group, now=state.now, routes=rules.routes)))
            elif terminal(t, state.groups):
                park.append(Park(t, terminal_reason(t, now=state.now, routes=rules.routes)))
            elif t.mark.suspected >= rules.suspect_limit and t.message_id not in groups:
                park.append(
                    Park(t, suspect_reason(t, rules.suspect_limit, now=state.now, routes=rules.routes))
                )
            elif over_limit(t, rules.max_redrive_count) and t.message_id not in groups:
                reason = over_limit_reason(t, rules.max_redrive_count, now=state.now, routes=rules.routes)
                park.append(Park(t, reason))
            elif unreplayable(t):
                park.append(Park(t, unreplayable_reason(t, now=state.now, routes=rules.routes)))
            elif rules.routes.source_url(t) is None:
                park.append(Park(t, unknown_source_reason(t, now=state.now, routes=rules.routes)))
            elif state.retention and expiring(t, state.retention, now=state.now):
                park.append(Park(t, expiring_reason(t, state.retention, now=state.now, routes=rules.routes)))
            else:
                due.append(t)
        unjudged = sum(1 for t in batch if operator_parked(t, state.groups) or t.mark.suspect)
        base = BatchPlan(
            park=tuple(park),
            leave=tuple(leave),
            returned=len(counted),
            others=len(others),
            unjudged=unjudged,
            evidence=Evidence.METRICS if by_metrics else Evidence.RETURNS,
        )
        return self._by_mode[state.mode](base, Due(batch, due, waits, groups), state)

    @staticmethod
    def _returned(
        batch: list[Tracked],
        outage: set[str],
        waits: dict[str, int],
        state: BatchState,
        groups: Mapping[str, str],
    ) -> list[Tracked]:
        """The batch's failures that count against the breaker: re-driven in its current period, or
        placed in an outage by the metrics. A message still waiting out its backoff in the DLQ is
        counted when it is acted on, not each time it reappears; a terminal failure, one of a group
        an operator parked, or a suspect says the message is bad, not that the consumer is broken;
        one of a held group, that its group is out, which its canary tests."""
        return [
            t
            for t in batch
            if (t.redriven_since(state.breaker.changed_at) or t.message_id in outage)
            and t.message_id not in waits
            and not (t.mark.failure and t.mark.failure.terminal)
            and operator_parked(t, state.groups) is None
            and not t.mark.suspect
            and not _of_held_group(t, groups, state.held)
        ]

    def _judge(self, tracked: Tracked, state: BatchState) -> Judged:
        """The message's failure in the light of its consumer's metrics (consumer_health.py)."""
        source = self.rules.routes.source_url(tracked)
        signal = state.signals.get(source) if source is not None else None
        return judge(tracked, signal, state.breaker, failure_ratio=self.rules.breaker.failure_ratio)

    def _of_another_source(self, tracked: Tracked, source: str | None) -> bool:
        came_from = self.rules.routes.source_url(tracked)
        return source is not None and came_from is not None and came_from != source

    def _waits(self, batch: list[Tracked], now: int) -> dict[str, int]:
        """FIFO: every step is waited out in the DLQ, in group order; standard: the steps past
        what DelaySeconds allows, each message on its own; a DLQ of another kind: every step, each
        message on its own."""
        rules = self.rules
        base, cap = rules.base_delay_seconds, rules.max_delay_seconds
        if rules.fifo:
            return fifo.backoff_waits(batch, now=now, base_seconds=base, max_seconds=cap)
        return backoff.dlq_waits(
            batch, now=now, base_seconds=base, max_seconds=cap, every_step=rules.waits_in_dlq
        )

    def _redrive(self, base: BatchPlan, due: Due, state: BatchState) -> BatchPlan:
        so_far = RunOutcome(
            received=state.so_far.received_judged - base.others - base.unjudged,
            returned=state.so_far.returned + base.returned,
            errors=state.so_far.errors,
        )
        if trips_now(state.breaker, so_far, self.rules.breaker):
            leave = base.leave + tuple(due.messages)
            return replace(base, leave=leave, open_breaker=True, stop=StopReason.BREAKER_OPENED)
        held = self._held_groups(due, state)
        messages = [t for t in due.messages if t.message_id not in held.decided]
        waits = due.waits
        # A longer wait is renewed by the run that receives the message when its hold ends.
        hold = tuple(
            Hold(t, self._hold_seconds(t, min(waits[t.message_id], backoff.MAX_HOLD_SECONDS), state))
            for t in messages
            if t.message_id in waits
        )
        # The trial tests the consumer now: like canaries, its messages go with no delay.
        trial = state.tag is not None and state.tag.trial
        redrive = tuple(
            Redrive(t, 0 if trial else self._delay_for(t, state), state.tag)
            for t in messages
            if t.message_id not in waits
        )
        return replace(
            base,
            redrive=held.redrive + redrive,
            hold=held.hold + hold,
            leave=base.leave + held.leave,
            held=tuple(held.groups.values()),
            group_canaries=held.canaries,
        )

    def _held_groups(self, due: Due, state: BatchState) -> HeldDecisions:
        """The messages of named-transient failures: held with their group, its canary, released,
        or (not held) left to the backoff as any other (held.py)."""
        rules = self.rules
        canary_rules = CanaryRules(rules.base_delay_seconds, rules.max_delay_seconds)
        now, groups, decisions = state.now, dict(state.held), HeldDecisions()
        for t in due.messages:
            name = due.groups.get(t.message_id)
            if name is None:
                continue
            at_limit = t.mark.suspected >= rules.suspect_limit or over_limit(t, rules.max_redrive_count)
            room = sum(1 for g in groups.values() if g.held) < MAX_HELD_GROUPS
            holding = decide(
                t, name, groups.get(name), at_limit=at_limit, now=now, rules=canary_rules, room=room
            )
            if holding.held is Held.NOT_HELD or holding.group is None:
                continue
            group = holding.group
            if holding.held is Held.CANARY:
                # Tagged as a probe's canary: its first failure comes straight back (the kit), or is
                # the target's answer (a function probed synchronously); the kit counts its verdict.
                tag = VerdictTag(canary_verdict_key(now, t.mark.identity), trial=True)
                group = replace(group, verdict_key=tag.verdict_key)
                decisions.redrive += (Redrive(t, 0, tag),)
                decisions.canaries += (t,)
            elif holding.held is Held.RELEASED:
                decisions.redrive += (Redrive(t, 0, state.tag),)
            elif holding.until > now:
                seconds = min(holding.until - now, backoff.MAX_HOLD_SECONDS)
                decisions.hold += (Hold(t, self._hold_seconds(t, seconds, state)),)
            else:
                decisions.leave += (t,)
            decisions.decided.add(t.message_id)
            if groups.get(name) != group:
                groups[name] = group
                decisions.groups[name] = group
        return decisions

    @staticmethod
    def _hold_seconds(tracked: Tracked, seconds: int, state: BatchState) -> int:
        """A hold ends before the message enters the expiring window (retention.py)."""
        if state.retention is None:
            return seconds
        return capped_hold(tracked, seconds, state.retention, now=state.now)

    def _delay_for(self, tracked: Tracked, state: BatchState) -> int:
        """No delay for what waited out its backoff in the DLQ: all of FIFO's (they refuse
        DelaySeconds), and standard steps past 900 s; in a large drain, only what is left of the
        step since the message's last re-drive (or its send)."""
        rules = self.rules
        base, cap = rules.base_delay_seconds, rules.max_delay_seconds
        if (
            rules.fifo
            or rules.waits_in_dlq
            or backoff.waits_in_dlq(tracked, base_seconds=base, max_seconds=cap)
        ):
            return 0
        if state.drain:
            due = backoff.due_at(tracked, now=state.now, base_seconds=base, max_seconds=cap)
            return min(max(0, due - state.now), SQS_MAX_DELAY_SECONDS)
        return backoff.redrive_delay(tracked.mark.count + 1, base_seconds=base, max_seconds=cap, rng=self.rng)

    def _probe(self, base: BatchPlan, due: Due, _: BatchState) -> BatchPlan:
        """A suspect is never a canary: it tests the message, not the consumer. On FIFO a group
        whose head is a suspect gives no canary (the message behind it would overtake it)."""
        size, messages = self.rules.canary_size, due.messages
        if self.rules.fifo:
            heads = canary.choose(messages, size=len(messages), fifo=True)  # in order of preference
            chosen = [t for t in heads if not t.mark.suspect][:size]
        else:
            chosen = canary.choose([t for t in messages if not t.mark.suspect], size=size, fifo=False)
        rest = tuple(t for t in due.messages if t not in chosen)
        return replace(base, leave=base.leave + rest, canaries=tuple(chosen))

    def _sweep(self, base: BatchPlan, due: Due, _: BatchState) -> BatchPlan:
        """The retention sweep: only the expiring are parked, everything else is given back
        untouched. A sweep runs while the breaker is OPEN, HALF_OPEN or paused: parking a canary
        (terminal, or of a group an operator parked) there would hide it from the run that judges it."""
        expiring = tuple(p for p in base.park if p.reason.cause is ParkCause.EXPIRING)
        kept = tuple(p.tracked for p in base.park if p.reason.cause is not ParkCause.EXPIRING)
        return replace(base, park=expiring, leave=base.leave + kept + tuple(due.messages), returned=0)

    def _look_for_canary(self, base: BatchPlan, due: Due, state: BatchState) -> BatchPlan:
        """WATCH and VERDICT: nothing is re-driven. Checked over the whole batch: a canary back at
        its last allowed re-drive is parked, and its return still reopens the breaker."""
        probe = state.breaker.canary
        assert probe is not None, "a HALF_OPEN breaker in WATCH or VERDICT has a canary"
        back = canary.came_back(due.batch, probe)
        plan = replace(
            base, leave=base.leave + tuple(due.messages), canary_may_hide=canary.may_hide(due.batch, probe)
        )
        if back:
            return replace(
                plan,
                open_breaker=True,
                canaries_back=tuple(back),
                stop=StopReason.CANARY_FAILED,
                evidence=Evidence.RETURNS,
            )
        return plan


@dataclass
class HeldDecisions:
    """What a re-drive step made of the messages of held groups (``Planner._held_groups``)."""

    redrive: tuple[Redrive, ...] = ()
    hold: tuple[Hold, ...] = ()
    leave: tuple[Tracked, ...] = ()
    canaries: tuple[Tracked, ...] = ()
    decided: set[str] = field(default_factory=set)
    groups: dict[str, HeldGroup] = field(default_factory=dict)


def _of_held_group(tracked: Tracked, groups: Mapping[str, str], held: Mapping[str, HeldGroup]) -> bool:
    name = groups.get(tracked.message_id)
    group = held.get(name) if name is not None else None
    return group is not None and group.held
