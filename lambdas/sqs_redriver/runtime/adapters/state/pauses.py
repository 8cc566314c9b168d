"""The operator's pause of a re-driver (``PAUSE#<DLQ URL>``): the ``PauseStore`` port, and the
writes only the operator's tool makes."""

from __future__ import annotations

from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord
from sqs_redriver.runtime.adapters.records.operator import UNREADABLE_PAUSE, pause_from_item, pause_item
from sqs_redriver.runtime.model.pause import Pause

PAUSE_HONOURED = "read as a pause (only an operator writes one)"


class PauseRecords(DynamoTable):
    """The pause record."""

    def load_pause(self, key: str) -> Pause | None:
        """The pause an operator recorded, if any (a corrupt one still pauses)."""
        item = self._get_item(key)
        if not item:
            return None
        try:
            return pause_from_item(item, now=self._now())
        except CorruptRecord as corrupt:
            self._report(corrupt, PAUSE_HONOURED)
            return UNREADABLE_PAUSE

    def save_pause(self, key: str, pause: Pause) -> None:
        """Pause the re-driver: every run from now on honours it."""
        self._put_item(pause_item(key, pause))

    def clear_pause(self, key: str) -> None:
        """Resume: the next run re-drives again."""
        self._call("DeleteItem", self._client.delete_item, TableName=self.table_name, Key={"pk": {"S": key}})
