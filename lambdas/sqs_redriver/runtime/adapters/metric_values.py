"""One CloudWatch datapoint, checked: a per-minute count and the minute it counts, or a named
rejection.

Every value a ``GetMetricData`` response holds is untrusted (``adapters/cloudwatch_activity.py``):
a count must be a finite, whole, non-negative number of at most ``MAX_MINUTE_COUNT`` (3.0 is 3,
2.5 is refused), and its timestamp the start of a whole minute inside the window that was read.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from enum import StrEnum

from sqs_redriver.runtime.model.activity import MAX_MINUTE_COUNT, SECONDS_PER_MINUTE


class Rejection(StrEnum):
    """Why a datapoint is not used; the text goes into the log line."""

    NOT_A_NUMBER = "not a number"
    NOT_FINITE = "not finite"
    NEGATIVE = "negative"
    NOT_WHOLE = "not a whole number"
    TOO_LARGE = f"more than {MAX_MINUTE_COUNT:,} in a minute"
    NOT_A_TIME = "not a timestamp"
    OFF_MINUTE = "not the start of a whole minute"
    OUTSIDE = "outside the minutes read"


def minute_count(value: object) -> int | Rejection:
    """``value`` as a count of one minute, or why it cannot be one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Rejection.NOT_A_NUMBER
    if isinstance(value, float) and not math.isfinite(value):
        return Rejection.NOT_FINITE
    if value < 0:
        return Rejection.NEGATIVE
    if value > MAX_MINUTE_COUNT:
        return Rejection.TOO_LARGE
    if isinstance(value, float) and not value.is_integer():
        return Rejection.NOT_WHOLE
    return int(value)


def minute_start(value: object, *, start: int, end: int) -> int | Rejection:
    """``value``, a timestamp, as the epoch second of a minute's start in ``[start, end)``, or why
    it is not one. A timestamp without a timezone is UTC, as CloudWatch's are."""
    if not isinstance(value, datetime):
        return Rejection.NOT_A_TIME
    moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    try:
        seconds = moment.timestamp()
    except (OverflowError, ValueError, OSError):  # a date or offset no epoch second can hold
        return Rejection.NOT_A_TIME
    if not seconds.is_integer() or int(seconds) % SECONDS_PER_MINUTE:
        return Rejection.OFF_MINUTE
    if not start <= int(seconds) < end:
        return Rejection.OUTSIDE
    return int(seconds)
