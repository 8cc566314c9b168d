"""The consumer kit: a Python SQS consumer classifies its failures, dead-letters what will never
succeed at once (with the reason in the re-driver's mark), and reports re-driven messages'
verdicts to the re-driver. Exception text is redacted before it leaves the consumer (by
``sqs_redriver.protocol.redact``, the redaction the re-driver applies too): a failure the kit does
not dead-letter leaves the record handler as ``RecordFailedError``, a batch whose records all
failed as ``AllRecordsFailedError`` (``errors``), never as the original exception.

    from sqs_redriver.kit import ConsumerKit, TerminalError, TransientError

    kit = ConsumerKit.from_environment(terminal=[InvalidOrder], transient=[DownstreamUnavailable])
    processor = BatchProcessor(event_type=EventType.SQS)

    def lambda_handler(event, context):
        return kit.process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

Its modules, each one concept: ``consumer`` (ConsumerKit, the wrapper around a record handler),
``classify`` (a failure's kind and fingerprint), ``records`` (a record as read, and the send
that dead-letters it), ``aws`` (every AWS call, the verdicts' tally included), ``config`` (the
settings from the environment), ``errors`` (the kit's exceptions).
"""

from sqs_redriver.kit.classify import Classifier, TerminalError, TransientError, fingerprint
from sqs_redriver.kit.config import KitConfig
from sqs_redriver.kit.consumer import ConsumerKit
from sqs_redriver.kit.errors import AllRecordsFailedError, KitConfigError, RecordFailedError
from sqs_redriver.protocol.failure import FailureKind
from sqs_redriver.protocol.redact import Redactor
from sqs_redriver.protocol.settings import (
    ENV_DLQ_URL,
    ENV_ERROR_TEXT,
    ENV_ERROR_TEXT_MAX_CHARS,
    ENV_MAX_RECEIVE_COUNT,
    ENV_REDACT_PATTERNS,
    ENV_TABLE_NAME,
)

__all__ = [
    "ENV_DLQ_URL",
    "ENV_ERROR_TEXT",
    "ENV_ERROR_TEXT_MAX_CHARS",
    "ENV_MAX_RECEIVE_COUNT",
    "ENV_REDACT_PATTERNS",
    "ENV_TABLE_NAME",
    "AllRecordsFailedError",
    "Classifier",
    "ConsumerKit",
    "FailureKind",
    "KitConfig",
    "KitConfigError",
    "RecordFailedError",
    "Redactor",
    "TerminalError",
    "TransientError",
    "fingerprint",
]
