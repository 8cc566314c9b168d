"""When a message is parked, and the reason it carries to the parking lot."""

from __future__ import annotations

from collections.abc import Mapping

from sqs_redriver.protocol.failure import bounded
from sqs_redriver.runtime.decide.routing import Routes, named_source
from sqs_redriver.runtime.decide.suspicion import suspect_reason_text
from sqs_redriver.runtime.model.groups import GroupAction, GroupMark
from sqs_redriver.runtime.model.reasons import ParkCause, ParkReason
from sqs_redriver.runtime.model.tracked import Tracked

# The operator's words in a parking reason, bounded like the consumer's error (characters, and
# bytes as JSON) so a mark with the longest of both and a full history still fits its budget (tested).
MAX_OPERATOR_REASON_CHARS = 200
MAX_OPERATOR_REASON_JSON_BYTES = 480
MAX_OPERATOR_NAME_CHARS = 64
MAX_OPERATOR_NAME_JSON_BYTES = 160


def over_limit(tracked: Tracked, max_redrive_count: int) -> bool:
    """It came back after its last allowed re-drive: poison, not re-driven again."""
    return tracked.mark.count >= max_redrive_count


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


def over_limit_reason(tracked: Tracked, max_redrive_count: int, *, now: int, routes: Routes) -> ParkReason:
    why = f"failed after {tracked.mark.count} re-drives (limit {max_redrive_count})"
    return park_reason(tracked, ParkCause.OVER_LIMIT, why, now=now, routes=routes)


def suspect_reason(tracked: Tracked, suspect_limit: int, *, now: int, routes: Routes) -> ParkReason:
    """A suspect of poison at its limit: it kept failing while the consumer processed others."""
    why = f"{suspect_reason_text(tracked)} (limit {suspect_limit}): poison, not an outage"
    return park_reason(tracked, ParkCause.SUSPECT, why, now=now, routes=routes)


def group_mark(tracked: Tracked, groups: Mapping[str, GroupMark]) -> GroupMark | None:
    """The operator's mark on the failure group of the message's last failure, if any."""
    failure = tracked.mark.failure
    return groups.get(failure.fingerprint) if failure is not None else None


def operator_parked(tracked: Tracked, groups: Mapping[str, GroupMark]) -> GroupMark | None:
    """An operator parked its failure group: parked on sight, terminal or transient, in every mode
    that reads the DLQ (as terminal failures are). The mark that says so, or None."""
    mark = group_mark(tracked, groups)
    return mark if mark is not None and mark.action is GroupAction.PARK else None


def operator_reason(tracked: Tracked, mark: GroupMark, *, now: int, routes: Routes) -> ParkReason:
    reason = bounded(mark.reason, MAX_OPERATOR_REASON_CHARS, MAX_OPERATOR_REASON_JSON_BYTES)
    by = bounded(mark.by, MAX_OPERATOR_NAME_CHARS, MAX_OPERATOR_NAME_JSON_BYTES)
    why = f"an operator parked its failure group (by {by or 'unknown'}: {reason or 'no reason given'})"
    return park_reason(tracked, ParkCause.OPERATOR, why, now=now, routes=routes)


def terminal(tracked: Tracked, groups: Mapping[str, GroupMark]) -> bool:
    """The consumer kit said it can never succeed: parked on first sight, never re-driven, unless
    an operator marked its fingerprint for retry."""
    failure = tracked.mark.failure
    if failure is None or not failure.terminal:
        return False
    mark = group_mark(tracked, groups)
    return mark is None or mark.action is not GroupAction.RETRY


def terminal_reason(tracked: Tracked, *, now: int, routes: Routes) -> ParkReason:
    return park_reason(tracked, ParkCause.TERMINAL, "the consumer failed it for good", now=now, routes=routes)


def unknown_source_reason(tracked: Tracked, *, now: int, routes: Routes) -> ParkReason:
    named_by = "" if tracked.message.source_arn else " (the consumer kit's err.src)"
    why = f"no configured source queue is {named_source(tracked)}{named_by}"
    return park_reason(tracked, ParkCause.UNKNOWN_SOURCE, why, now=now, routes=routes)


def rejected_reason(tracked: Tracked, code: str, *, now: int, routes: Routes) -> ParkReason:
    """SQS will never accept this message as it is (a sender fault): park it, never retry forever."""
    why = f"source queue rejected it: {code}"
    return park_reason(tracked, ParkCause.SOURCE_REJECTED, why, now=now, routes=routes)
