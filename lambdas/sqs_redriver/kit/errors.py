"""The kit's exceptions: those it raises at a consumer (a bad setting, a bad redaction pattern), those
that stay inside it (an AWS call that failed, a record it cannot send back), and those it lets out
of a record handler and out of a batch. The two a consumer raises itself, ``TerminalError`` and
``TransientError``, are in ``classify`` (their module is part of their fingerprint).

What the kit lets out of a record handler or a batch says what a failure says once its text went
through the redactor, and nothing else of the original exception. Powertools logs a failed record's
exception (at debug level, and as a warning with its traceback when the processor has a ``logger``)
and, when every record failed, raises ``BatchProcessingError`` whose text is each exception's full
traceback, causes included, which the Lambda runtime logs. So the kit never lets the consumer's
exception itself escape: it raises ``RecordFailedError`` instead, with no cause, no context and no
traceback of the original; a batch whose records all failed ends in ``AllRecordsFailedError`` (a
``BatchProcessingError``, so the invocation still fails and SQS retries the whole batch, as
Powertools does) built from those, and from a redacted copy of any failure the kit did not see (a
Powertools model's validation error, raised before the handler).
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from sqs_redriver.protocol.failure import Failure

# A bad redaction pattern: raised by the redaction the kit shares with the re-driver, and one of
# the kit's exceptions for its users (``from sqs_redriver.kit.errors import RedactionPatternError``).
from sqs_redriver.protocol.redact import RedactionPatternError as RedactionPatternError


class KitConfigError(ValueError):
    """A kit setting is missing or outside what the kit accepts; the message names the variable."""


class KitAwsError(RuntimeError):
    """An AWS call of the kit failed (after botocore's own retries)."""


class UnsendableRecord(ValueError):
    """The record cannot be sent back as it came (e.g. a binary attribute that is not base64)."""


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
