"""When a re-driver's next retention sweep is due (``SWEEP#<DLQ URL>``): the ``SweepStore`` port."""

from __future__ import annotations

from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord
from sqs_redriver.runtime.adapters.records.run_state import sweep_due_from_item, sweep_item

SWEEP_DUE = "treated as absent: the retention sweep is due now"


class SweepRecords(DynamoTable):
    """The retention sweep's due time."""

    def load_sweep_due(self, key: str) -> int:
        """When the next retention sweep is due (0: now; none was recorded, or a corrupt one)."""
        item = self._get_item(key)
        if not item:
            return 0
        try:
            return sweep_due_from_item(item, now=self._now())
        except CorruptRecord as corrupt:
            self._report(corrupt, SWEEP_DUE)
            return 0

    def save_sweep_due(self, key: str, due_at: int) -> None:
        """Record when the next retention sweep is due."""
        self._put_item(sweep_item(key, due_at))
