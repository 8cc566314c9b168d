"""How a corrupt record is made known: a log line naming its key, and the CorruptRecords metric."""

from __future__ import annotations

import logging
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from sqs_redriver.runtime.adapters.records.fields import CorruptRecord

CORRUPT_RECORDS_METRIC = "CorruptRecords"


class CorruptRecordLog:
    """Reports each corrupt record with its fate; ``metrics``: Powertools Metrics (None: log only)."""

    def __init__(self, logger: logging.Logger | Any, metrics: Any = None) -> None:
        self._log = logger
        self._metrics = metrics

    def report(self, corrupt: CorruptRecord, fate: str) -> None:
        """One log line with the record's key, kind, field, problem and fate; one metric count."""
        self._log.error(
            "corrupt state record",
            extra={
                "record_key": corrupt.key,
                "record_kind": corrupt.kind.name if corrupt.kind else "UNKNOWN",
                "field": corrupt.field,
                "problem": corrupt.problem,
                "fate": fate,
            },
        )
        if self._metrics is not None:
            self._metrics.add_metric(name=CORRUPT_RECORDS_METRIC, unit=MetricUnit.Count, value=1)
