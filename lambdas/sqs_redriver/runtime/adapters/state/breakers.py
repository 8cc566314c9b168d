"""The breaker records (``BREAKER#<source queue URL>``): the ``BreakerStore`` port."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable
from sqs_redriver.runtime.adapters.records.breaker import breaker_from_item, breaker_item, stored_version
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord
from sqs_redriver.runtime.decide.breaker import Breaker

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BREAKER_READ_AS_CLOSED = "read as CLOSED; its next transition overwrites it, guarded by what it holds"
# A stored version attribute that is not a valid one, as it was read (None: there was none).
_ABSENT: dict[str, Any] | None = None


class BreakerRecords(DynamoTable):
    """The breaker records, written conditionally on the version read."""

    def __init__(self, table_name: str, client: DynamoDBClient, **options: Any) -> None:
        super().__init__(table_name, client, **options)
        # Breakers read from a record whose version was not valid: the raw version attribute, the
        # guard of the write that overwrites the record (an absent one is guarded as absent).
        self._unversioned: dict[str, dict[str, Any] | None] = {}
        self._lock = threading.Lock()

    def load_breaker(self, key: str) -> Breaker:
        """The stored breaker, or a fresh CLOSED one (version 0) when none was written yet. A
        corrupt record is read as CLOSED (never OPEN) and reported."""
        item = self._get_item(key)
        with self._lock:
            self._unversioned.pop(key, None)  # what was read before no longer guards a write
        if not item:
            return Breaker()
        try:
            return breaker_from_item(item, now=self._now())
        except CorruptRecord as corrupt:
            self._report(corrupt, BREAKER_READ_AS_CLOSED)
        try:
            return Breaker(version=stored_version(item))
        except CorruptRecord:
            with self._lock:
                self._unversioned[key] = item.get("version", _ABSENT)
            return Breaker()

    def save_breaker(self, key: str, breaker: Breaker, *, expected_version: int) -> bool:
        """Write the breaker if the stored version is still ``expected_version`` (or, over a
        record read without a valid version, if that version attribute is still as read).

        Returns False when another run changed it first (ConditionalCheckFailed).
        """
        condition = "attribute_not_exists(pk) OR version = :expected"
        values: dict[str, Any] = {":expected": {"N": str(expected_version)}}
        with self._lock:
            unversioned = key in self._unversioned and expected_version == 0
            raw = self._unversioned.get(key)
        if unversioned and raw is _ABSENT:
            condition, values = "attribute_exists(pk) AND attribute_not_exists(version)", {}
        elif unversioned:
            condition, values = "version = :stored", {":stored": raw}
        written = self._write_if(
            "PutItem (breaker)",
            self._client.put_item,
            Item=breaker_item(key, breaker),
            ConditionExpression=condition,
            **({"ExpressionAttributeValues": values} if values else {}),
        )
        if written is not None and unversioned:
            with self._lock:
                self._unversioned.pop(key, None)
        return written is not None
