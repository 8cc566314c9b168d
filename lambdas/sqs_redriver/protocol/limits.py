"""Every limit the re-driver's parts build on, each stated once, in three sections:

- **A mark's.** Anyone allowed to send to the DLQ can write a mark (the ``dlq-redriver``
  attribute). These bounds keep what a mark can make the re-driver do within what AWS accepts: the
  keys it writes (``MSG#<identity>`` in DynamoDB, the archive's S3 key), the FIFO ids it sends, the
  records it reads, and the times its breaker compares. ``protocol/mark.py`` (and
  ``protocol/failure.py`` for the consumer's failure) applies them to the mark's fields with
  ``protocol/wire.py``'s checks.
- **AWS's own**, from the SQS Developer Guide's quotas (and the one Lambda quota they meet) and
  DynamoDB's and S3's key sizes. The settings schema bounds its ranges with them, backoff caps
  delays and holds with them, and the construct checks queue properties against them.
- **A state record's**: what a record may hold before the re-driver calls it corrupt
  (``core/table.py`` parses every record kind against them): DynamoDB's own limits, and the ranges
  of the values the re-driver and the consumer kit write; a record outside them was written by
  hand, by an older or broken writer, or forged."""

from __future__ import annotations

import re

# --- a mark ---------------------------------------------------------------------------------------

# AWS: a FIFO MessageDeduplicationId is 1 to 128 characters of alphanumerics and punctuation.
SQS_DEDUPLICATION_ID_PATTERN = re.compile(r"[A-Za-z0-9!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]{1,128}")


# The mark as a whole: the bytes reserved for it (name, type and value, a parking reason
# included), and how deep its JSON may nest (the re-driver writes depth 3: {"rp": [[at, n]]}).
MAX_MARK_BYTES = 4_096
MAX_MARK_JSON_DEPTH = 8


# An identity is the MessageId SQS gave (a UUID) or a content identity (sha256:<64 hex>). 128
# characters of this set fit every key built from it: MSG#<identity> in DynamoDB, the archive key
# (tested), a verdict key; and none of them means a path separator.
MAX_IDENTITY_CHARS = 128
IDENTITY_PATTERN = re.compile(r"[A-Za-z0-9._:-]+")


# The consumer kit's fingerprint (16 hex) names RETRY#/PARK# records; a verdict key
# (run/<time>/<hex>, canary/<time>/<identity>) names a VERDICTS# record.
MAX_FINGERPRINT_CHARS = 64
FINGERPRINT_PATTERN = re.compile(r"[A-Za-z0-9._:-]+")
MAX_VERDICT_KEY_CHARS = 256
VERDICT_KEY_PATTERN = re.compile(r"[A-Za-z0-9._:/-]+")


# The archive key of an operator's last edit (``edited/<day>/<identity>/<time>-<MessageId>.json``).
MAX_EDIT_KEY_CHARS = 256
EDIT_KEY_PATTERN = re.compile(r"[A-Za-z0-9._:/-]+")


# Where the kit received the message: an SQS queue ARN (empty when the event did not say).
MAX_QUEUE_ARN_CHARS = 256
QUEUE_ARN_PATTERN = re.compile(r"arn:[a-z-]{1,16}:sqs:[a-z0-9-]{1,32}:[0-9]{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?")


# The consumer's error class and message, as the kit bounds them (protocol/failure.py).
MAX_ERROR_CLASS_CHARS = 120
MAX_ERROR_MESSAGE_CHARS = 240


# Histories: a re-drive per entry of ``at`` (MAX_REDRIVE_COUNT is at most this), the last replays in ``rp``.
MAX_MARK_HISTORY = 50
MAX_REPLAYS = 10


# Counts (re-drives, a replay's count before it, the consumer's attempt): integers in this range.
MAX_COUNT = 1_000_000


