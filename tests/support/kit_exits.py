"""Everything a consumer with the kit lets out as text, collected for a test to search: the log
lines (the kit's Powertools Logger as it prints them, Powertools' own batch logger at debug level,
a processor's ``logger`` with its tracebacks) and an unhandled error as the Lambda runtime, or any
logger, could print it (its whole chain, suppressed links and child exceptions included)."""

from __future__ import annotations

import io
import logging
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqs_redriver.kit.consumer import logger as kit_logger

POWERTOOLS_BATCH_LOGGER = "aws_lambda_powertools.utilities.batch.base"


PROCESSOR_LOGGER = "consumer-processor"


@dataclass
class Logs:
    """What was logged while ``captured_logs`` was open. ``processor_logger`` is for a processor's
    ``logger=``: Powertools logs each failed record to it as a warning with its traceback."""

    kit: io.StringIO = field(default_factory=io.StringIO)
    library: io.StringIO = field(default_factory=io.StringIO)
    processor: io.StringIO = field(default_factory=io.StringIO)
    processor_logger: logging.Logger = field(default_factory=lambda: logging.getLogger(PROCESSOR_LOGGER))

    def text(self) -> str:
        return "\n".join((self.kit.getvalue(), self.library.getvalue(), self.processor.getvalue()))


def _handler(stream: io.StringIO) -> logging.Handler:
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))  # tracebacks too
    return handler


@contextmanager
def captured_logs() -> Iterator[Logs]:
    """The kit's log lines as its handler prints them, Powertools' batch logging at DEBUG, and
    what a processor logs to ``processor_logger``."""
    logs = Logs()
    kit_handler = kit_logger.registered_handler
    assert isinstance(kit_handler, logging.StreamHandler)
    library = logging.getLogger(POWERTOOLS_BATCH_LOGGER)
    library_handler, processor_handler = _handler(logs.library), _handler(logs.processor)
    previous_stream, previous_level = kit_handler.setStream(logs.kit), library.level
    library.addHandler(library_handler)
    library.setLevel(logging.DEBUG)
    logs.processor_logger.addHandler(processor_handler)
    try:
        yield logs
    finally:
        kit_handler.setStream(previous_stream)
        library.removeHandler(library_handler)
        library.setLevel(previous_level)
        logs.processor_logger.removeHandler(processor_handler)


def everything_printed(error: BaseException) -> str:
    """All an error could show: the Lambda runtime's line (str and stack), the traceback module's
    rendering, and the str, repr and rendering of every exception it links to, whether its link is
    a cause, a (suppressed) context or a Powertools child exception."""
    texts = [
        str(error),
        "".join(traceback.format_list(traceback.extract_tb(error.__traceback__))),
        "".join(traceback.format_exception(error)),
    ]
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        texts += [str(current), repr(current), "".join(traceback.format_exception(current))]
        linked = [current.__cause__, current.__context__]
        linked += [value for _, value, _ in getattr(current, "child_exceptions", [])]
        pending += [e for e in linked if e is not None]
    return "\n".join(texts)
