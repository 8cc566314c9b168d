"""The DynamoDB state table: the breaker records, one record per re-driven message, and the
records the operator's tool reads and writes (pause, failure groups, run history).

Every item read is parsed once by adapters/records/; a corrupt one is reported (a log line naming
its key, the CorruptRecords metric) and meets the fixed fate its kind has here (docs/decisions.md).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.protocol.keys import continuation_record_key, verdict_record_key
from sqs_redriver.protocol.message_limits import MAX_CLOCK_SKEW_SECONDS
from sqs_redriver.runtime.adapters.message_records import MessageRecords
from sqs_redriver.runtime.adapters.records.breaker import breaker_from_item, breaker_item, stored_version
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord
from sqs_redriver.runtime.adapters.records.operator import (
    UNREADABLE_PAUSE,
    RunHistory,
    pause_from_item,
    pause_item,
    run_line,
    runs_from_item,
    runs_item,
)
from sqs_redriver.runtime.adapters.records.run_state import (
    check_continuation,
    continuation_item,
    sweep_due_from_item,
    sweep_item,
    verdicts_from_item,
)
from sqs_redriver.runtime.decide.breaker import Breaker
from sqs_redriver.runtime.model.history import RUN_HISTORY_LENGTH
from sqs_redriver.runtime.model.pause import Pause

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BREAKER_READ_AS_CLOSED = "read as CLOSED; its next transition overwrites it, guarded by what it holds"
CONTINUATION_TAKEN_OVER = "treated as absent: overwritten by this run's continuation"
SWEEP_DUE = "treated as absent: the retention sweep is due now"
PAUSE_HONOURED = "read as a pause (only an operator writes one)"
NO_VERDICTS = "read as no verdicts"
EMPTY_HISTORY = "read as an empty history; the next run's summary replaces it"
ENTRY_SKIPPED = "entry skipped; the next run's summary drops it"
# A stored version attribute that is not a valid one, as it was read (None: there was none).
_ABSENT: dict[str, Any] | None = None


class StateTable(MessageRecords):
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
        metrics: Any = None,
    ) -> None:
        options = {"clock": clock, "pause": pause, "logger": logger, "metrics": metrics}
        super().__init__(table_name, client, ttl_seconds=ttl_seconds, **options)
        # Breakers read from a record whose version was not valid: the raw version attribute, the
        # guard of the write that overwrites the record (an absent one is guarded as absent).
        self._unversioned: dict[str, dict[str, Any] | None] = {}
        self._lock = threading.Lock()

    # -- breaker -------------------------------------------------------------------------------

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

    # -- continuation --------------------------------------------------------------------------

    def offer_continuation(self, key: str, token: str, *, stale_after: int) -> bool:
        """Take the one pending-continuation slot of ``key`` for ``token``; False when another
        run's continuation holds it and is not yet ``stale_after`` seconds old (lost, then). A
        corrupt slot (no token, an offer time missing, mistyped or from the future) is taken."""
        now = self._now()
        written = self._write_if(
            "PutItem (continuation)",
            self._client.put_item,
            Item=continuation_item(key, token, now=now, stale_after=stale_after),
            ConditionExpression=(
                "attribute_not_exists(pk) OR offered_at < :stale OR offered_at > :future"
                " OR NOT attribute_type(offered_at, :number) OR NOT attribute_type(#token, :string)"
            ),
            ExpressionAttributeNames={"#token": "token"},
            ExpressionAttributeValues={
                ":stale": {"N": str(now - stale_after)},
                ":future": {"N": str(now + MAX_CLOCK_SKEW_SECONDS)},
                ":number": {"S": "N"},
                ":string": {"S": "S"},
            },
            ReturnValues="ALL_OLD",
        )
        if written is None:
            return False
        if written.get("Attributes"):
            try:
                check_continuation(written["Attributes"], now=now)
            except CorruptRecord as corrupt:
                self._report(corrupt, CONTINUATION_TAKEN_OVER)
        return True

    def take_continuation(self, key: str, token: str) -> bool:
        """Free the slot if ``token`` still holds it; False for a continuation already taken."""
        return (
            self._write_if(
                "DeleteItem (continuation)",
                self._client.delete_item,
                Key={"pk": {"S": continuation_record_key(key)}},
                ConditionExpression="#token = :token",
                ExpressionAttributeNames={"#token": "token"},
                ExpressionAttributeValues={":token": {"S": token}},
            )
            is not None
        )

    # -- retention sweep -------------------------------------------------------------------------

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

    # -- the operator's pause -------------------------------------------------------------------

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

    # -- run history and verdicts ----------------------------------------------------------------

    def record_run(self, key: str, summary: Mapping[str, object], keep: int = RUN_HISTORY_LENGTH) -> None:
        """Put a run's summary first in the history item ``key`` and keep the ``keep`` newest
        (unreadable entries are dropped).

        GetItem, then PutItem, unconditional: runs of one re-driver never overlap (reserved
        concurrency 1), and an update lost to a rare overlap loses one line of history, nothing more.
        """
        lines = self._history(key).lines
        self._put_item(runs_item(key, [run_line(summary), *lines][: max(keep, 1)]))

    def load_runs(self, key: str) -> list[dict[str, Any]]:
        """The recorded run summaries, newest first (an entry that is not a JSON object is skipped)."""
        return self._history(key).summaries

    def _history(self, key: str) -> RunHistory:
        item = self._get_item(key)
        if not item:
            return RunHistory()
        try:
            history = runs_from_item(item)
        except CorruptRecord as corrupt:
            self._report(corrupt, EMPTY_HISTORY)
            return RunHistory()
        for skipped in history.skipped:
            self._report(skipped, ENTRY_SKIPPED)
        return history

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
