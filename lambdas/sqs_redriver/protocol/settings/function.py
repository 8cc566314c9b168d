"""The settings of the re-drive function (timeout, memory, time margin) and of the queues'
timeouts around it (part of the schema: ``schema.SCHEMA`` takes them in)."""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.settings.kinds import IntSetting, Setting
from sqs_redriver.protocol.sqs_limits import (
    LAMBDA_MAX_TIMEOUT_SECONDS,
    SQS_MAX_RECEIVE_COUNT,
    SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
)

LAMBDA_MIN_MEMORY_MB = 128
LAMBDA_MAX_MEMORY_MB = 10_240
# AWS's guidance for a queue that feeds Lambda: visibility timeout at least 6x the function's.
VISIBILITY_TO_TIMEOUT_RATIO = 6
# The construct hides the DLQ messages a run holds this much longer than a run can last, so a
# message a run holds cannot reach an overlapping run.
DLQ_VISIBILITY_MARGIN_SECONDS = 30

FUNCTION_SETTINGS: tuple[Setting[Any], ...] = (
    IntSetting(
        "redriver_timeout_seconds",
        None,
        default=120,
        low=30,
        high=LAMBDA_MAX_TIMEOUT_SECONDS,
        meaning="Lambda timeout; DLQ messages a run holds stay hidden this long "
        f"+ {DLQ_VISIBILITY_MARGIN_SECONDS} s",
    ),
    IntSetting(
        "redriver_memory_mb",
        None,
        default=256,
        low=LAMBDA_MIN_MEMORY_MB,
        high=LAMBDA_MAX_MEMORY_MB,
        meaning="Lambda memory",
    ),
    # At most half of the longest Lambda timeout; RULES hold it to half of the actual one.
    IntSetting(
        "time_margin_seconds",
        "TIME_MARGIN_SECONDS",
        default=30,
        low=1,
        high=LAMBDA_MAX_TIMEOUT_SECONDS // 2,
        meaning="stop taking batches when less time than this remains",
    ),
    IntSetting(
        "max_receive_count",
        None,
        default=5,
        low=1,
        high=SQS_MAX_RECEIVE_COUNT,
        meaning="default stack only: source queue's RedrivePolicy",
    ),
    IntSetting(
        "consumer_timeout_seconds",
        None,
        default=30,
        low=1,
        high=LAMBDA_MAX_TIMEOUT_SECONDS,
        meaning="default stack only: consumer timeout",
    ),
    IntSetting(
        "source_visibility_timeout_seconds",
        None,
        default=0,
        low=0,
        high=SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
        meaning="default stack only: source queue visibility timeout",
        shown_default=f"0 (= {VISIBILITY_TO_TIMEOUT_RATIO} × consumer timeout)",
    ),
    # Lambda-only: the construct derives it from redriver_timeout_seconds. Unset (the Lambda
    # deployed without the construct): longer than the longest Lambda timeout.
    IntSetting(
        "dlq_visibility_timeout_seconds",
        "DLQ_VISIBILITY_TIMEOUT_SECONDS",
        default=960,
        low=1,
        high=SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
        meaning="how long a run keeps received DLQ messages hidden from other runs",
        context=False,
        shown_default=f"timeout + {DLQ_VISIBILITY_MARGIN_SECONDS} (set by the construct; 960 if unset)",
    ),
)


def dlq_visibility_timeout(redriver_timeout_seconds: int) -> int:
    """How long a run keeps the DLQ messages it received hidden: its timeout and a margin."""
    return redriver_timeout_seconds + DLQ_VISIBILITY_MARGIN_SECONDS
