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

from botocore.exceptions import BotoCoreError, ClientError

from redriver.adapters import AwsCallError

GROUP_INDEX_KEY = "GROUPS#index"
# Writers racing on the index (two operators at once) retry this many times, then give up.
INDEX_WRITE_ATTEMPTS = 3


class GroupIndex:
    """The index item: a sorted list of fingerprints and a version for conditional writes."""

    def __init__(self, table_name: str, client: Any) -> None:
        self.table_name = table_name
        self._client = client

    def load(self) -> list[str]:
        """The fingerprints listed, sorted (none while the item does not exist)."""
        return self._read()[0]

    def add(self, fingerprint: str) -> None:
        """List ``fingerprint`` (nothing to do when it is)."""
        self._change(lambda listed: listed | {fingerprint})

    def remove(self, fingerprint: str) -> None:
        """Stop listing ``fingerprint`` (nothing to do when it is not)."""
        self._change(lambda listed: listed - {fingerprint})

    def _read(self) -> tuple[list[str], int | None]:
        item = self._call(
            "GetItem",
            self._client.get_item,
            TableName=self.table_name,
            Key={"pk": {"S": GROUP_INDEX_KEY}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return [], None
        listed = [value["S"] for value in item.get("fingerprints", {}).get("L", []) if "S" in value]
        return sorted(listed), int(item.get("version", {}).get("N", "0"))

    def _change(self, change: Callable[[set[str]], set[str]]) -> None:
        """Read, change and write the index on condition that nobody wrote it in between."""
        for _ in range(INDEX_WRITE_ATTEMPTS):
            listed, version = self._read()
            changed = change(set(listed))
            if changed == set(listed):
                return
            if self._write(sorted(changed), version):
                return
        raise AwsCallError(
            f"the index of group records in {self.table_name} changed at every attempt (someone "
            "else is marking groups): try again"
        )

    def _write(self, fingerprints: list[str], version: int | None) -> bool:
        condition = (
            {"ConditionExpression": "attribute_not_exists(pk)"}
            if version is None
            else {
                "ConditionExpression": "version = :read",
                "ExpressionAttributeValues": {":read": {"N": str(version)}},
            }
        )
        try:
            self._client.put_item(
                TableName=self.table_name,
                Item={
                    "pk": {"S": GROUP_INDEX_KEY},
                    "fingerprints": {"L": [{"S": fp} for fp in fingerprints]},
                    "version": {"N": str((version or 0) + 1)},
                },
                **condition,
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise AwsCallError(f"DynamoDB PutItem on {self.table_name} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise AwsCallError(f"DynamoDB PutItem on {self.table_name} failed: {exc}") from exc
        return True

    def _call(self, operation: str, call: Any, **kwargs: Any) -> Any:
        try:
            return call(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc
