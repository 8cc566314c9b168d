"""The consumer kit's environment variables: the construct sets them on a consumer function
(``grant_consumer``), the kit reads them at cold start (``sqs_redriver.kit.config``)."""

# The DLQ of the consumer's source queue: where the kit dead-letters a message itself.
ENV_DLQ_URL = "REDRIVER_DLQ_URL"
# The re-driver's state table: verdict counters, and failures of messages with no room for a mark.
ENV_TABLE_NAME = "REDRIVER_TABLE_NAME"
# The source queue's RedrivePolicy maxReceiveCount: the attempt that would dead-letter a message.
ENV_MAX_RECEIVE_COUNT = "REDRIVER_MAX_RECEIVE_COUNT"
ENVIRONMENT_VARIABLES = (ENV_DLQ_URL, ENV_TABLE_NAME, ENV_MAX_RECEIVE_COUNT)
# Optional, set by the user: what of an exception's text leaves the consumer (see redact.py).
# "redact" (the default: secrets masked, length capped) or "drop" (the exception's class only).
ENV_ERROR_TEXT = "REDRIVER_ERROR_TEXT"
ERROR_TEXT_MODES = ("redact", "drop")
# Longest exception text kept, in characters (1 to MAX_ERROR_MESSAGE_CHARS, the default).
ENV_ERROR_TEXT_MAX_CHARS = "REDRIVER_ERROR_TEXT_MAX_CHARS"
# More secrets to mask: a JSON array of Python regular expressions (a group named "secret", if any,
# is what is masked; else the whole match).
ENV_REDACT_PATTERNS = "REDRIVER_REDACT_PATTERNS"
