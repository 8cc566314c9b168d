"""What the re-driver accepts from a message's mark, every limit stated once.

Anyone allowed to send to the DLQ can write a mark (the ``dlq-redriver`` attribute). These bounds
keep what a mark can make the re-driver do within what AWS accepts: the keys it writes
(``MSG#<identity>`` in DynamoDB, the archive's S3 key), the FIFO ids it sends, the records it
reads, and the times its breaker compares. ``model/mark.py`` (and ``model/failure.py`` for the
consumer's failure) applies them to the mark's fields with ``model/wire.py``'s checks.
"""

from __future__ import annotations

import re

# AWS: a FIFO MessageDeduplicationId is 128 characters of alphanumerics and punctuation.
SQS_MAX_DEDUPLICATION_ID_CHARS = 128
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
# The consumer's error class and message, as the kit bounds them (model/failure.py).
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
