"""Limits of the state table's records, each written once: what a record may hold before the
re-driver calls it corrupt (adapters/records/ parses every record kind against them).

DynamoDB's own limits, and the ranges of the values the re-driver and the consumer kit write; a
record outside them was written by hand, by an older or broken writer, or forged.
"""

from sqs_redriver.protocol.sqs_limits import (
    SQS_MAX_BATCH_SIZE,
    SQS_MAX_RECEIVE_COUNT,
    SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
)

# Times (epoch seconds) come from message_limits: from 0, and not later than now plus
# MAX_CLOCK_SKEW_SECONDS (a timestamp from the future is forged: a failure "newer" than its
# re-drive would count it as a return and could open the breaker), nor than MAX_EPOCH_SECONDS.
# The exception: how far ahead a canary's verdict can be due (its window is the source's
# visibility timeout times maxReceiveCount + 1).
RECORD_MAX_CANARY_WINDOW_SECONDS = SQS_MAX_VISIBILITY_TIMEOUT_SECONDS * (SQS_MAX_RECEIVE_COUNT + 1)
# A breaker's counters and version.
RECORD_MAX_BREAKER_COUNT = 1_000
RECORD_MAX_VERSION = 2**53
# Canaries of one probe (CANARY_SIZE is at most one batch).
RECORD_MAX_CANARIES = SQS_MAX_BATCH_SIZE
# An identity, fingerprint, token or group id in a record: at most a key's length.
RECORD_MAX_NAME_CHARS = 1_024
# A message record's identity, re-drive count and times are a mark's (message_limits).
# An operator's reason, who, or a JSON document (a failure, a run summary) in one string attribute.
RECORD_MAX_TEXT_CHARS = 4_096
RECORD_MAX_JSON_CHARS = 16_384
# One verdict counter of a run's re-drives.
RECORD_MAX_VERDICTS = 10_000_000
# Run summaries read from the history item (more are ignored; the writer keeps RUN_HISTORY_LENGTH).
RECORD_MAX_RUNS = 100
# How far ahead the next retention sweep may be due: half the longest EXPIRY_MARGIN_SECONDS (7 days).
RECORD_MAX_SWEEP_AHEAD_SECONDS = 7 * 86_400 // 2
