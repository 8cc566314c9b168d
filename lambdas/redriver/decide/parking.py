"""When a message is parked, and the reason it carries to the parking lot."""

from __future__ import annotations

from redriver.decide.routing import Routes
from redriver.model.reasons import ParkCause, ParkReason
from redriver.model.tracked import Tracked


def over_limit(tracked: Tracked, max_redrives: int) -> bool:
    """It came back after its last allowed re-drive: poison, not re-driven again."""
    return tracked.mark.count >= max_redrives


def park_reason(tracked: Tracked, cause: ParkCause, why: str, *, now: int, routes: Routes) -> ParkReason:
    mark = tracked.mark
    if mark.failure is not None:
        why = f"{why}; consumer's {mark.failure.describe()}"
    return ParkReason(
        cause=cause,
        why=why,
        redrive_count=mark.count,
        first_failed_at=mark.first_failed_at,
        last_failed_at=now,
        source_queue=routes.describe_source(tracked),
        dlq_message_id=tracked.message_id,
        failure=mark.failure,
    )


def over_limit_reason(tracked: Tracked, max_redrives: int, *, now: int, routes: Routes) -> ParkReason:
    why = f"failed after {tracked.mark.count} re-drives (limit {max_redrives})"
    return park_reason(tracked, ParkCause.OVER_LIMIT, why, now=now, routes=routes)


def terminal(tracked: Tracked, retry_fingerprints: frozenset[str]) -> bool:
    """The consumer kit said it can never succeed: parked on first sight, never re-driven, unless
    an operator marked its fingerprint for retry."""
    failure = tracked.mark.failure
    return failure is not None and failure.terminal and failure.fingerprint not in retry_fingerprints


def terminal_reason(tracked: Tracked, *, now: int, routes: Routes) -> ParkReason:
    return park_reason(tracked, ParkCause.TERMINAL, "the consumer failed it for good", now=now, routes=routes)


def unknown_source_reason(tracked: Tracked, *, now: int, routes: Routes) -> ParkReason:
    why = f"no configured source queue is {tracked.message.source_arn}"
    return park_reason(tracked, ParkCause.UNKNOWN_SOURCE, why, now=now, routes=routes)


def rejected_reason(tracked: Tracked, code: str, *, now: int, routes: Routes) -> ParkReason:
    """SQS will never accept this message as it is (a sender fault): park it, never retry forever."""
    why = f"source queue rejected it: {code}"
    return park_reason(tracked, ParkCause.SOURCE_REJECTED, why, now=now, routes=routes)
