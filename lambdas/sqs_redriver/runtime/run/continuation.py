"""The continuation of a run that stopped with work left: offered in the table's one slot, taken
by the run it starts (decide/continuation.py says when a run goes on)."""

from __future__ import annotations

import uuid
from typing import Any

from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import ContinuationStore
from sqs_redriver.runtime.decide.continuation import continues
from sqs_redriver.runtime.model.continuation import Resume
from sqs_redriver.runtime.model.report import RunReport

# Lambda keeps a queued continuation at most the function's max_event_age (10 minutes, set by the
# construct) while runs hold its one concurrency: an offer older than this was lost, and another run
# may offer again (a late one that still arrives finds another token and does nothing).
CONTINUATION_STALE_SECONDS = 900


class Continuations:
    """The pending-continuation slot of one re-driver: at most one continuation is ever pending."""

    def __init__(self, slot: ContinuationStore, *, dlq_url: str, max_continuations: int, logger: Any) -> None:
        self.slot = slot
        self.dlq_url = dlq_url
        self.max_continuations = max_continuations
        self.log = logger

    def take(self, resume: Resume) -> bool:
        """Take the slot for the run ``resume`` started; False when it was taken already."""
        return self.slot.take_continuation(self.dlq_url, resume.token)

    def offer(self, report: RunReport, resume: Resume | None) -> Resume | None:
        """The run to start now, if draining goes on."""
        generation = resume.generation if resume is not None else 0
        if not continues(report, generation=generation, max_continuations=self.max_continuations):
            return None
        token = uuid.uuid4().hex
        try:
            offered = self.slot.offer_continuation(
                self.dlq_url, token, stale_after=CONTINUATION_STALE_SECONDS
            )
        except AwsCallError as exc:
            self.log.warning("no continuation: the next tick goes on", extra={"error": str(exc)})
            return None
        if not offered:
            self.log.info("a continuation is already pending")
            return None
        return Resume(token=token, generation=generation + 1, full_rate=report.full_rate)

    def release(self, resume: Resume) -> None:
        """Free the slot of a continuation that could not be started, so the next run may offer."""
        try:
            self.slot.take_continuation(self.dlq_url, resume.token)
        except AwsCallError as exc:
            self.log.warning("continuation slot not freed: it goes stale", extra={"error": str(exc)})
