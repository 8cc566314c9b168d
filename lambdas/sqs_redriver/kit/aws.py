"""What the kit writes to AWS, and the only module of the kit that calls it: the DLQ send, the
failure record, and the verdicts of re-driven messages. Clients are created on first use (never at
import: cold start), or injected.

Verdicts are tallied during a batch (``VerdictBuffer``) and written once after it, one UpdateItem
per verdict key. Only the first delivery of a re-drive counts (ApproximateReceiveCount 1): one
verdict per re-drive, whatever SQS does with the message afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.kit.errors import KitAwsError
from sqs_redriver.kit.records import InboundRecord
from sqs_redriver.protocol.failure import VERDICT_RECORD_TTL_SECONDS, ConsumerVerdict, Failure, FailureKind
from sqs_redriver.protocol.keys import RecordKind, kit_record_key

if TYPE_CHECKING:
    from botocore.config import Config
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient


CONDITION_FAILED = "ConditionalCheckFailedException"


def _client_config() -> Config:
    from botocore.config import Config

    # The consumer's invocation waits on these calls: standard retries, short timeouts.
    return Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=2, read_timeout=5)


class KitAws:
    """SQS and DynamoDB calls of the kit, each turning any AWS error into KitAwsError."""

    def __init__(
        self,
        table_name: str,
        *,
        dlq_url: str,
        sqs: SQSClient | Any = None,
        dynamodb: DynamoDBClient | Any = None,
    ) -> None:
        self.table_name = table_name
        # The re-driver this kit reports to: its records' keys are scoped to its DLQ's URL.
        self.dlq_url = dlq_url
        self._sqs = sqs
        self._dynamodb = dynamodb

    @property
    def sqs(self) -> SQSClient | Any:
        if self._sqs is None:
            import boto3

            self._sqs = boto3.client("sqs", config=_client_config())
        return self._sqs

    @property
    def dynamodb(self) -> DynamoDBClient | Any:
        if self._dynamodb is None:
            import boto3

            self._dynamodb = boto3.client("dynamodb", config=_client_config())
        return self._dynamodb

    def send_message(self, request: dict[str, Any]) -> str:
        """SendMessage; returns the new MessageId."""
        response = _call("SendMessage", lambda: self.sqs.send_message(**request))
        return str(response.get("MessageId", ""))

    def put_failure(self, identity: str, failure: Failure, now: int) -> None:
        """The failure of a message with no room for a mark, under its content identity (in the
        scope of the re-driver's DLQ, as every record of the kit).

        A conditional UpdateItem of the failure's own attributes: it replaces an older failure of
        the same identity, never a newer one (a slow consumer's late write loses), and cannot
        overwrite the record wholesale (the kit's IAM grant has no PutItem).
        """
        try:
            self.dynamodb.update_item(
                TableName=self.table_name,
                Key={"pk": {"S": kit_record_key(RecordKind.FAILURE, self.dlq_url, identity)}},
                UpdateExpression="SET failure = :failure, failed_at = :at, expires_at = :ttl",
                ConditionExpression=(
                    "attribute_not_exists(pk) OR attribute_not_exists(failed_at) OR failed_at <= :at"
                ),
                ExpressionAttributeValues={
                    ":failure": {"S": json.dumps(failure.to_dict(), separators=(",", ":"), sort_keys=True)},
                    ":at": {"N": str(failure.at)},
                    ":ttl": {"N": str(now + VERDICT_RECORD_TTL_SECONDS)},
                },
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == CONDITION_FAILED:
                return  # a newer failure of this message is recorded already: it stands
            raise KitAwsError(f"UpdateItem (failure record) failed: {exc}") from exc
        except BotoCoreError as exc:
            raise KitAwsError(f"UpdateItem (failure record) failed: {exc}") from exc

    def add_verdicts(self, verdict_key: str, tally: VerdictTally, now: int) -> None:
        """One conditional UpdateItem adding the tally's counters (and fingerprints) to the verdict
        record; a record already past its expiry is not revived (KitAwsError: the run is long over)."""
        adds = [f"{name} :{name}" for name in tally.counts()]
        values: dict[str, Any] = {f":{name}": {"N": str(n)} for name, n in tally.counts().items()}
        if tally.fingerprints:
            adds.append("fingerprints :fingerprints")
            values[":fingerprints"] = {"SS": sorted(tally.fingerprints)}
        values[":ttl"] = {"N": str(now + VERDICT_RECORD_TTL_SECONDS)}
        values[":now"] = {"N": str(now)}
        expression = (f"ADD {', '.join(adds)} " if adds else "") + "SET expires_at = :ttl"
        _call(
            "UpdateItem",
            lambda: self.dynamodb.update_item(
                TableName=self.table_name,
                Key={"pk": {"S": kit_record_key(RecordKind.VERDICTS, self.dlq_url, verdict_key)}},
                UpdateExpression=expression,
                ConditionExpression="attribute_not_exists(pk) OR expires_at > :now",
                ExpressionAttributeValues=values,
            ),
        )


def _call(operation: str, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except (ClientError, BotoCoreError) as exc:
        raise KitAwsError(f"{operation} failed: {exc}") from exc


@dataclass
class VerdictTally:
    """The verdicts of one verdict key (one run's re-drives) in this batch."""

    ok: int = 0
    transient: int = 0
    terminal: int = 0
    fingerprints: set[str] = field(default_factory=set)

    def add(self, verdict: ConsumerVerdict, fingerprint: str | None = None) -> None:
        setattr(self, verdict.value, getattr(self, verdict.value) + 1)
        if fingerprint:
            self.fingerprints.add(fingerprint)

    def counts(self) -> dict[str, int]:
        """The non-zero counters, by the attribute name they are added to."""
        values = {"ok": self.ok, "transient": self.transient, "terminal": self.terminal}
        return {name: value for name, value in values.items() if value}


@dataclass
class VerdictBuffer:
    """Verdicts by verdict key, until they are flushed."""

    tallies: dict[str, VerdictTally] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tallies)

    def __contains__(self, verdict_key: object) -> bool:
        return verdict_key in self.tallies

    def succeeded(self, record: InboundRecord) -> None:
        """Count an OK verdict if ``record`` is the first delivery of a re-drive asking for one."""
        if _counts(record):
            self._tally(record).add(ConsumerVerdict.OK)

    def failed(self, record: InboundRecord, kind: FailureKind, fingerprint: str) -> None:
        """Count a TRANSIENT or TERMINAL verdict (with its fingerprint), as ``succeeded``."""
        if _counts(record):
            self._tally(record).add(ConsumerVerdict(kind.value), fingerprint)

    def alone(
        self, record: InboundRecord, kind: FailureKind, fingerprint: str
    ) -> tuple[str, VerdictTally] | None:
        """A failure's verdict in a tally of its own, not buffered, to report at once (the verdict
        key and the tally); None if ``record`` asks for no verdict (as ``failed``)."""
        if not _counts(record):
            return None
        assert record.verdict_key is not None
        tally = VerdictTally()
        tally.add(ConsumerVerdict(kind.value), fingerprint)
        return record.verdict_key, tally

    def take(self) -> dict[str, VerdictTally]:
        """Everything buffered, leaving the buffer empty."""
        tallies, self.tallies = self.tallies, {}
        return tallies

    def _tally(self, record: InboundRecord) -> VerdictTally:
        assert record.verdict_key is not None
        return self.tallies.setdefault(record.verdict_key, VerdictTally())


def _counts(record: InboundRecord) -> bool:
    return record.verdict_key is not None and record.receive_count == 1
