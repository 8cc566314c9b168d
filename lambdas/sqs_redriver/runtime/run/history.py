"""The run's report, added to the run history the operator's tool reads."""

from __future__ import annotations

from typing import Any

from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.ports import RunHistoryStore
from sqs_redriver.runtime.model.history import run_summary
from sqs_redriver.runtime.model.report import RunReport


def record_in_history(
    runs: RunHistoryStore,
    key: str,
    report: RunReport,
    *,
    started: float,
    ended: float,
    continuation: bool,
    source_queue_url: str,
    logger: Any,
) -> None:
    """Add the run's summary to the history ``key``. A failed write only loses that line: logged,
    never a run error, and the run's result stands."""
    summary = run_summary(
        report,
        at=int(started),
        duration_ms=max(int((ended - started) * 1000), 0),
        continuation=continuation,
        source_queue_url=source_queue_url,
    )
    try:
        runs.record_run(key, summary)
    except AwsCallError as exc:
        logger.warning("run history not recorded", extra={"error": str(exc)})
