"""Continuation: when a run is followed at once by another instead of waiting for the next
scheduled tick, and the asynchronous invocation that starts it.

Draining is bounded by the rate limit, not by the schedule: a run that stopped on its time budget
or per-run limit with the breaker CLOSED, and moved messages, is followed by a continuation (as is
one that stopped early to start a large drain, runtime/workers.py). A run
that moved nothing, or stopped for any other reason (DLQ empty, back-pressure, the breaker), leaves
the next step to the schedule, so a chain cannot spin without progress."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.core.breaker import State
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import Resume
from sqs_redriver.runtime.report import RunReport, StopReason

if TYPE_CHECKING:
    from sqs_redriver.runtime.ports import ContinuationStore


CONTINUED_STOPS = frozenset({StopReason.PER_RUN_LIMIT, StopReason.TIME_BUDGET, StopReason.LARGE_BACKLOG})


def continues(report: RunReport, *, generation: int, max_continuations: int) -> bool:
    """Whether the run that produced ``report`` (the ``generation``-th continuation of its chain,
    0 for a scheduled run) is followed by another one now. A DLQ shared by sources with a breaker
    each has one continuation: it goes on when any source's part would."""
    return generation < max_continuations and any(_part_continues(part) for part in report.by_source)


def _part_continues(part: RunReport) -> bool:
    return (
        part.breaker_state is State.CLOSED
        and part.stopped_because in CONTINUED_STOPS
        and part.redriven + part.parked > 0
    )


# Lambda keeps a queued continuation at most the function's max_event_age (10 minutes, set by the
# construct): an offer older than this was lost, and another run may offer again (a late one that
# still arrives finds another token and does nothing).
CONTINUATION_STALE_SECONDS = 900


class Continuations:
    """The continuation slot of one re-driver's chain: at most one continuation is ever pending or
    running, so a tick that runs beside a chain's run never starts a second chain."""

    def __init__(
        self, slot: ContinuationStore, *, dlq_url: str, max_continuations: int, hold_seconds: int, logger: Any
    ) -> None:
        self.slot = slot
        self.dlq_url = dlq_url
        self.max_continuations = max_continuations
        self.hold_seconds = hold_seconds  # a run's Lambda timeout and the margin
        self.log = logger

    def take(self, resume: Resume) -> bool:
        """Hold the slot for the run ``resume`` started; False when it was taken already."""
        return self.slot.take_continuation(self.dlq_url, resume.token, hold_seconds=self.hold_seconds)

    def offer(self, report: RunReport, resume: Resume | None) -> Resume | None:
        """The run to start now, if draining goes on; a run that held the slot and does not go on
        frees it."""
        generation = resume.generation if resume is not None else 0
        if not continues(report, generation=generation, max_continuations=self.max_continuations):
            if resume is not None:
                self.release(resume)
            return None
        token = uuid.uuid4().hex
        holder = resume.token if resume is not None else None
        try:
            offered = self.slot.offer_continuation(
                self.dlq_url, token, stale_after=CONTINUATION_STALE_SECONDS, holder=holder
            )
        except AwsCallError as exc:
            self.log.warning("no continuation: the next tick goes on", extra={"error": str(exc)})
            return None
        if not offered:
            self.log.info("a continuation is already pending or running")
            return None
        return Resume(token=token, generation=generation + 1, full_rate=report.full_rate)

    def release(self, resume: Resume) -> None:
        """Free the slot ``resume``'s token holds: its run does not go on, or its start failed."""
        try:
            self.slot.release_continuation(self.dlq_url, resume.token)
        except AwsCallError as exc:
            self.log.warning("continuation slot not freed: it expires", extra={"error": str(exc)})


def start_continuation(client: Any, function_name: str, resume: Resume) -> None:
    """Invoke ``function_name`` with the continuation event (InvocationType Event: Lambda queues it,
    and retries it a second later while the function's reserved concurrency is all in use)."""
    try:
        client.invoke(
            FunctionName=function_name,
            InvocationType="Event",
            Payload=json.dumps(resume.to_event()).encode(),
        )
    except (ClientError, BotoCoreError) as exc:
        raise AwsCallError(f"Lambda Invoke of {function_name} failed: {exc}") from exc
