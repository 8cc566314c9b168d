"""The errors the kit lets out of a record handler and out of a batch: what a failure says once its
text went through the redactor, and nothing else of the original exception.

Powertools logs a failed record's exception (at debug level, and as a warning with its traceback
when the processor has a ``logger``) and, when every record failed, raises ``BatchProcessingError``
whose text is each exception's full traceback, causes included, which the Lambda runtime logs. So
the kit never lets the consumer's exception itself escape: it raises ``RecordFailedError`` instead,
with no cause, no context and no traceback of the original; a batch whose records all failed ends
in ``AllRecordsFailedError`` (a ``BatchProcessingError``, so the invocation still fails and SQS
retries the whole batch, as Powertools does) built from those, and from a redacted copy of any
failure the kit did not see (a Powertools model's validation error, raised before the handler).
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError, ExceptionInfo

from sqs_redriver.kit.fingerprint import error_class, exception_text, where
from sqs_redriver.kit.redact import Redactor
from sqs_redriver.protocol.failure import Failure

ALL_FAILED = "All records failed processing"
# The message of a failure whose text the configuration drops (REDRIVER_ERROR_TEXT=drop).
DROPPED_TEXT = "<text dropped>"


class RecordFailedError(Exception):
    """A record the kit left to SQS (or could not dead-letter), as its failure may be told: the
    original exception's class, place and redacted text, its kind and fingerprint."""

    def __init__(self, summary: str, failure: Failure | None = None) -> None:
        super().__init__(summary)
        self.failure = failure

    @classmethod
    def of(cls, failure: Failure, message_id: str, place: str) -> RecordFailedError:
        at = f" in {place}" if place else ""
        return cls(
            f"{failure.error_class}{at}: {failure.message} "
            f"({failure.kind.value}, fingerprint {failure.fingerprint}, message {message_id})",
            failure,
        )


class AllRecordsFailedError(BatchProcessingError):
    """Every record of the batch failed: the invocation fails and SQS retries the batch. Its text
    (what the Lambda runtime logs) is one line per record, each already redacted."""

    def __str__(self) -> str:
        lines = [str(value) for _, value, _ in self.child_exceptions if value is not None]
        return "\n".join([self.msg, *lines])


def all_records_failed(
    child_exceptions: Iterable[ExceptionInfo], redactor: Redactor
) -> AllRecordsFailedError:
    """The error for a batch whose records all failed, from Powertools' record failures: the kit's
    own kept as they are, any other reduced to its class and redacted text (no traceback)."""
    children = [_sanitized(info, redactor) for info in child_exceptions]
    return AllRecordsFailedError(
        f"{ALL_FAILED} ({len(children)} records); their errors, as the consumer kit redacted them:",
        children,
    )


def _sanitized(info: ExceptionInfo, redactor: Redactor) -> ExceptionInfo:
    kind, value, traceback = info
    if isinstance(value, RecordFailedError):
        value.__cause__ = value.__context__ = None
        return kind, value, traceback
    if value is None:  # a class alone has no text to leak
        return info
    text = DROPPED_TEXT if redactor.drop_text else redactor.redact(exception_text(value))
    place = where(value)
    at = f" in {place}" if place else ""
    return RecordFailedError, RecordFailedError(f"{error_class(value)}{at}: {text}"), None
