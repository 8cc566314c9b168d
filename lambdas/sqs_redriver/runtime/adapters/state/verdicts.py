"""The consumer kit's verdict counts (``VERDICTS#<verdict key>``): the ``VerdictStore`` port."""

from __future__ import annotations

from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.protocol.keys import verdict_record_key
from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord
from sqs_redriver.runtime.adapters.records.run_state import verdicts_from_item

NO_VERDICTS = "read as no verdicts"


class VerdictRecords(DynamoTable):
    """The verdict records the consumer kit adds to (the re-driver only reads them)."""

    def load_verdicts(self, verdict_key: str) -> VerdictCounts:
        """The consumer kit's verdicts reported under ``verdict_key`` (zeros while there are none,
        or when the record is corrupt: a forged count never opens a breaker)."""
        item = self._get_item(verdict_record_key(verdict_key))
        if not item:
            return VerdictCounts()
        try:
            return verdicts_from_item(item)
        except CorruptRecord as corrupt:
            self._report(corrupt, NO_VERDICTS)
            return VerdictCounts()
