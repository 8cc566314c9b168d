"""Which fingerprints have an operator's retry or park record: an index the tool keeps in one item
of the state table, beside the records themselves.

The operator may not Scan or Query the table (``grant_operator`` gives item reads and writes only),
so the records cannot be listed by their key prefix: ``retry-group`` and ``park-group`` add the
fingerprint here before they write its record, ``clear-group`` removes it after deleting the
record, and ``rules`` reads the records of the fingerprints listed here. A record written by hand
(or by a tool older than the index) is not listed; naming its fingerprint reads it all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqs_redriver.console.inventory import is_fingerprint
from sqs_redriver.protocol.keys import group_index_key
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable

GROUP_INDEX_KEY = group_index_key()
# Writers racing on the index (two operators at once) retry this many times, then give up.
INDEX_WRITE_ATTEMPTS = 3


class GroupIndex(DynamoTable):
    """The index item: a sorted list of fingerprints and a version for conditional writes."""

    def __init__(self, table_name: str, client: Any) -> None:
        super().__init__(table_name, client)
        # What was wrong with the item when it was last read (None: nothing); a write repairs it.
        self.corrupt: str | None = None

    def load(self) -> list[str]:
        """The fingerprints listed, sorted (none while the item does not exist)."""
        return self._read()[0]

    def add(self, fingerprint: str) -> None:
        """List ``fingerprint`` (nothing to do when it is)."""
        self._change(lambda listed: listed | {fingerprint})

    def remove(self, fingerprint: str) -> None:
        """Stop listing ``fingerprint`` (nothing to do when it is not)."""
        self._change(lambda listed: listed - {fingerprint})

    def _read(self) -> tuple[list[str], dict[str, Any]]:
        """The valid fingerprints listed, and the condition a write must hold (nobody wrote since).
        Anything else in the item is left out and named in ``corrupt``."""
        item = self._call(
            "GetItem",
            self._client.get_item,
            TableName=self.table_name,
            Key={"pk": {"S": GROUP_INDEX_KEY}},
            ConsistentRead=True,
        ).get("Item")
        self.corrupt = None
        if item is None:
            return [], {"ConditionExpression": "attribute_not_exists(pk)"}
        raw = item.get("fingerprints", {})
        values = raw.get("L") if isinstance(raw, dict) else None
        listed = [v["S"] for v in values or [] if isinstance(v, dict) and is_fingerprint(v.get("S") or "")]
        if values is None or len(listed) != len(values):
            self.corrupt = f"{GROUP_INDEX_KEY}: fingerprints is not a list of fingerprints"
        if not str(item.get("version", {}).get("N", "")).isdigit():
            self.corrupt = f"{GROUP_INDEX_KEY}: version is not a whole number"
        guard: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(version)"}
        if "version" in item:
            guard = {
                "ConditionExpression": "version = :read",
                "ExpressionAttributeValues": {":read": item["version"]},
            }
        return sorted(set(listed)), guard

    def _change(self, change: Callable[[set[str]], set[str]]) -> None:
        """Read, change and write the index on condition that nobody wrote it in between."""
        for _ in range(INDEX_WRITE_ATTEMPTS):
            listed, guard = self._read()
            changed = change(set(listed))
            if changed == set(listed) and self.corrupt is None:
                return
            if self._write(sorted(changed), guard):
                return
        raise AwsCallError(
            f"the index of group records in {self.table_name} changed at every attempt (someone "
            "else is marking groups): try again"
        )

    def _write(self, fingerprints: list[str], guard: dict[str, Any]) -> bool:
        version = guard.get("ExpressionAttributeValues", {}).get(":read", {}).get("N", "0")
        next_version = int(version) + 1 if str(version).isdigit() else 1
        written = self._write_if(
            "PutItem",
            self._client.put_item,
            Item={
                "pk": {"S": GROUP_INDEX_KEY},
                "fingerprints": {"L": [{"S": fp} for fp in fingerprints]},
                "version": {"N": str(next_version)},
            },
            **guard,
        )
        return written is not None
