"""The DynamoDB calls of the state table: single and batched reads and writes, every AWS error
turned into ``AwsCallError``, unprocessed batch entries retried."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.protocol.keys import storable
from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord
from sqs_redriver.runtime.adapters.records.reporting import CorruptRecordLog

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BATCH_GET_LIMIT = 100
BATCH_WRITE_LIMIT = 25
MAX_UNPROCESSED_ROUNDS = 5


class DynamoTable:
    """One DynamoDB table keyed by ``pk``, and where its corrupt records are reported."""

    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        logger: logging.Logger | Any = None,
        metrics: Any = None,
    ) -> None:
        self.table_name = table_name
        self._client = client
        self._clock = clock
        self._sleep = sleep
        self._log = logger or logging.getLogger("redriver")
        self._corrupt = CorruptRecordLog(self._log, metrics)

    def _now(self) -> int:
        return int(self._clock())

    def _report(self, corrupt: CorruptRecord, fate: str) -> None:
        self._corrupt.report(corrupt, fate)

    def _write_if(self, operation: str, call: Any, **kwargs: Any) -> dict[str, Any] | None:
        """A conditional write: its response, or None when its condition failed."""
        try:
            response: dict[str, Any] = call(TableName=self.table_name, **kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc
        return response

    def _get_item(self, key: str) -> dict[str, Any] | None:
        """One item, read consistently; None when there is none (or none can be: ``storable``)."""
        if not storable(key):
            return None
        response = self._call(
            "GetItem",
            self._client.get_item,
            TableName=self.table_name,
            Key={"pk": {"S": key}},
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _put_item(self, item: Mapping[str, Any]) -> None:
        self._call("PutItem", self._client.put_item, TableName=self.table_name, Item=item)

    def _get_items(self, wanted: Sequence[str]) -> list[dict[str, Any]]:
        """Consistent BatchGetItem of these keys (those that can hold a record), retrying
        unprocessed ones."""
        keys = [key for key in wanted if storable(key)]
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), BATCH_GET_LIMIT):
            request: dict[str, Any] = {
                self.table_name: {
                    "Keys": [{"pk": {"S": key}} for key in keys[start : start + BATCH_GET_LIMIT]],
                    "ConsistentRead": True,
                }
            }
            for _ in range(MAX_UNPROCESSED_ROUNDS):
                response = self._call("BatchGetItem", self._client.batch_get_item, RequestItems=request)
                found.extend(response.get("Responses", {}).get(self.table_name, []))
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
                self._sleep(0.05)
            else:
                raise AwsCallError("DynamoDB BatchGetItem left keys unprocessed after retries")
        return found

    def _write_batches(self, items: Sequence[Mapping[str, Any]]) -> None:
        """BatchWriteItem in batches of 25, retrying unprocessed items (none: no call)."""
        for start in range(0, len(items), BATCH_WRITE_LIMIT):
            request: dict[str, Any] = {self.table_name: items[start : start + BATCH_WRITE_LIMIT]}
            for _ in range(MAX_UNPROCESSED_ROUNDS):
                response = self._call("BatchWriteItem", self._client.batch_write_item, RequestItems=request)
                request = response.get("UnprocessedItems") or {}
                if not request:
                    break
                self._sleep(0.05)
            else:
                raise AwsCallError("DynamoDB BatchWriteItem left items unprocessed after retries")

    def _call(self, operation: str, call: Any, **kwargs: Any) -> Any:
        try:
            return call(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc
