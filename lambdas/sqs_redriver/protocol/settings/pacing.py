"""The settings of how much a run moves and how fast: slow start, canaries, limits, rate,
parallel batches, back-pressure (part of the schema: ``schema.SCHEMA`` takes them in)."""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.settings.kinds import BoolSetting, IntSetting, Setting
from sqs_redriver.protocol.sqs_limits import (
    LAMBDA_MAX_TIMEOUT_SECONDS,
    SQS_MAX_BATCH_SIZE,
    SQS_MAX_RECEIVE_WAIT_SECONDS,
)

PACING_SETTINGS: tuple[Setting[Any], ...] = (
    IntSetting(
        "slow_start_seconds",
        "SLOW_START_SECONDS",
        default=60,
        low=0,
        high=LAMBDA_MAX_TIMEOUT_SECONDS,
        meaning="without verdicts: seconds a run's re-drive rate takes to double from 1/s to the "
        "rate limit; 0 turns slow start off",
    ),
    # Canaries are taken from one receive.
    IntSetting(
        "canary_size",
        "CANARY_SIZE",
        default=1,
        low=1,
        high=SQS_MAX_BATCH_SIZE,
        meaning="messages per HALF_OPEN probe",
    ),
    # A run is bounded by its time budget first (about 4,500 re-drives at the default rate and
    # timeout); the limit bounds what one run may move, and continuation carries on after it.
    IntSetting(
        "max_messages_per_run",
        "MAX_MESSAGES_PER_RUN",
        default=10_000,
        low=1,
        high=100_000,
        meaning="per-run limit",
    ),
    IntSetting(
        "max_continuations",
        "MAX_CONTINUATIONS",
        default=100,
        low=0,
        high=10_000,
        meaning="runs that may follow a run at once while the breaker is CLOSED and work is left "
        "(a chain; the next tick starts a new one); 0: only the schedule starts runs",
    ),
    IntSetting(
        "max_redrives_per_second",
        "MAX_REDRIVES_PER_SECOND",
        default=50,
        low=1,
        high=500,
        meaning="token-bucket rate limit on re-drives",
    ),
    IntSetting(
        "parallel_batches",
        "PARALLEL_BATCHES",
        default=4,
        low=1,
        high=16,
        meaning="batches in flight at once within a run",
    ),
    IntSetting(
        "source_backlog_limit",
        "SOURCE_BACKLOG_LIMIT",
        default=1000,
        low=0,
        high=10_000_000,
        meaning="back-pressure: no re-drives while a source queue holds more; 0 turns it off",
    ),
    BoolSetting(
        "record_every_redrive",
        "RECORD_EVERY_REDRIVE",
        default=False,
        meaning="also write a table record for every re-drive of a marked message "
        "(an audit trail, one write unit each)",
    ),
    IntSetting(
        "receive_wait_seconds",
        "RECEIVE_WAIT_SECONDS",
        default=1,
        low=0,
        high=SQS_MAX_RECEIVE_WAIT_SECONDS,
        meaning="long-poll wait of each DLQ receive",
    ),
)
