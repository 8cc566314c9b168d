"""Every tunable setting of the re-driver, defined once.

A setting has its construct / cdk.json name, the re-drive Lambda's environment variable (none for
deploy-only settings), its type, default, allowed range and a one-line meaning; the rules between
settings are in ``rules``. The Lambda parses its environment with the schema at cold start
(``sqs_redriver.runtime.settings``); the CDK side validates construct props and cdk.json context with it at
synth (``sqs_redriver.cdk.settings``); the README's configuration table is rendered from it
(``sqs_redriver.cdk.readme_table``). Standard library only: it is cold-start code.
"""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.message_limits import MAX_MARK_HISTORY
from sqs_redriver.protocol.settings.activity import ACTIVITY_SETTINGS
from sqs_redriver.protocol.settings.kinds import (
    BoolSetting,
    IntSetting,
    RatioSetting,
    ScheduleSetting,
    Setting,
)
from sqs_redriver.protocol.sqs_limits import (
    LAMBDA_MAX_TIMEOUT_SECONDS,
    SQS_MAX_BATCH_SIZE,
    SQS_MAX_DELAY_SECONDS,
    SQS_MAX_RECEIVE_COUNT,
    SQS_MAX_RECEIVE_WAIT_SECONDS,
    SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
)

LAMBDA_MIN_MEMORY_MB = 128
LAMBDA_MAX_MEMORY_MB = 10_240
# AWS's guidance for a queue that feeds Lambda: visibility timeout at least 6x the function's.
VISIBILITY_TO_TIMEOUT_RATIO = 6
# The construct hides the DLQ messages a run holds this much longer than a run can last, so a
# message a run holds cannot reach an overlapping run.
DLQ_VISIBILITY_MARGIN_SECONDS = 30
# Backoff steps past SQS's 900 s DelaySeconds wait in the DLQ. A day bounds how long a message sits
# there between two re-drives: well inside the DLQ's retention (4 days by default), and in at most
# three holds of the 12 hours SQS allows; a message that needs longer is for the parking lot.
MAX_BACKOFF_SECONDS = 86_400
# The resources' variables: set by the construct, required by the Lambda, no defaults.
RESOURCE_ENV = {
    "dlq_url": "DLQ_URL",
    "source_queue_url": "SOURCE_QUEUE_URL",  # a shared DLQ's source queues, separated by commas
    "parking_lot_url": "PARKING_LOT_URL",
    "table_name": "DYNAMODB_TABLE_NAME",
    "archive_bucket": "ARCHIVE_BUCKET",  # optional: empty or unset, parked messages are not archived
    # Optional: each source queue's consumer function, in SOURCE_QUEUE_URL's order, separated by
    # commas; an entry may be empty (grant_consumer fills them in). Unset or empty: none known.
    "consumer_function_names": "CONSUMER_FUNCTION_NAMES",
}
URL_SEPARATOR = ","

SCHEMA: tuple[Setting[Any], ...] = (
    ScheduleSetting(
        "schedule",
        None,
        default="rate(5 minutes)",
        meaning="EventBridge schedule (`rate(...)` or `cron(...)`)",
    ),
    # The history in a message's mark grows by one entry per re-drive; 50 keeps it in budget.
    IntSetting(
        "max_redrives",
        "MAX_REDRIVES",
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
    IntSetting(
        "breaker_failure_threshold",
        "BREAKER_FAILURE_THRESHOLD",
        default=3,
        low=1,
        high=100,
        meaning="consecutive runs failed by AWS errors that open the breaker "
        "(a failure by ratio opens it at once)",
    ),
    IntSetting(
        "breaker_cooldown_seconds",
        "BREAKER_COOLDOWN_SECONDS",
        default=60,
        low=0,
        high=86_400,
        meaning="time OPEN before a canary probes",
    ),
    IntSetting(
        "breaker_success_threshold",
        "BREAKER_SUCCESS_THRESHOLD",
        default=2,
        low=1,
        high=100,
        meaning="healthy canaries that close it",
    ),
    RatioSetting(
        "breaker_failure_ratio",
        "BREAKER_FAILURE_RATIO",
        default=0.5,
        meaning="share of received messages that came back which makes a run failed",
    ),
    # Mature breakers' minimum throughput: one or two messages that keep failing (poison) are not
    # an outage.
    IntSetting(
        "breaker_minimum_volume",
        "BREAKER_MINIMUM_VOLUME",
        default=3,
        low=1,
        high=1000,
        meaning="distinct messages that must have come back before the ratio can fail a run",
    ),
    BoolSetting(
        "consumer_verdicts",
        "CONSUMER_VERDICTS",
        default=False,
        meaning="the consumer reports verdicts with the consumer kit (`grant_consumer` sets it): "
        "probes and the ramp wait for them",
    ),
    IntSetting(
        "verdict_wait_seconds",
        "VERDICT_WAIT_SECONDS",
        default=20,
        low=1,
        high=300,
        meaning="how long a probe or a ramp step waits inside a run for the consumer's verdicts",
    ),
    *ACTIVITY_SETTINGS,
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
    # Parked at least this long before the DLQ's retention ends; the retention sweep of runs that do
    # not scan (breaker OPEN, WATCH) comes every half of it, so it must span several schedule periods.
    IntSetting(
        "expiry_margin_seconds",
        "EXPIRY_MARGIN_SECONDS",
        default=86_400,
        low=60,
        high=7 * 86_400,
        meaning="park a DLQ message this close to the end of the DLQ's retention (reason `expiring`)",
    ),
    IntSetting(
        "state_ttl_days",
        "STATE_TTL_DAYS",
        default=14,
        low=1,
        high=365,
        meaning="lifetime of message records in the table",
        context=False,
    ),
)
BY_NAME = {setting.name: setting for setting in SCHEMA}
LAMBDA_SETTINGS = tuple(setting for setting in SCHEMA if setting.env)
CONTEXT_SETTINGS = tuple(setting for setting in SCHEMA if setting.context)


def default(name: str) -> Any:
    return BY_NAME[name].default


def dlq_visibility_timeout(redriver_timeout_seconds: int) -> int:
    return redriver_timeout_seconds + DLQ_VISIBILITY_MARGIN_SECONDS
