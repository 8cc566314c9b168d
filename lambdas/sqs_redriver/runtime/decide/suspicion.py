"""Poison told apart from an outage without the consumer kit: what the source queue's metrics say
about each message that came back (decide/consumer_health.py's ``failure_context``).

- A message that failed while the consumer processed others is a **suspect**: its mark counts
  the failure (``Mark.suspected``) and the messages processed meanwhile. A suspect never counts
  against the breaker and is never a canary; at ``SUSPECT_LIMIT`` failures it is parked.
- A suspect's later failure counts too, unless the breaker moved since it was sent (other
  messages' evidence said the consumer was down meanwhile): a queue with nothing but poison in
  it deletes nothing, and that says nothing against the consumer.
- A message that failed while the consumer deleted nothing (or failed a large share) met an
  **outage**: it counts against the breaker even on its first failure, when it cannot have come
  back before the breaker's last change (then it was evidence for that change).
- Without metrics (UNKNOWN) nothing changes: the re-drive count and the DLQ returns decide.

A message the consumer kit dead-lettered carries its own classification and is not judged here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.decide.breaker import Breaker
from sqs_redriver.runtime.decide.consumer_health import Context, failure_context, failure_span_end
from sqs_redriver.runtime.model.activity import QueueActivity
from sqs_redriver.runtime.model.breaker_state import State
from sqs_redriver.runtime.model.tracked import Tracked


@dataclass(frozen=True)
class ConsumerSignal:
    """What a run read about one source's consumer: its queue's minutes, and how its queue
    retries (a failing message is received ``max_receive_count`` times, a visibility timeout
    apart)."""

    activity: QueueActivity
    max_receive_count: int
    visibility_timeout_seconds: int


@dataclass(frozen=True)
class Judged:
    """A message with its mark updated by the judgment, and whether it counts against the breaker
    because the metrics place its failure in an outage."""

    tracked: Tracked
    outage: bool = False


def sent_at(tracked: Tracked) -> int | None:
    """When the message last went to its source: its last re-drive or replay; for a first
    failure, when its producer sent it."""
    last = tracked.mark.last_sent_at
    if last is not None:
        return last
    sent_ms = tracked.message.system_attributes.get("SentTimestamp", "")
    return int(sent_ms) // 1000 if sent_ms.isdigit() else None


def judge(
    tracked: Tracked, signal: ConsumerSignal | None, breaker: Breaker, *, failure_ratio: float
) -> Judged:
    """The message's failure in the light of its consumer's metrics (see the module's docstring)."""
    mark = tracked.mark
    sent = sent_at(tracked)
    if signal is None or mark.failure is not None or sent is None:
        return Judged(tracked)
    span_end = failure_span_end(
        sent,
        visibility_timeout_seconds=signal.visibility_timeout_seconds,
        max_receive_count=signal.max_receive_count,
    )
    found = failure_context(
        signal.activity,
        sent_at=sent,
        span_end=span_end,
        max_receive_count=signal.max_receive_count,
        failure_ratio=failure_ratio,
    )
    if found.context is Context.SUSPECT:
        return Judged(_with(tracked, mark.after_suspect_failure(found.processed)))
    if found.context is Context.UNKNOWN:
        return Judged(tracked)
    if mark.suspect:
        undisturbed = breaker.state is State.CLOSED and breaker.changed_at <= sent
        return Judged(_with(tracked, mark.after_suspect_failure(0)) if undisturbed else tracked)
    # Counted once: a failure back before the breaker's last change was evidence for that change.
    return Judged(tracked, outage=span_end >= breaker.changed_at)


def _with(tracked: Tracked, mark: Mark) -> Tracked:
    return replace(tracked, mark=mark, read_mark=tracked.mark_as_read)


def suspect_reason_text(tracked: Tracked) -> str:
    """The parking reason of a suspect: how often it failed, and what the consumer did meanwhile."""
    mark = tracked.mark
    times = "once" if mark.suspected == 1 else f"{mark.suspected} times"
    return f"failed {times} while the consumer processed {mark.processed_meanwhile:,} others"
