"""An operator's retry and park records of failure groups (``RETRY#``/``PARK#<fingerprint>``):
the ``GroupMarkStore`` port, and the writes only the operator's tool makes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord, expired, item_key
from sqs_redriver.runtime.adapters.records.operator import (
    group_mark_from_item,
    group_mark_from_key,
    group_mark_item,
)
from sqs_redriver.runtime.model.groups import GroupAction, GroupMark, group_record_key, prevailing

GROUP_FROM_KEY = "honoured from its key alone (the operator's action on the fingerprint)"


class GroupMarkRecords(DynamoTable):
    """The group records: one per fingerprint and action, parking winning over retrying."""

    def load_group_marks(self, fingerprints: Iterable[str]) -> dict[str, GroupMark]:
        """An operator's retry or park mark of each of these fingerprints that has one (one
        BatchGetItem of both keys of each); when both are found, parking wins, and it is logged.
        A record with corrupt fields still counts by its key (and is reported)."""
        wanted = sorted(set(fingerprints))
        keys = [group_record_key(action, fp) for fp in wanted for action in GroupAction]
        now = self._now()
        found: list[GroupMark] = []
        for item in self._get_items(keys):
            key = item_key(item)
            try:
                if not expired(item, key, now=now):
                    found.append(group_mark_from_item(item, now=now))
            except CorruptRecord as corrupt:
                self._report(corrupt, GROUP_FROM_KEY)
                found.append(group_mark_from_key(key))
        marks, both = prevailing(found)
        for fingerprint in both:
            self._log.warning(
                "failure group marked both for retry and for parking: parked",
                extra={"fingerprint": fingerprint},
            )
        return marks

    def save_group_mark(self, mark: GroupMark) -> None:
        """Record an operator's retry or park of a failure group; the other action's record of
        the fingerprint is deleted in the same transaction (a fingerprint is retried or parked)."""
        self._transact(
            {"Put": {"TableName": self.table_name, "Item": group_mark_item(mark)}},
            {"Delete": {"TableName": self.table_name, "Key": {"pk": {"S": mark.other_key}}}},
        )

    def clear_group_mark(self, fingerprint: str) -> None:
        """Forget an operator's mark of a failure group: both records, in one transaction."""
        keys = [{"pk": {"S": group_record_key(action, fingerprint)}} for action in GroupAction]
        self._transact(*({"Delete": {"TableName": self.table_name, "Key": key}} for key in keys))

    def _transact(self, *items: dict[str, Any]) -> None:
        self._call("TransactWriteItems", self._client.transact_write_items, TransactItems=list(items))
