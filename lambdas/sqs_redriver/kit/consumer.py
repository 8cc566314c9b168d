"""ConsumerKit: wraps a consumer's record handler so that failures are classified, dead-lettered
by the kit when their fate is known, and re-driven messages' verdicts reach the re-driver; and how
a failure leaves the consumer (the ``Failure`` the kit writes, the errors it lets out, its log
lines), its text redacted (see ``errors`` for why the original exception never escapes)."""

from __future__ import annotations

import functools
import inspect
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import process_partial_response
from aws_lambda_powertools.utilities.batch.exceptions import (
    BatchProcessingError,
    ExceptionInfo,
    UnexpectedBatchTypeError,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from sqs_redriver.kit.aws import KitAws, VerdictBuffer, VerdictTally
from sqs_redriver.kit.classify import (
    Classifier,
    ExceptionTypes,
    Predicate,
    error_class,
    exception_text,
    fingerprint,
    where,
)
from sqs_redriver.kit.config import KitConfig, load_config
from sqs_redriver.kit.errors import AllRecordsFailedError, KitAwsError, RecordFailedError, UnsendableRecord
from sqs_redriver.kit.records import InboundRecord, from_event_record, plan_dead_letter
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.redact import Redactor, compile_patterns

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.base import BasePartialBatchProcessor
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext

# The kit's logger: Powertools Logger, so its lines join the consumer's structured logs (same
# service name, same handler).
logger = Logger()

ALL_FAILED = "All records failed processing"
# The message of a failure whose text the configuration drops (REDRIVER_ERROR_TEXT=drop).
DROPPED_TEXT = "<text dropped>"

RecordHandler = Callable[..., Any]


class ConsumerKit:
    """The consumer side of the re-driver's protocol; one per function, built at cold start."""

    def __init__(
        self,
        config: KitConfig,
        classifier: Classifier | None = None,
        *,
        aws: KitAws | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.classifier = classifier or Classifier.of()
        self.aws = aws or KitAws(config.table_name, dlq_url=config.dlq_url)
        self.verdicts = VerdictBuffer()
        self._clock = clock
        self._batch: dict[str, Mapping[str, Any]] = {}

    @classmethod
    def from_environment(
        cls,
        *,
        terminal: ExceptionTypes = (),
        transient: ExceptionTypes = (),
        predicates: Iterable[Predicate] = (),
        unknown: FailureKind = FailureKind.TERMINAL,
        builtin_transient: bool = True,
        redact_patterns: Iterable[str | re.Pattern[str]] = (),
        env: Mapping[str, str] | None = None,
        sqs: Any = None,
        dynamodb: Any = None,
        clock: Callable[[], float] = time.time,
    ) -> ConsumerKit:
        """A kit configured from ``REDRIVER_*`` variables (``env`` defaults to ``os.environ``) and
        classification rules (see ``Classifier.of``); AWS clients are created on first use.
        ``redact_patterns``: regular expressions of secrets to mask in exception text, besides the
        built-in ones and ``REDRIVER_REDACT_PATTERNS``'s (an invalid one raises ValueError naming it)."""
        config = load_config(os.environ if env is None else env)
        extra = compile_patterns(redact_patterns)
        if extra:
            patterns = config.redactor.extra_patterns + extra
            config = replace(config, redactor=replace(config.redactor, extra_patterns=patterns))
        classifier = Classifier.of(
            terminal=terminal,
            transient=transient,
            predicates=predicates,
            unknown=unknown,
            builtin_transient=builtin_transient,
        )
        return cls(
            config,
            classifier,
            aws=KitAws(config.table_name, dlq_url=config.dlq_url, sqs=sqs, dynamodb=dynamodb),
            clock=clock,
        )

    def process_partial_response(
        self,
        event: dict[str, Any],
        record_handler: RecordHandler,
        processor: BasePartialBatchProcessor,
        context: LambdaContext | None = None,
    ) -> PartialItemFailureResponse:
        """Powertools' ``process_partial_response`` with ``record_handler`` wrapped by the kit,
        then the batch's verdicts flushed (also when the batch raised). When every record failed,
        it raises AllRecordsFailedError (a BatchProcessingError) as Powertools would, its text redacted."""
        self._batch = {
            str(r.get("messageId")): r for r in event.get("Records") or [] if isinstance(r, Mapping)
        }
        try:
            return process_partial_response(
                event=event, record_handler=self.wrap(record_handler), processor=processor, context=context
            )
        except UnexpectedBatchTypeError:
            raise
        except BatchProcessingError as every_record_failed:
            failed = all_records_failed(every_record_failed.child_exceptions, self.config.redactor)
        finally:
            self._batch = {}
            self.flush_verdicts()
        # Raised here, outside the except clause: no __context__ that carries the original text.
        raise failed from None

    def wrap(self, record_handler: RecordHandler) -> RecordHandler:
        """A record handler for any Powertools processor: a failure the kit dead-letters returns
        (the record is handled), any other failure raises RecordFailedError, which tells it redacted
        (never the original exception). Call ``flush_verdicts`` after the batch."""
        passes_context = "lambda_context" in inspect.signature(record_handler).parameters

        @functools.wraps(record_handler)
        def handle(record: Any, lambda_context: LambdaContext | None = None) -> Any:
            inbound = from_event_record(self._raw(record))
            try:
                if passes_context:
                    result = record_handler(record, lambda_context=lambda_context)
                else:
                    result = record_handler(record)
            except Exception as exc:
                failed = self._left_failed(inbound, exc)
            else:
                self.verdicts.succeeded(inbound)
                return result
            if failed is None:
                return None
            # Raised outside the except clause: neither a cause nor a context carries the original.
            raise failed from None

        return handle

    def flush_verdicts(self) -> int:
        """Write the buffered verdicts, one UpdateItem per verdict key; returns how many were
        written. A failed write is logged and dropped (the re-driver falls back to its window)."""
        return sum(self._write_verdicts(key, tally) for key, tally in self.verdicts.take().items())

    def _write_verdicts(self, verdict_key: str, tally: VerdictTally) -> bool:
        try:
            self.aws.add_verdicts(verdict_key, tally, int(self._clock()))
        except KitAwsError as exc:
            logger.warning(
                "verdict write failed",
                extra={"verdict_key": verdict_key, **tally.counts(), "error": self._safe(exc)},
            )
            return False
        return True

    def _report(self, record: InboundRecord, kind: FailureKind, fingerprint: str) -> None:
        """A failure's verdict. A transient one is written at once, not at the batch's end: a large
        drain's workers read their verdicts before every batch, so a consumer that broke is heard
        within a batch of its first failure, not a batch's processing time later (its successes
        still go at the end, one write a batch). Written or not, it is counted once: a failed
        write buffers it for the end."""
        at_once = self.verdicts.alone(record, kind, fingerprint) if kind is FailureKind.TRANSIENT else None
        if at_once is None or not self._write_verdicts(*at_once):
            self.verdicts.failed(record, kind, fingerprint)

    def _left_failed(self, record: InboundRecord, exc: Exception) -> RecordFailedError | None:
        """Classify the failure; dead-letter the record when its fate is known. None when done,
        else the error that fails the record, redacted."""
        kind = self.classifier.classify(exc)
        failure = self._failure(record, exc, kind)
        self._report(record, kind, failure.fingerprint)
        fields = {
            "message_id": record.message_id,
            "kind": kind.value,
            "error_class": failure.error_class,
            "fingerprint": failure.fingerprint,
            "attempt": record.receive_count,
        }
        reason = self._why_dead_letter(record, kind)
        if reason is None:
            logger.info("failure left to SQS for a retry", extra=fields)
            return RecordFailedError.of(failure, record.message_id, where(exc))
        try:
            self._send_to_dlq(record, failure, {**fields, "reason": reason})
        except (KitAwsError, UnsendableRecord) as send_error:
            logger.error(
                "dead-lettering failed, the record stays failed",
                extra={**fields, "error": self._safe(send_error)},
            )
            return RecordFailedError.of(failure, record.message_id, where(exc))
        return None

    def _why_dead_letter(self, record: InboundRecord, kind: FailureKind) -> str | None:
        if kind is FailureKind.TERMINAL:
            return "terminal"
        if record.probe:
            return "probe failed"
        if record.receive_count >= self.config.max_receive_count:
            return "last attempt"
        return None

    def _send_to_dlq(self, record: InboundRecord, failure: Failure, fields: dict[str, Any]) -> None:
        plan = plan_dead_letter(record, failure, dlq_url=self.config.dlq_url, now=failure.at)
        if plan.failure_record_identity is not None:
            self.aws.put_failure(plan.failure_record_identity, failure, failure.at)
        dlq_message_id = self.aws.send_message(plan.send)
        logger.info(
            "dead-lettered by the kit",
            extra={
                **fields,
                "identity": plan.identity,
                "marked": plan.marked,
                "dlq_message_id": dlq_message_id,
            },
        )

    def _failure(self, record: InboundRecord, exc: Exception, kind: FailureKind) -> Failure:
        """The failure as it leaves the consumer: its text redacted (or dropped), its fingerprint
        from the masked text, a placeholder for an exception that will not print."""
        redactor = self.config.redactor
        text = exception_text(exc)
        return Failure(
            kind=kind,
            error_class=error_class(exc),
            message=DROPPED_TEXT if redactor.drop_text else redactor.redact(text),
            fingerprint=fingerprint(exc, redactor.mask(text)),
            at=int(self._clock()),
            attempt=record.receive_count,
            source=record.source_arn,
        )

    def _safe(self, exc: Exception) -> str:
        """An error of the kit's own (an AWS call's, an unsendable record's) as its log lines carry
        it: secrets masked, not capped (it says what went wrong in the kit, not in the consumer)."""
        return self.config.redactor.mask(exception_text(exc))

    def _raw(self, record: Any) -> Mapping[str, Any]:
        if isinstance(record, SQSRecord):
            return record.raw_event
        if isinstance(record, Mapping):
            return record
        raw = self._batch.get(str(getattr(record, "messageId", None)))
        if raw is None:
            raise TypeError(
                f"the kit cannot read a {type(record).__name__} record outside kit.process_partial_response; "
                "pass SQSRecord or the event's record dict"
            )
        return raw


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
