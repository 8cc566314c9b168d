"""The settings of when runs start and how far apart a message's re-drives are (part of the
schema: ``schema.SCHEMA`` takes them in)."""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.message_limits import MAX_MARK_HISTORY
from sqs_redriver.protocol.settings.kinds import IntSetting, ScheduleSetting, Setting
from sqs_redriver.protocol.sqs_limits import SQS_MAX_DELAY_SECONDS

# Backoff steps past SQS's 900 s DelaySeconds wait in the DLQ. A day bounds how long a message sits
# there between two re-drives: well inside the DLQ's retention (4 days by default), and in at most
# three holds of the 12 hours SQS allows; a message that needs longer is for the parking lot.
MAX_BACKOFF_SECONDS = 86_400

BACKOFF_SETTINGS: tuple[Setting[Any], ...] = (
    ScheduleSetting(
        "schedule",
        None,
        default="rate(5 minutes)",
        meaning="EventBridge schedule (`rate(...)` or `cron(...)`)",
    ),
    # The history in a message's mark grows by one entry per re-drive; 50 keeps it in budget.
    IntSetting(
        "max_redrive_count",
        "MAX_REDRIVE_COUNT",
        default=5,
        low=1,
        high=MAX_MARK_HISTORY,
        meaning="re-drives before a message is parked",
    ),
    IntSetting(
        "base_delay_seconds",
        "BASE_DELAY_SECONDS",
        default=60,
        low=0,
        high=MAX_BACKOFF_SECONDS,
        meaning="first re-drive's delay step",
    ),
    IntSetting(
        "max_delay_seconds",
        "MAX_DELAY_SECONDS",
        default=SQS_MAX_DELAY_SECONDS,
        low=0,
        high=MAX_BACKOFF_SECONDS,
        meaning=f"delay cap; a step past {SQS_MAX_DELAY_SECONDS} s (the longest `DelaySeconds`) is "
        "waited out hidden in the DLQ",
    ),
)
