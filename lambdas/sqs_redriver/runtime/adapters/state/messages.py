"""Message records (``MSG#<identity>``) and the consumer kit's failure records
(``FAILURE#<identity>``) of messages with no room for a mark: the ``MessageStore`` port, and the
deletes only the operator's tool makes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqs_redriver.protocol.failure import Failure
from sqs_redriver.protocol.keys import (
    RecordKind,
    failure_record_key,
    kind_of,
    message_record_key,
    storable,
    subject_of,
)
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable
from sqs_redriver.runtime.adapters.ports import MessageRecord
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord, expired, item_key
from sqs_redriver.runtime.adapters.records.messages import failure_from_item, mark_from_item, message_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

IGNORED_MESSAGE_RECORD = "ignored: the message counts from its content identity; its next record replaces it"
IGNORED_FAILURE_RECORD = "ignored: the message is judged without this failure"


class MessageRecords(DynamoTable):
    """Message and failure records; message records expire ``ttl_seconds`` after they are written."""

    def __init__(self, table_name: str, client: DynamoDBClient, *, ttl_seconds: int, **options: Any) -> None:
        super().__init__(table_name, client, **options)
        self._ttl_seconds = ttl_seconds

    def load_marks(self, identities: Iterable[str]) -> dict[str, Mark]:
        """Marks recorded for these identities (absent ones are omitted), expired ones ignored,
        with the failure the consumer kit recorded for a message that had no room for it. A corrupt
        record is reported and ignored."""
        wanted = sorted(set(identities))
        keys = [key for i in wanted for key in (message_record_key(i), failure_record_key(i))]
        now = self._now()
        marks: dict[str, Mark] = {}
        failures: dict[str, Failure] = {}
        for item in self._get_items(keys):
            try:
                key = item_key(item)
                if expired(item, key, now=now):
                    continue
                if kind_of(key) is RecordKind.FAILURE:
                    failures[subject_of(key)] = failure_from_item(item, now=now)
                else:
                    mark = mark_from_item(item, now=now)
                    marks[mark.identity] = mark
            except CorruptRecord as corrupt:
                of_failure = corrupt.kind is RecordKind.FAILURE
                self._report(corrupt, IGNORED_FAILURE_RECORD if of_failure else IGNORED_MESSAGE_RECORD)
        for identity, failure in failures.items():
            mark = marks.get(identity) or Mark(identity=identity, first_failed_at=failure.at)
            marks[identity] = replace(mark, failure=failure)
        return marks

    def save_records(self, records: Sequence[MessageRecord]) -> None:
        """Write message records with BatchWriteItem, retrying unprocessed items (none: no call)."""
        now = self._now()
        items = [{"PutRequest": {"Item": message_item(record, now, self._ttl_seconds)}} for record in records]
        self._write_batches(items)

    def forget_marks(self, identities: Iterable[str]) -> None:
        """Delete the message records and the consumer kit's failure records of these identities
        (BatchWriteItem, unprocessed ones retried; none: no call): a message with no room for a
        mark then starts again at count 0, with no failure from before (which could park it)."""
        wanted = sorted(set(identities))
        keys = [
            key for i in wanted for key in (message_record_key(i), failure_record_key(i)) if storable(key)
        ]
        self._write_batches([{"DeleteRequest": {"Key": {"pk": {"S": key}}}} for key in keys])
