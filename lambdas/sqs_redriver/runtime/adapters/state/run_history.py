"""A re-driver's run history (``RUNS#<DLQ URL>``): the ``RunHistoryStore`` port, and the read the
operator's tool makes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord
from sqs_redriver.runtime.adapters.records.operator import RunHistory, run_line, runs_from_item, runs_item
from sqs_redriver.runtime.model.history import RUN_HISTORY_LENGTH

EMPTY_HISTORY = "read as an empty history; the next run's summary replaces it"
ENTRY_SKIPPED = "entry skipped; the next run's summary drops it"


class RunHistoryRecords(DynamoTable):
    """The run history item: the last runs' summaries, newest first."""

    def record_run(self, key: str, summary: Mapping[str, object], keep: int = RUN_HISTORY_LENGTH) -> None:
        """Put a run's summary first in the history item ``key`` and keep the ``keep`` newest
        (unreadable entries are dropped).

        GetItem, then PutItem, unconditional: runs of one re-driver never overlap (reserved
        concurrency 1), and an update lost to a rare overlap loses one line of history, nothing more.
        """
        lines = self._history(key).lines
        self._put_item(runs_item(key, [run_line(summary), *lines][: max(keep, 1)]))

    def load_runs(self, key: str) -> list[dict[str, Any]]:
        """The recorded run summaries, newest first (an entry that is not a JSON object is skipped)."""
        return self._history(key).summaries

    def _history(self, key: str) -> RunHistory:
        item = self._get_item(key)
        if not item:
            return RunHistory()
        try:
            history = runs_from_item(item)
        except CorruptRecord as corrupt:
            self._report(corrupt, EMPTY_HISTORY)
            return RunHistory()
        for skipped in history.skipped:
            self._report(skipped, ENTRY_SKIPPED)
        return history
