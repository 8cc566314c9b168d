"""The DynamoDB state table: the breaker record, one record per re-driven message, and the
records the operator's tool reads and writes (pause, failure groups, run history)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from redriver.adapters import AwsCallError
from redriver.adapters.ports import MessageRecord
from redriver.decide.breaker import Breaker, Canary, State
from redriver.model.envelope import Mark
from redriver.model.failure import (
    FAILURE_RECORD_PREFIX,
    PARK_RECORD_PREFIX,
    Failure,
    VerdictCounts,
    failure_record_key,
    verdict_record_key,
)
from redriver.model.groups import GroupAction, GroupMark, group_record_key, prevailing
from redriver.model.history import RUN_HISTORY_LENGTH
from redriver.model.pause import Pause

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BATCH_GET_LIMIT = 100
BATCH_WRITE_LIMIT = 25
MAX_UNPROCESSED_ROUNDS = 5


class StateTable:
    """The DynamoDB state table (the ``StateStore`` port)."""

    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient,
        *,
        ttl_seconds: int,
        clock: Callable[[], float] = time.time,
        pause: Callable[[float], None] = time.sleep,
        logger: logging.Logger | Any = None,
    ) -> None:
        self.table_name = table_name
        self._client = client
        self._ttl_seconds = ttl_seconds
        self._clock = clock
        self._pause = pause
        self._log = logger or logging.getLogger("redriver")

    # -- breaker -------------------------------------------------------------------------------

    def load_breaker(self, key: str) -> Breaker:
        """The stored breaker, or a fresh CLOSED one (version 0) when none was written yet."""
        item = self._get_item(key)
        return _breaker_from_item(item) if item else Breaker()

    def save_breaker(self, key: str, breaker: Breaker, *, expected_version: int) -> bool:
        """Write the breaker if the stored version is still ``expected_version``.

        Returns False when another run changed it first (ConditionalCheckFailed).
        """
        return self._write_if(
            "PutItem (breaker)",
            self._client.put_item,
            Item=_breaker_item(key, breaker),
            ConditionExpression="attribute_not_exists(pk) OR version = :expected",
            ExpressionAttributeValues={":expected": {"N": str(expected_version)}},
        )

    # -- continuation --------------------------------------------------------------------------

    def offer_continuation(self, key: str, token: str, *, stale_after: int) -> bool:
        """Take the one pending-continuation slot of ``key`` for ``token``; False when another
        run's continuation holds it and is not yet ``stale_after`` seconds old (lost, then)."""
        now = int(self._clock())
        return self._write_if(
            "PutItem (continuation)",
            self._client.put_item,
            Item={
                "pk": {"S": continuation_record_key(key)},
                "token": {"S": token},
                "offered_at": {"N": str(now)},
                "expires_at": {"N": str(now + stale_after)},
            },
            ConditionExpression="attribute_not_exists(pk) OR offered_at < :stale",
            ExpressionAttributeValues={":stale": {"N": str(now - stale_after)}},
        )

    def take_continuation(self, key: str, token: str) -> bool:
        """Free the slot if ``token`` still holds it; False for a continuation already taken."""
        return self._write_if(
            "DeleteItem (continuation)",
            self._client.delete_item,
            Key={"pk": {"S": continuation_record_key(key)}},
            ConditionExpression="#token = :token",
            ExpressionAttributeNames={"#token": "token"},
            ExpressionAttributeValues={":token": {"S": token}},
        )

    def _write_if(self, operation: str, call: Any, **kwargs: Any) -> bool:
        """A conditional write; False when its condition failed."""
        try:
            call(TableName=self.table_name, **kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc
        return True

    # -- retention sweep -------------------------------------------------------------------------

    def load_sweep_due(self, key: str) -> int:
        """When the next retention sweep is due (0: now, none was recorded)."""
        item = self._get_item(key)
        return int(item["due_at"]["N"]) if item else 0

    def save_sweep_due(self, key: str, due_at: int) -> None:
        """Record when the next retention sweep is due."""
        self._call(
            "PutItem",
            self._client.put_item,
            TableName=self.table_name,
            Item={"pk": {"S": key}, "due_at": {"N": str(due_at)}},
        )

    # -- the operator's pause -------------------------------------------------------------------

    def load_pause(self, key: str) -> Pause | None:
        """The pause an operator recorded, if any."""
        item = self._get_item(key)
        if not item:
            return None
        return Pause(reason=item["reason"]["S"], by=item["by"]["S"], at=int(item["at"]["N"]))

    def save_pause(self, key: str, pause: Pause) -> None:
        """Pause the re-driver: every run from now on honours it."""
        item = {
            "pk": {"S": key},
            "reason": {"S": pause.reason},
            "by": {"S": pause.by},
            "at": {"N": str(pause.at)},
        }
        self._call("PutItem", self._client.put_item, TableName=self.table_name, Item=item)

    def clear_pause(self, key: str) -> None:
        """Resume: the next run re-drives again."""
        self._call("DeleteItem", self._client.delete_item, TableName=self.table_name, Key={"pk": {"S": key}})

    # -- message records -----------------------------------------------------------------------

    def load_marks(self, identities: Iterable[str]) -> dict[str, Mark]:
        """Marks recorded for these identities (absent ones are omitted), expired ones ignored,
        with the failure the consumer kit recorded for a message that had no room for it."""
        wanted = sorted(set(identities))
        keys = [key for i in wanted for key in (_message_key(i), failure_record_key(i))]
        marks: dict[str, Mark] = {}
        failures: dict[str, Failure] = {}
        for item in self._get_items(keys):
            key = item["pk"]["S"]
            if key.startswith(FAILURE_RECORD_PREFIX):
                failures[key.removeprefix(FAILURE_RECORD_PREFIX)] = Failure.from_dict(
                    json.loads(item["failure"]["S"])
                )
            else:
                mark = _mark_from_item(item)
                marks[mark.identity] = mark
        for identity, failure in failures.items():
            mark = marks.get(identity) or Mark(identity=identity, first_failed_at=failure.at)
            marks[identity] = replace(mark, failure=failure)
        return marks

    # -- the operator's failure groups ----------------------------------------------------------

    def load_group_marks(self, fingerprints: Iterable[str]) -> dict[str, GroupMark]:
        """An operator's retry or park mark of each of these fingerprints that has one (one
        BatchGetItem of both keys of each); when both are found, parking wins, and it is logged."""
        wanted = sorted(set(fingerprints))
        keys = [group_record_key(action, fp) for fp in wanted for action in GroupAction]
        marks, both = prevailing(_group_mark_from_item(item) for item in self._get_items(keys))
        for fingerprint in both:
            self._log.warning(
                "failure group marked both for retry and for parking: parked",
                extra={"fingerprint": fingerprint},
            )
        return marks

    def save_group_mark(self, mark: GroupMark) -> None:
        """Record an operator's retry or park of a failure group; the other action's record of
        the fingerprint is deleted in the same transaction (a fingerprint is retried or parked)."""
        self._call(
            "TransactWriteItems",
            self._client.transact_write_items,
            TransactItems=[
                {"Put": {"TableName": self.table_name, "Item": _group_mark_item(mark)}},
                {"Delete": {"TableName": self.table_name, "Key": {"pk": {"S": mark.other_key}}}},
            ],
        )

    def clear_group_mark(self, fingerprint: str) -> None:
        """Forget an operator's mark of a failure group: both records, in one transaction."""
        self._call(
            "TransactWriteItems",
            self._client.transact_write_items,
            TransactItems=[
                {
                    "Delete": {
                        "TableName": self.table_name,
                        "Key": {"pk": {"S": group_record_key(a, fingerprint)}},
                    }
                }
                for a in GroupAction
            ],
        )

    # -- run history -----------------------------------------------------------------------------

    def record_run(self, key: str, summary: Mapping[str, object], keep: int = RUN_HISTORY_LENGTH) -> None:
        """Put a run's summary first in the history item ``key`` and keep the ``keep`` newest.

        GetItem, then PutItem, unconditional: runs of one re-driver never overlap (reserved
        concurrency 1), and an update lost to a rare overlap loses one line of history, nothing more.
        """
        item = self._get_item(key) or {}
        lines = [value["S"] for value in item.get("runs", {}).get("L", []) if "S" in value]
        line = json.dumps(summary, separators=(",", ":"), sort_keys=True)
        runs = [line, *lines][: max(keep, 1)]
        self._call(
            "PutItem",
            self._client.put_item,
            TableName=self.table_name,
            Item={"pk": {"S": key}, "runs": {"L": [{"S": run} for run in runs]}},
        )

    def load_runs(self, key: str) -> list[dict[str, Any]]:
        """The recorded run summaries, newest first (a line that is not a JSON object is skipped)."""
        item = self._get_item(key) or {}
        runs: list[dict[str, Any]] = []
        for value in item.get("runs", {}).get("L", []):
            try:
                run = json.loads(value.get("S", ""))
            except json.JSONDecodeError:
                continue
            if isinstance(run, dict):
                runs.append(run)
        return runs

    def load_verdicts(self, verdict_key: str) -> VerdictCounts:
        """The consumer kit's verdicts reported under ``verdict_key`` (zeros while there are none)."""
        item = self._get_item(verdict_record_key(verdict_key)) or {}
        counts = {
            name: int(item[name]["N"]) if name in item else 0 for name in ("ok", "transient", "terminal")
        }
        return VerdictCounts(**counts)

    def _get_item(self, key: str) -> dict[str, Any] | None:
        """One item, read consistently; None when there is none."""
        response = self._call(
            "GetItem",
            self._client.get_item,
            TableName=self.table_name,
            Key={"pk": {"S": key}},
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _get_items(self, keys: Sequence[str]) -> list[dict[str, Any]]:
        """Consistent BatchGetItem of these keys, retrying unprocessed ones; expired items left out."""
        now = int(self._clock())
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
                for item in response.get("Responses", {}).get(self.table_name, []):
                    # TTL deletion lags by up to days; an expired record must not count.
                    if "expires_at" not in item or int(item["expires_at"]["N"]) > now:
                        found.append(item)
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
                self._pause(0.05)
            else:
                raise AwsCallError("DynamoDB BatchGetItem left keys unprocessed after retries")
        return found

    def save_records(self, records: Sequence[MessageRecord]) -> None:
        """Write message records with BatchWriteItem, retrying unprocessed items (none: no call)."""
        now = int(self._clock())
        items = [{"PutRequest": {"Item": _record_item(record, now, self._ttl_seconds)}} for record in records]
        self._write_batches(items)

    def forget_marks(self, identities: Iterable[str]) -> None:
        """Delete the message records and the consumer kit's failure records of these identities
        (BatchWriteItem, unprocessed ones retried; none: no call): a message with no room for a
        mark then starts again at count 0, with no failure from before (which could park it)."""
        wanted = sorted(set(identities))
        keys = [key for i in wanted for key in (_message_key(i), failure_record_key(i))]
        self._write_batches([{"DeleteRequest": {"Key": {"pk": {"S": key}}}} for key in keys])

    def _write_batches(self, items: Sequence[Mapping[str, Any]]) -> None:
        for start in range(0, len(items), BATCH_WRITE_LIMIT):
            request: dict[str, Any] = {self.table_name: items[start : start + BATCH_WRITE_LIMIT]}
            for _ in range(MAX_UNPROCESSED_ROUNDS):
                response = self._call("BatchWriteItem", self._client.batch_write_item, RequestItems=request)
                request = response.get("UnprocessedItems") or {}
                if not request:
                    break
                self._pause(0.05)
            else:
                raise AwsCallError("DynamoDB BatchWriteItem left items unprocessed after retries")

    def _call(self, operation: str, call: Any, **kwargs: Any) -> Any:
        try:
            return call(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise AwsCallError(f"DynamoDB {operation} on {self.table_name} failed: {exc}") from exc


def continuation_record_key(key: str) -> str:
    return f"CONTINUATION#{key}"


def _message_key(identity: str) -> str:
    return f"MSG#{identity}"


def _numbers(values: Iterable[int]) -> dict[str, Any]:
    return {"L": [{"N": str(value)} for value in values]}


def _breaker_item(key: str, breaker: Breaker) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pk": {"S": key},
        "state": {"S": breaker.state.value},
        "failures": {"N": str(breaker.failures)},
        "successes": {"N": str(breaker.successes)},
        "changed_at": {"N": str(breaker.changed_at)},
        "version": {"N": str(breaker.version)},
    }
    if breaker.canary is not None:
        item["canary_ids"] = {"L": [{"S": identity} for identity in breaker.canary.identities]}
        item["canary_verdict_at"] = {"N": str(breaker.canary.verdict_at)}
        item["canary_groups"] = {"L": [{"S": group} for group in breaker.canary.groups]}
        item["canary_sent_at"] = {"N": str(breaker.canary.sent_at)}
    return item


def _breaker_from_item(item: Mapping[str, Any]) -> Breaker:
    canary = None
    if "canary_ids" in item:
        canary = Canary(
            identities=tuple(value["S"] for value in item["canary_ids"]["L"]),
            verdict_at=int(item["canary_verdict_at"]["N"]),
            groups=tuple(value["S"] for value in item.get("canary_groups", {"L": []})["L"]),
            sent_at=int(item.get("canary_sent_at", {"N": "0"})["N"]),
        )
    return Breaker(
        state=State(item["state"]["S"]),
        failures=int(item["failures"]["N"]),
        successes=int(item["successes"]["N"]),
        changed_at=int(item["changed_at"]["N"]),
        version=int(item["version"]["N"]),
        canary=canary,
    )


def _group_mark_item(mark: GroupMark) -> dict[str, Any]:
    return {
        "pk": {"S": mark.key},
        "fingerprint": {"S": mark.fingerprint},
        "reason": {"S": mark.reason},
        "by": {"S": mark.by},
        "at": {"N": str(mark.at)},
    }


def _group_mark_from_item(item: Mapping[str, Any]) -> GroupMark:
    """A mark from its record; one put by hand may hold the key alone (fingerprint from the key)."""
    key = item["pk"]["S"]
    action = GroupAction.PARK if key.startswith(PARK_RECORD_PREFIX) else GroupAction.RETRY
    fingerprint = key.split("#", 1)[1]
    return GroupMark(
        fingerprint=fingerprint,
        action=action,
        reason=item.get("reason", {}).get("S", ""),
        by=item.get("by", {}).get("S", ""),
        at=int(float(item.get("at", {}).get("N", "0"))),
    )


def _record_item(record: MessageRecord, now: int, ttl_seconds: int) -> dict[str, Any]:
    mark = record.mark
    item: dict[str, Any] = {
        "pk": {"S": _message_key(mark.identity)},
        "identity": {"S": mark.identity},
        "redrive_count": {"N": str(mark.count)},
        "first_failed_at": {"N": str(mark.first_failed_at)},
        "redriven_at": _numbers(mark.redriven_at),
        "status": {"S": str(record.status)},
        "source_queue": {"S": record.source_queue},
        "updated_at": {"N": str(now)},
        "expires_at": {"N": str(now + ttl_seconds)},
    }
    if record.reason is not None:
        item["reason"] = {"S": json.dumps(record.reason.to_dict())}
        if record.reason.failure is not None:
            item["failure"] = {"S": json.dumps(record.reason.failure.to_dict())}
    return item


def _mark_from_item(item: Mapping[str, Any]) -> Mark:
    return Mark(
        identity=item["identity"]["S"],
        count=int(item["redrive_count"]["N"]),
        first_failed_at=int(item["first_failed_at"]["N"]),
        redriven_at=tuple(int(value["N"]) for value in item["redriven_at"]["L"]),
    )
