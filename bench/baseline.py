"""A faithful Python port of the published design's re-drive handler, defects included.

Per run: the breaker is read (and written) without conditions; 5 messages are received, without
their attributes; per message, a state GetItem keyed by MessageId, a SendMessage, an UpdateItem
and a DeleteMessage. It is here only as the benchmark's baseline: do not use it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

FAILURE_THRESHOLD = 3
SUCCESS_THRESHOLD = 2
OPEN_COOL_DOWN_MS = 60_000
MAX_REDRIVE_ATTEMPTS = 5
BASE_DELAY_SECONDS = 60
MAX_MESSAGES_PER_RUN = 5


class PublishedRedriver:
    def __init__(
        self,
        sqs: Any,
        dynamodb: Any,
        *,
        dlq_url: str,
        source_url: str,
        parking_lot_url: str,
        table_name: str,
        queue_name: str,
        wait_seconds: int = 5,
    ) -> None:
        self.sqs, self.dynamodb = sqs, dynamodb
        self.dlq_url, self.source_url, self.parking_lot_url = dlq_url, source_url, parking_lot_url
        self.table_name = table_name
        self.pk = f"CIRCUIT_BREAKER#{queue_name}"
        self.wait_seconds = wait_seconds

    # -- circuit breaker (read-modify-write, no conditions) -------------------------------------

    def _get_circuit_state(self) -> dict[str, Any]:
        item = self.dynamodb.get_item(TableName=self.table_name, Key={"PK": {"S": self.pk}}).get("Item")
        if item:
            return {
                "State": item["State"]["S"],
                "FailureCount": int(item["FailureCount"]["N"]),
                "SuccessCount": int(item["SuccessCount"]["N"]),
                "LastStateChangeTimestamp": item["LastStateChangeTimestamp"]["S"],
            }
        now = _now_iso()
        return {"State": "CLOSED", "FailureCount": 0, "SuccessCount": 0, "LastStateChangeTimestamp": now}

    def _update_state(self, state: str, failures: int, successes: int) -> None:
        now = _now_iso()
        self.dynamodb.update_item(
            TableName=self.table_name,
            Key={"PK": {"S": self.pk}},
            UpdateExpression="SET #s = :state, FailureCount = :fc, SuccessCount = :sc, "
            "LastStateChangeTimestamp = :ts, LastAttemptTimestamp = :la",
            ExpressionAttributeNames={"#s": "State"},
            ExpressionAttributeValues={
                ":state": {"S": state},
                ":fc": {"N": str(failures)},
                ":sc": {"N": str(successes)},
                ":ts": {"S": now},
                ":la": {"S": now},
            },
        )

    def _check_circuit(self) -> tuple[bool, bool]:
        state = self._get_circuit_state()
        if state["State"] == "CLOSED":
            return True, False
        if state["State"] == "OPEN":
            changed = datetime.fromisoformat(state["LastStateChangeTimestamp"]).timestamp() * 1000
            if time.time() * 1000 > changed + OPEN_COOL_DOWN_MS:
                self._update_state("HALF_OPEN", 0, 0)
                return True, True
            return False, False
        return True, True

    def _report_success(self) -> None:
        state = self._get_circuit_state()
        successes = state["SuccessCount"] + 1
        if state["State"] == "HALF_OPEN" and successes >= SUCCESS_THRESHOLD:
            self._update_state("CLOSED", 0, 0)
        else:
            self._update_state(state["State"], 0, successes)

    def _report_failure(self) -> None:
        state = self._get_circuit_state()
        failures = state["FailureCount"] + 1
        if state["State"] == "HALF_OPEN" or failures >= FAILURE_THRESHOLD:
            self._update_state("OPEN", 0, 0)
        else:
            self._update_state(state["State"], failures, 0)

    # -- the handler ---------------------------------------------------------------------------

    def handler(self) -> dict[str, Any]:
        allow, canary = self._check_circuit()
        if not allow:
            return {"statusCode": 200, "body": "Circuit breaker is open."}
        messages = self.sqs.receive_message(
            QueueUrl=self.dlq_url,
            MaxNumberOfMessages=1 if canary else MAX_MESSAGES_PER_RUN,
            WaitTimeSeconds=self.wait_seconds,
        ).get("Messages", [])
        if not messages:
            self._report_success()  # the published defect: an empty DLQ closes the circuit
            return {"statusCode": 200, "body": "DLQ empty."}
        failed = False
        for message in messages:
            try:
                self._redrive_one(message)
            except Exception:  # noqa: BLE001 - as published: any error leaves the message
                failed = True
        if failed:
            self._report_failure()
        else:
            self._report_success()
        return {"statusCode": 200, "body": f"Processed {len(messages)} messages."}

    def _redrive_one(self, message: dict[str, Any]) -> None:
        pk = f"MESSAGE#{message['MessageId']}"  # the published defect: a new id on every send
        item = self.dynamodb.get_item(TableName=self.table_name, Key={"PK": {"S": pk}}).get("Item")
        count = int(item["RedriveCount"]["N"]) if item else 0
        if count + 1 > MAX_REDRIVE_ATTEMPTS:
            self.sqs.send_message(QueueUrl=self.parking_lot_url, MessageBody=message["Body"])
        else:
            self.sqs.send_message(
                QueueUrl=self.source_url,
                MessageBody=message["Body"],
                DelaySeconds=min(BASE_DELAY_SECONDS * 2**count, 900),
            )
            self.dynamodb.update_item(
                TableName=self.table_name,
                Key={"PK": {"S": pk}},
                UpdateExpression="SET RedriveCount = :rc, LastRedriveTimestamp = :ts",
                ExpressionAttributeValues={":rc": {"N": str(count + 1)}, ":ts": {"S": _now_iso()}},
            )
        self.sqs.delete_message(QueueUrl=self.dlq_url, ReceiptHandle=message["ReceiptHandle"])


def _now_iso() -> str:
    return datetime.now(UTC).isoformat()
