"""The DynamoDB state table as a whole: every record kind's adapter (adapters/state/) over one
client and one report of corrupt records.

The re-drive function hands each part of a run only the kinds it uses (their ports are in
adapters/ports.py); the operator's tool and the tests use the table whole.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqs_redriver.runtime.adapters.state.breakers import BreakerRecords
from sqs_redriver.runtime.adapters.state.continuations import ContinuationRecords
from sqs_redriver.runtime.adapters.state.group_marks import GroupMarkRecords
from sqs_redriver.runtime.adapters.state.messages import MessageRecords
from sqs_redriver.runtime.adapters.state.pauses import PauseRecords
from sqs_redriver.runtime.adapters.state.run_history import RunHistoryRecords
from sqs_redriver.runtime.adapters.state.sweeps import SweepRecords
from sqs_redriver.runtime.adapters.state.verdicts import VerdictRecords

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class StateTable(
    BreakerRecords,
    MessageRecords,
    GroupMarkRecords,
    VerdictRecords,
    PauseRecords,
    RunHistoryRecords,
    SweepRecords,
    ContinuationRecords,
):
    """The state table: breakers, message and failure records, group marks, verdicts, the pause,
    the run history, the sweep's due time and the continuation slot. Message records expire
    ``ttl_seconds`` after they are written."""

    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient,
        *,
        ttl_seconds: int,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        logger: logging.Logger | Any = None,
        metrics: Any = None,
    ) -> None:
        options = {"clock": clock, "sleep": sleep, "logger": logger, "metrics": metrics}
        super().__init__(table_name, client, ttl_seconds=ttl_seconds, **options)
