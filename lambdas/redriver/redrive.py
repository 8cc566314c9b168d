"""One scheduled run of the re-driver: consult the breaker, then re-drive, probe or watch.

The run talks to AWS only through the adapters it is given. It deletes a DLQ message only after
the message was sent somewhere else (the source queue or the parking lot) and the send succeeded.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from redriver import breaker as circuit
from redriver.adapters import AwsCallError
from redriver.adapters.sqs_queue import (
    CALL_FAILED,
    BatchResult,
    EntryFailure,
    Outgoing,
    SqsQueue,
    queue_key_from_arn,
)
from redriver.adapters.state_table import MessageRecord, StateTable
from redriver.backoff import redrive_delay
from redriver.breaker import Breaker, Canary, Mode, RunOutcome, State
from redriver.envelope import HASH_IDENTITY_PREFIX, MARK_ATTRIBUTE, DlqMessage, Mark, string_attribute
from redriver.ratelimit import TokenBucket
from redriver.settings import Settings

SQS_RECEIVE_LIMIT = 10
BACKLOG_CHECK_EVERY = 100
# A message the parking lot refuses for good is hidden this long between tries. SQS caps a
# message's total visibility timeout at 12 hours from its receive, so 6 hours is always accepted.
UNPARKABLE_HIDE_SECONDS = 6 * 3600
REDRIVEN = "REDRIVEN"
PARKED = "PARKED"
LOOKING_FOR_CANARY = (Mode.WATCH, Mode.VERDICT)
# Entries not sent because an earlier message of their FIFO group was not: not an error of theirs.
BEHIND_UNSENT_GROUPMATE = "BehindUnsentGroupmate"


@dataclass
class RunReport:
    """What one run did; the handler turns it into metrics, tests assert on it."""

    mode: Mode
    breaker_state: State
    received: int = 0
    redriven: int = 0
    parked: int = 0
    returned: int = 0
    canaries: int = 0
    errors: int = 0
    unparkable: int = 0
    canary_may_hide: bool = False
    stopped_because: str = ""
    breaker_transitions: list[str] = field(default_factory=list)
    # The messages this report's loop may take: the run's limit, or a worker's share of it.
    limit: int = 0

    def merge(self, worker: RunReport) -> None:
        """Add a parallel worker's counts to the run's."""
        for name in ("received", "redriven", "parked", "returned", "canaries", "errors", "unparkable"):
            setattr(self, name, getattr(self, name) + getattr(worker, name))
        self.breaker_transitions += worker.breaker_transitions
        if worker.breaker_transitions:
            self.breaker_state = worker.breaker_state


@dataclass(frozen=True)
class Tracked:
    """A received DLQ message with its identity and re-drive history resolved."""

    message: DlqMessage
    mark: Mark

    @property
    def carries_mark(self) -> bool:
        """True when the mark travels in the message; False when only the table counts it."""
        return self.message.mark is not None or self.message.has_room_for_mark


@dataclass(frozen=True)
class Plan:
    redrive: list[tuple[Tracked, int]] = field(default_factory=list)  # (message, delay seconds)
    park: list[tuple[Tracked, dict[str, Any]]] = field(default_factory=list)  # (message, reason)
    leave: list[Tracked] = field(default_factory=list)
    hold: list[tuple[Tracked, int]] = field(default_factory=list)  # FIFO backoff: (message, seconds)


class Redriver:
    def __init__(
        self,
        settings: Settings,
        *,
        dlq: SqsQueue,
        sources: Sequence[SqsQueue],
        parking_lot: SqsQueue,
        state: StateTable,
        logger: logging.Logger | Any,
        clock: Callable[[], float],
        rng: random.Random,
        limiter: TokenBucket | None = None,
    ) -> None:
        self.settings = settings
        # One batch may go at once; beyond that, re-drives flow at the configured rate.
        self.limiter = limiter or TokenBucket(settings.max_redrives_per_second, burst=SQS_RECEIVE_LIMIT)
        self.dlq = dlq
        # A message goes back to the queue SQS names as its source; without a name, to the first.
        self.default_source = sources[0]
        self.sources = {queue.key: queue for queue in sources}
        self.parking_lot = parking_lot
        self.state = state
        self.log = logger
        self.clock = clock
        self.rng = rng

    def now(self) -> int:
        return int(self.clock())

    # -- the run -------------------------------------------------------------------------------

    def run(self, remaining_ms: Callable[[], int]) -> RunReport:
        """Do one scheduled run; ``remaining_ms`` is the Lambda context's time left."""
        stored = self.state.load_breaker(self.settings.breaker_key)
        breaker, mode = circuit.begin_run(stored, self.now(), self.settings.breaker)
        report = RunReport(mode=mode, breaker_state=breaker.state)
        if breaker is not stored and not self._save_breaker(breaker, stored, report):
            report.mode = Mode.SKIP
            return report
        if mode is Mode.SKIP:
            report.stopped_because = "breaker open"
            return report

        released: dict[str, str] = {}
        report.limit = self.settings.max_messages_per_run
        if mode is Mode.REDRIVE and self.settings.parallel_batches > 1:
            breaker = self._drain_in_parallel(breaker, report, remaining_ms, released)
        else:
            breaker = self._drain(breaker, report, remaining_ms, released, threading.Event())

        self._release(released, report)
        if report.mode is Mode.REDRIVE:
            self._end_redrive_run(breaker, report)
        elif report.mode is Mode.VERDICT and breaker.state is State.HALF_OPEN and not report.errors:
            self._judge_canary(breaker, report)
        return report

    def _drain(
        self,
        breaker: Breaker,
        report: RunReport,
        remaining_ms: Callable[[], int],
        released: dict[str, str],
        halt: threading.Event,
    ) -> Breaker:
        """Take batches until something says stop; return the breaker as this loop left it."""
        while not report.stopped_because:
            report.stopped_because = "halted" if halt.is_set() else self._stop_reason(report, remaining_ms)
            if report.stopped_because:
                break
            try:
                batch = self._receive(report)
                if not batch:
                    report.stopped_because = "DLQ empty"
                    break
                breaker, report.stopped_because = self._handle_batch(batch, breaker, report, released)
            except AwsCallError as exc:
                report.errors += 1
                self.log.error("run stopped by an AWS error", extra={"error": str(exc)})
                report.stopped_because = "AWS error"
        if report.stopped_because not in ("DLQ empty", "per-run limit", "halted"):
            halt.set()  # the breaker opened, AWS failed, time or back-pressure: every worker stops
        return breaker

    def _drain_in_parallel(
        self, breaker: Breaker, report: RunReport, remaining_ms: Callable[[], int], released: dict[str, str]
    ) -> Breaker:
        """REDRIVE with several batches in flight at once, so the rate limit is reachable at real
        AWS latency. Each worker keeps its own report and breaker copy; SQS hands each message to
        one receive, the breaker writes are conditional, and the rate limit is shared."""
        workers = self.settings.parallel_batches
        halt = threading.Event()
        shares = [
            RunReport(mode=report.mode, breaker_state=breaker.state, limit=-(-report.limit // workers))
            for _ in range(workers)
        ]
        holds: list[dict[str, str]] = [{} for _ in range(workers)]

        def work(share: RunReport, held: dict[str, str]) -> Breaker:
            try:
                return self._drain(breaker, share, remaining_ms, held, halt)
            except BaseException:
                halt.set()  # this worker died: the others stop before their next batch
                raise

        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(work, share, held) for share, held in zip(shares, holds, strict=True)]
            breakers = [future.result() for future in futures]
        for share, held in zip(shares, holds, strict=True):
            report.merge(share)
            released.update(held)
        reasons = [share.stopped_because for share in shares]
        report.stopped_because = next((r for r in reasons if r not in ("DLQ empty", "halted")), reasons[0])
        return max(breakers, key=lambda b: b.version)

    def _judge_canary(self, breaker: Breaker, report: RunReport) -> None:
        """The scan after the canary's window did not find it: a success, unless it could not see.

        When the canary may be hidden behind its FIFO group, the verdict waits; after a second
        window without a clear view it counts as a failure: never close on unread evidence.
        """
        canary = breaker.canary
        assert canary is not None
        now = self.now()
        if not report.canary_may_hide:
            self.log.info("canary stayed away: one success")
            self._transition(breaker, circuit.canary_passed(breaker, now, self.settings.breaker), report)
        elif now >= canary.verdict_at + (canary.verdict_at - canary.sent_at):
            self.log.warning("canary hidden behind its FIFO group for two windows: opening the circuit")
            self._transition(breaker, breaker.opened(now), report)
        else:
            self.log.info("canary may be hidden behind its FIFO group: verdict postponed")

    def _stop_reason(self, report: RunReport, remaining_ms: Callable[[], int]) -> str:
        if report.received >= report.limit:
            return "per-run limit"
        if remaining_ms() < self.settings.time_margin_seconds * 1000:
            return "time budget"
        if report.mode is Mode.REDRIVE and self._source_backlogged(report):
            return "source backlog"
        return ""

    def _source_backlogged(self, report: RunReport) -> bool:
        """Back-pressure: is a source queue's backlog above the limit? Checked before the first
        batch and every BACKLOG_CHECK_EVERY messages after, so it costs little per message."""
        limit = self.settings.source_backlog_limit
        if not limit or report.received % BACKLOG_CHECK_EVERY >= SQS_RECEIVE_LIMIT:
            return False
        for source in self.sources.values():
            try:
                backlog = source.backlog()
            except AwsCallError as exc:
                # Unknown backlog: go on, the rate limit still holds (a missing queue is parked).
                self.log.warning("source backlog unknown", extra={"queue": source.url, "error": str(exc)})
                continue
            if backlog > limit:
                self.log.info(
                    "source backlog above the limit: re-drives wait",
                    extra={"queue": source.url, "backlog": backlog},
                )
                return True
        return False

    def _receive(self, report: RunReport) -> list[DlqMessage]:
        wanted = min(SQS_RECEIVE_LIMIT, report.limit - report.received)
        batch = self.dlq.receive(
            wanted,
            wait_seconds=self.settings.receive_wait_seconds,
            visibility_timeout=self.settings.dlq_visibility_timeout_seconds,
        )
        report.received += len(batch)
        return batch

    def _handle_batch(
        self,
        batch: list[DlqMessage],
        breaker: Breaker,
        report: RunReport,
        released: dict[str, str],
    ) -> tuple[Breaker, str]:
        """Decide and act on one received batch; return the breaker and a reason to stop, if any."""
        tracked, duplicates = self._track(batch)
        waits = self._fifo_waits(tracked) if self.settings.fifo else {}
        # A FIFO message still waiting out its backoff is counted when it is acted on, not twice.
        report.returned += sum(
            1
            for t in tracked
            if _redriven_since(t.mark, breaker.changed_at) and t.message.message_id not in waits
        )
        plan = Plan(leave=duplicates)
        due = []
        for t in tracked:
            if t.mark.count >= self.settings.max_redrives:
                plan.park.append((t, self._park_reason(t)))
            elif self._source_of(t) is None:
                plan.park.append(
                    (t, self._park_reason(t, f"no configured source queue is {t.message.source_arn}"))
                )
            else:
                due.append(t)
        stop = ""

        if report.mode is Mode.REDRIVE and self._trips_breaker(breaker, report):
            # This run is already a failed run and it is the one that opens the breaker:
            # re-driving the rest would send it into the consumer it just judged broken.
            plan.leave.extend(due)
            breaker = self._transition(breaker, breaker.opened(self.now()), report)
            stop = "breaker opened"
        elif report.mode is Mode.REDRIVE and self.settings.fifo:
            for t in due:
                if t.message.message_id in waits:
                    plan.hold.append((t, waits[t.message.message_id]))
                    self._log_decision(
                        "backing off in the DLQ (FIFO)", t, wait_seconds=waits[t.message.message_id]
                    )
                else:
                    plan.redrive.append((t, 0))
        elif report.mode is Mode.REDRIVE:
            plan.redrive.extend((t, self._delay_for(t)) for t in due)
        elif report.mode in LOOKING_FOR_CANARY:
            assert breaker.canary is not None
            # Checked over the whole batch: a canary back at its last allowed re-drive is parked,
            # and its return still reopens the breaker.
            back = [t for t in tracked if t.mark.identity in breaker.canary.identities]
            plan.leave.extend(due)
            # FIFO: a failed canary returns behind its group's other messages, which a scan that
            # holds one of them cannot see past.
            report.canary_may_hide |= any(
                _group_of(t) in breaker.canary.groups and t.mark.identity not in breaker.canary.identities
                for t in tracked
            )
            if back:
                self._log_decision("canary came back: opening the circuit", back[0])
                breaker = self._transition(breaker, breaker.opened(self.now()), report)
                stop = "canary failed"
        else:  # PROBE
            candidates = self._canary_candidates(due)
            canaries = candidates[: self.settings.canary_size]
            plan.leave.extend(t for t in due if t not in canaries)
            if canaries:
                breaker, claimed = self._claim_canary(breaker, canaries, report)
                if claimed:
                    plan.redrive.extend((t, 0) for t in canaries)
                    stop = "canary sent"
                else:
                    plan.leave.extend(canaries)
                    stop = "another run holds the probe"

        # What this batch does not act on is given back at the end of the run, even if acting fails.
        for t in plan.leave:
            released[t.message.message_id] = t.message.receipt_handle
        if plan.hold:
            self.dlq.change_visibility(
                {t.message.message_id: (t.message.receipt_handle, s) for t, s in plan.hold}
            )
        try:
            sent_to_source = self._execute(plan, report)
        except AwsCallError:
            if report.mode is Mode.PROBE and plan.redrive:
                breaker = self._canary_not_sent(breaker, report)
            raise
        if report.mode is Mode.PROBE and plan.redrive:
            if sent_to_source:
                report.canaries += len(sent_to_source)
            else:
                breaker = self._canary_not_sent(breaker, report)
        return breaker, stop

    def _trips_breaker(self, breaker: Breaker, report: RunReport) -> bool:
        policy = self.settings.breaker
        so_far = RunOutcome(received=report.received, returned=report.returned, errors=report.errors)
        return circuit.is_failed_run(so_far, policy) and breaker.failures + 1 >= policy.failure_threshold

    # -- identities and decisions --------------------------------------------------------------

    def _track(self, batch: list[DlqMessage]) -> tuple[list[Tracked], list[Tracked]]:
        """Resolve identity and history: from the mark, or from the table for unmarked messages.

        Returns the messages to act on, and later copies of an identity already in this batch
        (a redelivered duplicate): those are left for a later run, so one batch never writes the
        same record twice.
        """
        now = self.now()
        unmarkable = [m for m in batch if m.mark is None and not m.has_room_for_mark]
        recorded = self.state.load_marks(m.content_identity for m in unmarkable) if unmarkable else {}
        unique: dict[str, Tracked] = {}
        duplicates: list[Tracked] = []
        for message in batch:
            if message.malformed_mark:
                self.log.warning(
                    "ignoring a malformed re-drive mark", extra={"message_id": message.message_id}
                )
            if message.mark is not None:
                mark = message.mark
            elif message.has_room_for_mark:
                mark = Mark(identity=message.message_id, first_failed_at=now)
            else:
                identity = message.content_identity
                mark = recorded.get(identity) or Mark(identity=identity, first_failed_at=now)
            tracked = Tracked(message, mark)
            if mark.identity in unique:
                duplicates.append(tracked)
                self._log_decision("duplicate in batch: left for a later run", tracked)
            else:
                unique[mark.identity] = tracked
        return list(unique.values()), duplicates

    def _source_url(self, tracked: Tracked) -> str:
        """Where the message came from, for records and reasons: a queue URL, or the ARN SQS gave."""
        source = self._source_of(tracked)
        return source.url if source else str(tracked.message.source_arn)

    def _canary_candidates(self, due: list[Tracked]) -> list[Tracked]:
        """The canary tests the consumer, not the message: those that failed least often first.

        On FIFO only a group's first message may go (a later one would overtake it), and a group
        alone in the batch first: a failed canary returns behind its group's other messages in the
        DLQ, where a scan cannot see it.
        """
        if not self.settings.fifo:
            return sorted(due, key=lambda t: t.mark.count)
        groups = Counter(_group_of(t) for t in due)
        heads = {_group_of(t): t for t in reversed(due)}
        return sorted(heads.values(), key=lambda t: (groups[_group_of(t)], t.mark.count))

    def _source_of(self, tracked: Tracked) -> SqsQueue | None:
        """The queue the message came from: the one SQS names (shared DLQ), else the default;
        None when SQS names a queue that is not configured (the message is then parked)."""
        arn = tracked.message.source_arn
        return self.default_source if arn is None else self.sources.get(queue_key_from_arn(arn))

    def _fifo_waits(self, tracked: list[Tracked]) -> dict[str, int]:
        """FIFO queues refuse DelaySeconds: a message waits out its backoff hidden in the DLQ.

        Returns the seconds each not-yet-due message must still wait, by DLQ MessageId. Within a
        message group, once one message waits, the ones after it wait at least as long, so a
        group's messages go back in the order they failed.
        """
        now = self.now()
        group_wait: dict[str, int] = {}
        waits = {}
        for t in tracked:
            group = _group_of(t)
            wait = max(self._fifo_due_at(t) - now, group_wait.get(group, 0))
            if wait > 0:
                group_wait[group] = waits[t.message.message_id] = wait
        return waits

    def _fifo_due_at(self, tracked: Tracked) -> int:
        """When the next re-drive is due: the backoff counted from the last re-drive, or the send.

        The jitter is drawn from the identity and count, so every run computes the same time.
        """
        mark = tracked.mark
        sent_ms = tracked.message.system_attributes.get("SentTimestamp")
        start = mark.last_redriven_at or (int(sent_ms) // 1000 if sent_ms else self.now())
        delay = redrive_delay(
            mark.count + 1,
            base_seconds=self.settings.base_delay_seconds,
            max_seconds=self.settings.max_delay_seconds,
            rng=random.Random(f"{mark.identity}:{mark.count}"),
        )
        return start + delay

    def _delay_for(self, tracked: Tracked) -> int:
        return redrive_delay(
            tracked.mark.count + 1,
            base_seconds=self.settings.base_delay_seconds,
            max_seconds=self.settings.max_delay_seconds,
            rng=self.rng,
        )

    def _park_reason(self, tracked: Tracked, why: str | None = None) -> dict[str, Any]:
        mark = tracked.mark
        return {
            "why": why or f"failed after {mark.count} re-drives (limit {self.settings.max_redrives})",
            "redrive_count": mark.count,
            "first_failed_at": mark.first_failed_at,
            "last_failed_at": self.now(),
            "source_queue": self._source_url(tracked),
            "dlq_message_id": tracked.message.message_id,
        }

    # -- acting --------------------------------------------------------------------------------

    def _execute(self, plan: Plan, report: RunReport) -> list[Tracked]:
        """Send the re-drives, then the parkings, then delete what arrived; return what was re-driven.

        Raises AwsCallError after deleting what did arrive when a whole send call failed.
        """
        arrived: dict[str, str] = {}
        try:
            redriven, redrive_error = self._send_redrives(plan, report, arrived)
            park_error = self._send_parked(plan.park, report, arrived)
        finally:
            # Even when parking fails after the re-drives went out: what arrived leaves the DLQ.
            self._delete_arrived(arrived, report)
        if redrive_error or park_error:
            raise AwsCallError(redrive_error or park_error or "")
        return redriven

    def _delete_arrived(self, arrived: dict[str, str], report: RunReport) -> None:
        if not arrived:
            return
        deleted = self.dlq.delete(arrived)
        for key, failure in deleted.failed.items():
            report.errors += 1
            self.log.error(
                "delete from the DLQ failed: the message will be seen again (a duplicate)",
                extra={"message_id": key, "code": failure.code},
            )

    def _send_redrives(
        self, plan: Plan, report: RunReport, arrived: dict[str, str]
    ) -> tuple[list[Tracked], str | None]:
        if not plan.redrive:
            return [], None
        now = self.now()
        outgoing = {
            str(index): (tracked, tracked.mark.after_redrive(now), delay)
            for index, (tracked, delay) in enumerate(plan.redrive)
        }
        # Written before the send: for messages counted only in the table, a count written after
        # would be lost by a crash in between, and the message could then loop forever. A marked
        # message carries its own count and history; recording it too is optional (it costs one
        # write unit per re-drive, more than the SQS requests of the whole re-drive).
        self.state.save_records(
            [
                MessageRecord(mark, REDRIVEN, self._source_url(tracked))
                for tracked, mark, _ in outgoing.values()
                if self.settings.record_every_redrive or not tracked.carries_mark
            ]
        )
        self.limiter.acquire(len(outgoing))
        result = BatchResult()
        blocked_groups: set[str] = set()
        for round_keys in self._send_rounds(outgoing):
            by_source: dict[str, list[Outgoing]] = {}
            for key in round_keys:
                tracked, mark, delay = outgoing[key]
                if _group_of(tracked) in blocked_groups:
                    # An earlier message of its group was not sent: sending this one would reorder.
                    result.failed[key] = EntryFailure(BEHIND_UNSENT_GROUPMATE, "", sender_fault=False)
                    continue
                source = self._source_of(tracked) or self.default_source
                dedup = _deduplication_id(tracked, str(mark.count))
                by_source.setdefault(source.key, []).append(
                    self._outgoing(key, tracked, mark.to_json(), delay, dedup)
                )
            for source_key, messages in by_source.items():
                sent_now = self.sources[source_key].send(messages)
                result.merge(sent_now)
                blocked_groups.update(_group_of(outgoing[key][0]) for key in sent_now.failed)
        sent = []
        for key in result.succeeded:
            tracked, mark, delay = outgoing[key]
            arrived[tracked.message.message_id] = tracked.message.receipt_handle
            sent.append(tracked)
            report.redriven += 1
            self._log_decision("re-driven", tracked, redrive_count=mark.count, delay_seconds=delay)
        not_sent = []
        for key, failure in result.failed.items():
            tracked, _, _ = outgoing[key]
            if failure.sender_fault:
                # SQS will never accept this message as it is: park it rather than retry forever.
                reason = self._park_reason(tracked, f"source queue rejected it: {failure.code}")
                plan.park.append((tracked, reason))
            else:
                # A failed call is counted once, by the run that it stops.
                report.errors += failure.code not in (CALL_FAILED, BEHIND_UNSENT_GROUPMATE)
                not_sent.append(tracked)
                self._log_decision(
                    "re-drive send failed; it stays in the DLQ",
                    tracked,
                    code=failure.code,
                    error=failure.message,
                )
        self._undo_table_counts(not_sent)
        return sent, result.call_error

    def _send_rounds(self, outgoing: dict[str, tuple[Tracked, Mark, int]]) -> list[list[str]]:
        """The sends of a batch: one round on standard queues; on FIFO, round k holds each group's
        k-th message, so a group's next message goes only after the one before it was sent."""
        if not self.settings.fifo:
            return [list(outgoing)]
        rounds: list[list[str]] = []
        position: Counter[str] = Counter()
        for key, (tracked, _, _) in outgoing.items():
            group = _group_of(tracked)
            if position[group] == len(rounds):
                rounds.append([])
            rounds[position[group]].append(key)
            position[group] += 1
        return rounds

    def _outgoing(
        self, key: str, tracked: Tracked, mark_json: str, delay: int, deduplication_id: str
    ) -> Outgoing:
        """The message as it goes out: body and attributes unchanged, the mark, the trace header.

        On FIFO queues it keeps its group, and gets a deduplication id that is new for each
        re-drive (a reused one is dropped for 5 minutes). For a marked message it is the same if
        this very re-drive is sent again after a crash, so SQS drops that duplicate; a message
        counted in the table has moved its count ahead, so its retry is a duplicate, never a loss.
        """
        system = tracked.message.system_attributes
        return Outgoing(
            entry_id=key,
            body=tracked.message.body,
            attributes=_with_mark(tracked, mark_json),
            delay_seconds=delay,
            trace_header=system.get("AWSTraceHeader"),
            group_id=_group_of(tracked) if self.settings.fifo else None,
            deduplication_id=deduplication_id if self.settings.fifo else None,
        )

    def _undo_table_counts(self, not_sent: list[Tracked]) -> None:
        """Put back the counts of table-counted messages whose re-drive did not happen."""
        undo = [MessageRecord(t.mark, REDRIVEN, self._source_url(t)) for t in not_sent if not t.carries_mark]
        if undo:
            self.state.save_records(undo)

    def _send_parked(
        self, parked: list[tuple[Tracked, dict[str, Any]]], report: RunReport, arrived: dict[str, str]
    ) -> str | None:
        if not parked:
            return None
        self.state.save_records(
            [
                MessageRecord(tracked.mark, PARKED, self._source_url(tracked), json.dumps(reason))
                for tracked, reason in parked
            ]
        )
        by_key = {str(index): item for index, item in enumerate(parked)}
        result = self.parking_lot.send(
            [
                self._outgoing(
                    key, tracked, tracked.mark.to_json(parked=reason), 0, _deduplication_id(tracked, "parked")
                )
                for key, (tracked, reason) in by_key.items()
            ]
        )
        for key in result.succeeded:
            tracked, reason = by_key[key]
            arrived[tracked.message.message_id] = tracked.message.receipt_handle
            report.parked += 1
            self._log_decision("parked", tracked, reason=reason["why"])
        self._handle_unparkable(result, by_key, report)
        return result.call_error

    def _handle_unparkable(
        self, result: BatchResult, by_key: dict[str, tuple[Tracked, dict[str, Any]]], report: RunReport
    ) -> None:
        """A message the parking lot refuses for good stays in the DLQ, hidden for 6 hours.

        It is not a consumer failure, so it does not count toward the breaker; it is logged as an
        error and counted (metric ``Unparkable``) every time, so it cannot go unnoticed.
        """
        refused: dict[str, str] = {}
        for key, failure in result.failed.items():
            tracked = by_key[key][0]
            if failure.sender_fault:
                report.unparkable += 1
                refused[tracked.message.message_id] = tracked.message.receipt_handle
                self._log_decision(
                    "the parking lot refuses this message; it stays in the DLQ", tracked, code=failure.code
                )
            else:
                report.errors += failure.code != CALL_FAILED
                self._log_decision("parking failed; it stays in the DLQ", tracked, code=failure.code)
        if refused:
            self.dlq.change_visibility(
                {key: (handle, UNPARKABLE_HIDE_SECONDS) for key, handle in refused.items()}
            )

    def _release(self, released: dict[str, str], report: RunReport) -> None:
        """Give back messages this run received but did not act on, so the next run sees them."""
        if not released:
            return
        try:
            self.dlq.change_visibility({key: (handle, 0) for key, handle in released.items()})
        except AwsCallError as exc:
            # Not a loss: they become visible again when their visibility timeout ends.
            report.errors += 1
            self.log.warning("could not release held messages", extra={"error": str(exc)})

    # -- breaker writes ------------------------------------------------------------------------

    def _claim_canary(
        self, breaker: Breaker, canaries: list[Tracked], report: RunReport
    ) -> tuple[Breaker, bool]:
        window = (self._source_of(canaries[0]) or self.default_source).redrive_window()
        now = self.now()
        verdict_at = now + window.seconds
        canary = Canary(
            identities=tuple(t.mark.identity for t in canaries),
            verdict_at=verdict_at,
            groups=tuple(_group_of(t) for t in canaries) if self.settings.fifo else (),
            sent_at=now,
        )
        claimed = circuit.with_canary(breaker, canary)
        if not self._save_breaker(claimed, breaker, report):
            return breaker, False
        for tracked in canaries:
            self._log_decision("canary", tracked, verdict_at=verdict_at)
        return claimed, True

    def _canary_not_sent(self, breaker: Breaker, report: RunReport) -> Breaker:
        self.log.warning("canary could not be sent: opening the circuit")
        return self._transition(breaker, breaker.opened(self.now()), report)

    def _end_redrive_run(self, breaker: Breaker, report: RunReport) -> None:
        outcome = RunOutcome(received=report.received, returned=report.returned, errors=report.errors)
        after = circuit.end_redrive_run(breaker, outcome, self.now(), self.settings.breaker)
        if after is not None:
            self._transition(breaker, after, report)

    def _transition(self, before: Breaker, after: Breaker, report: RunReport) -> Breaker:
        """Write ``after`` conditionally; on a lost race keep ``before`` (another run decided)."""
        try:
            saved = self._save_breaker(after, before, report)
        except AwsCallError as exc:
            report.errors += 1
            self.log.error("breaker write failed", extra={"error": str(exc)})
            return before
        return after if saved else before

    def _save_breaker(self, after: Breaker, before: Breaker, report: RunReport) -> bool:
        saved = self.state.save_breaker(self.settings.breaker_key, after, expected_version=before.version)
        if not saved:
            self.log.warning(
                "breaker changed by another run; this run's transition is dropped",
                extra={"expected_version": before.version},
            )
            return False
        if after.state is not before.state:
            report.breaker_transitions.append(f"{before.state.value}->{after.state.value}")
            self.log.info(
                "breaker transition",
                extra={"from": before.state.value, "to": after.state.value, "version": after.version},
            )
        report.breaker_state = after.state
        return True

    def _log_decision(self, decision: str, tracked: Tracked, **fields: Any) -> None:
        self.log.info(
            decision,
            extra={
                "identity": tracked.mark.identity,
                "message_id": tracked.message.message_id,
                "redrive_count": tracked.mark.count,
                **fields,
            },
        )


def _group_of(tracked: Tracked) -> str:
    """A FIFO message's group (standard queues have none: each message is its own)."""
    return tracked.message.system_attributes.get("MessageGroupId") or tracked.mark.identity


def _deduplication_id(tracked: Tracked, suffix: str) -> str:
    """A FIFO deduplication id for this message and step. A content identity (``sha256:``) can be
    shared by two different messages, so those use the DLQ MessageId instead; SQS drops a repeated
    id for 5 minutes, which must only ever drop a true duplicate."""
    identity = tracked.mark.identity
    base = tracked.message.message_id if identity.startswith(HASH_IDENTITY_PREFIX) else identity
    return f"{base}:{suffix}"[:128]


def _redriven_since(mark: Mark, since: int) -> bool:
    last = mark.last_redriven_at
    return last is not None and last >= since


def _with_mark(tracked: Tracked, mark_json: str) -> dict[str, Any]:
    """The message's own attributes, plus the mark when the message has room for it."""
    attributes: dict[str, Any] = dict(tracked.message.attributes)
    if tracked.carries_mark:
        attributes[MARK_ATTRIBUTE] = string_attribute(mark_json)
    return attributes
