"""When a run stops taking batches: its limit, its time, and back-pressure from the sources."""

from __future__ import annotations

from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE

BACKLOG_CHECK_EVERY = 100


def limit_reached(received: int, limit: int) -> bool:
    """The per-run limit, or one parallel batch's share of it."""
    return received >= limit


def out_of_time(remaining_ms: int, margin_seconds: int) -> bool:
    """A run takes no new batch with less than the margin left, so the batch it takes can finish."""
    return remaining_ms < margin_seconds * 1000


def backlog_check_due(received: int, backlog_limit: int) -> bool:
    """Back-pressure is checked before the first batch and every BACKLOG_CHECK_EVERY messages
    after, so it costs little per message; a limit of 0 turns it off."""
    return bool(backlog_limit) and received % BACKLOG_CHECK_EVERY < SQS_MAX_BATCH_SIZE


def batch_size(received: int, limit: int) -> int:
    """How many messages the next receive asks for: a full batch, or what the limit leaves."""
    return min(SQS_MAX_BATCH_SIZE, limit - received)