# Timestamps are whole epoch seconds. Any mark or record: 0 to the end of year 9999. When a run
# reads a mark: not before 2000; a mark or a record: not later than its own clock plus a small skew
# (another host's clock may run a little ahead; a forged future time must not count as a recent
# re-drive, nor open the breaker).
MAX_EPOCH_SECONDS = 253_402_300_799
EARLIEST_MARK_TIME = 946_684_800  # 2000-01-01T00:00:00Z
MAX_CLOCK_SKEW_SECONDS = 300


# --- AWS ------------------------------------------------------------------------------------------

# Timeout of a Lambda function: at most 15 minutes, so a run acts on a message it received within that.
LAMBDA_MAX_TIMEOUT_SECONDS = 900


# DelaySeconds of a message (SendMessage, SendMessageBatch) and of a queue: 0 to 15 minutes.
SQS_MAX_DELAY_SECONDS = 900


# VisibilityTimeout of a queue, a receive or ChangeMessageVisibility: 0 to 12 hours.
SQS_MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200


# WaitTimeSeconds of a long-poll ReceiveMessage: 0 to 20 seconds.
SQS_MAX_RECEIVE_WAIT_SECONDS = 20


# Messages one ReceiveMessage returns, or one batch call carries: 1 to 10.
SQS_MAX_BATCH_SIZE = 10


# Message attributes of one message, and bytes of one message (body and attributes) or batch.
SQS_MAX_MESSAGE_ATTRIBUTES = 10
SQS_MAX_MESSAGE_BYTES = 1_048_576


# maxReceiveCount of a RedrivePolicy: 1 to 1,000.
SQS_MAX_RECEIVE_COUNT = 1_000


# MessageRetentionPeriod of a queue created without one: 4 days.
SQS_DEFAULT_RETENTION_SECONDS = 4 * 86_400
# The longest a queue keeps a message: 14 days.
SQS_MAX_RETENTION_SECONDS = 14 * 86_400


# A DynamoDB partition key: at most 2,048 bytes (UTF-8). An S3 object key: at most 1,024 bytes.
DYNAMODB_MAX_KEY_BYTES = 2_048
S3_MAX_KEY_BYTES = 1_024


# A message attribute's name: at most 256 of A-Z a-z 0-9 _ - . (no leading, trailing or double
# period; none starting with AWS. or Amazon., in any case). Its data type: String, Number or Binary,
# with an optional custom label after a period, at most 256 in all. A Number: at most 38 digits.
SQS_MAX_ATTRIBUTE_NAME_CHARS = 256
SQS_ATTRIBUTE_NAME_CHARACTERS = "A-Za-z0-9_.-"
SQS_RESERVED_ATTRIBUTE_PREFIXES = ("aws.", "amazon.")
SQS_MAX_ATTRIBUTE_TYPE_CHARS = 256
SQS_MAX_NUMBER_DIGITS = 38


# The characters a body or a String attribute may hold (XML 1.0's): #x9 #xA #xD, #x20 to #xD7FF,
# #xE000 to #xFFFD, #x10000 to #x10FFFF; anything else makes SQS refuse the message.
SQS_INVALID_CHARACTERS = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


# --- a state record -------------------------------------------------------------------------------

# Times (epoch seconds) are a mark's (above): from 0, and not later than now plus
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


# A message record's identity, re-drive count and times are a mark's (above).

# An operator's reason, who, or a JSON document (a failure, a run summary) in one string attribute.
RECORD_MAX_TEXT_CHARS = 4_096
RECORD_MAX_JSON_CHARS = 16_384


# One verdict counter of a run's re-drives.
RECORD_MAX_VERDICTS = 10_000_000


# Run summaries read from the history item (more are ignored; the writer keeps RUN_HISTORY_LENGTH).
RECORD_MAX_RUNS = 100


# How far ahead the next retention sweep may be due: half the longest EXPIRY_MARGIN_SECONDS (7 days).
RECORD_MAX_SWEEP_AHEAD_SECONDS = 7 * 86_400 // 2

# A large drain nobody stepped for this long was interrupted (the breaker, a pause, the schedule):
# its pace starts over, and the tool shows it so.
DRAIN_STALE_SECONDS = 60
