"""The settings of judging a consumer by its source queue's CloudWatch metrics (issue 21).

Part of the schema (``schema.SCHEMA`` takes them in).
Which function consumes each source queue is not a tunable but a resource the construct names
(``CONSUMER_FUNCTION_NAMES``, set by ``grant_consumer``; see ``schema.RESOURCE_ENV``).
"""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.message_limits import MAX_MARK_HISTORY
from sqs_redriver.protocol.settings.kinds import BoolSetting, IntSetting, Setting

# CloudWatch publishes AWS/SQS and AWS/Lambda sums a few minutes late; past 15 minutes a reading
# says more about the past than about the consumer now.
MIN_METRICS_LAG_SECONDS = 60
MAX_METRICS_LAG_SECONDS = 900

ACTIVITY_SETTINGS: tuple[Setting[Any], ...] = (
    BoolSetting(
        "queue_metrics",
        "QUEUE_METRICS",
        default=True,
        meaning="judge each source's consumer by the CloudWatch metrics of its queue (and of its "
        "function, when `grant_consumer` named it): one `GetMetricData` read per run, which the "
        "function's role is then granted",
    ),
    IntSetting(
        "metrics_lag_seconds",
        "METRICS_LAG_SECONDS",
        default=180,
        low=MIN_METRICS_LAG_SECONDS,
        high=MAX_METRICS_LAG_SECONDS,
        meaning="minutes that ended less than this long ago are not judged: CloudWatch may not "
        "have published them yet",
    ),
    # A message's mark holds at most MAX_MARK_HISTORY re-drives, so it can count no more failures.
    IntSetting(
        "suspect_limit",
        "SUSPECT_LIMIT",
        default=3,
        low=1,
        high=MAX_MARK_HISTORY,
        meaning="failures while the consumer processed other messages before a message is parked as poison",
    ),
)
