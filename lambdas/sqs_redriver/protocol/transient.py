"""The default classification of a failure by its words: whether an error's type (or code) and
message say "try again later", and the normalized form of a message that groups failures.

Shared by the consumer kit (its built-in rules for AWS error codes and HTTP statuses, its
fingerprint's message) and the re-driver (the error a source of another kind wrote into its dead
letter: a function's ``errorType``/``errorMessage``, a function DLQ's ``ErrorCode``/``ErrorMessage``,
a rule target's ``ERROR_CODE``/``ERROR_MESSAGE``), so both name the same failures transient:

- an AWS error code of throttling or of a service's own fault (``TRANSIENT_ERROR_CODES``);
- an HTTP status 5xx, as the code itself (a function DLQ's ``ErrorCode``) or in the message
  (``HTTP 503``, ``status code 502``);
- words of a connection that failed (refused, reset, aborted, closed, broken pipe, unreachable,
  ``ECONNREFUSED``...), of a timeout (``timeout``, ``timed out``, ``ETIMEDOUT``), of throttling
  (``throttl...``, ``too many requests``, ``rate exceeded``), or of a service unavailable
  (``service unavailable``, ``temporarily unavailable``), in the code or the message, in any case.

Anything else (no words at all included) is not named transient: a source's error that says
nothing is poison or an outage by what the metrics and the returns say, as before. Pure; nothing
here raises, whatever the text.
"""

from __future__ import annotations

import re

# AWS error codes that mean "try again later", whichever service raised them.
TRANSIENT_ERROR_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "SlowDown",
        "PriorRequestNotComplete",
        "TransactionInProgressException",
        "EC2ThrottledException",
        "RequestTimeout",
        "RequestTimeoutException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "KMSThrottlingException",
    }
)

# How much of a source's words is read: a transient cause says so near its start, and a regular
# expression over 1 KB stays cheap.
MAX_CLASSIFIED_CHARS = 2_048

_SEPARATOR = r"[\s_.:-]*"
_TRANSIENT_WORDS = re.compile(
    "|".join(
        (
            rf"connection{_SEPARATOR}(?:refused|reset|aborted|closed|error|timed{_SEPARATOR}out|timeout|lost|failed)",
            r"broken\s*pipe",
            r"(?:host|network|endpoint)\s+(?:is\s+)?unreachable",
            r"\bE(?:CONNREFUSED|CONNRESET|CONNABORTED|TIMEDOUT|HOSTUNREACH|NETUNREACH|PIPE)\b",
            r"timeout|\btimed?\s+out\b",  # timeout, timed out, TimeoutError, ReadTimeout
            r"throttl",
            rf"too{_SEPARATOR}many{_SEPARATOR}requests",
            rf"rate{_SEPARATOR}exceeded",
            rf"(?:service|temporarily){_SEPARATOR}unavailable",
            r"\b(?:HTTP|status(?:\s*code)?)[\s/:=]*5\d\d\b",
        )
    ),
    re.IGNORECASE,
)
_STATUS_5XX = re.compile(r"5\d\d")


def transient_status(status: object) -> bool:
    """An HTTP status of a server's fault (500-599)."""
    return isinstance(status, int) and not isinstance(status, bool) and 500 <= status <= 599


def transient_code(code: object) -> bool:
    """An AWS error code of throttling or a service's fault, or an HTTP status 5xx as text."""
    if not isinstance(code, str):
        return False
    code = code.strip()
    return code in TRANSIENT_ERROR_CODES or bool(_STATUS_5XX.fullmatch(code))


def transient_words(code: object, message: object = "") -> bool:
    """Whether an error's code (or type) and message name it transient by the default rules (see
    the module's docstring). Text of any other type says nothing."""
    if transient_code(code):
        return True
    texts = (value[:MAX_CLASSIFIED_CHARS] for value in (code, message) if isinstance(value, str))
    return any(_TRANSIENT_WORDS.search(text) for text in texts)


# --- a message's normalized form: what groups failures -------------------------------------------

# Longest normalized message kept; beyond it, messages usually carry payloads, not the bug.
MAX_NORMALIZED_CHARS = 500

_NORMALIZERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE),
        "<uuid>",
    ),
    (re.compile(r"'[^'\n]*'|\"[^\"\n]*\""), "<str>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.IGNORECASE), "<hex>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.IGNORECASE), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)


def normalize_message(message: str) -> str:
    """The message with ids, numbers and quoted values replaced by placeholders, whitespace
    collapsed: ``order 'o-17' of 3 items`` and ``order 'o-99' of 4 items`` agree."""
    for pattern, placeholder in _NORMALIZERS:
        message = pattern.sub(placeholder, message)
    return message.strip()[:MAX_NORMALIZED_CHARS]
