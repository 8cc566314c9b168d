"""The one pending-continuation slot of a re-driver (``CONTINUATION#<DLQ URL>``): the
``ContinuationStore`` port."""

from __future__ import annotations

from sqs_redriver.protocol.keys import continuation_record_key
from sqs_redriver.protocol.limits import MAX_CLOCK_SKEW_SECONDS
from sqs_redriver.runtime.adapters.dynamo_table import DynamoTable
from sqs_redriver.runtime.adapters.records.fields import CorruptRecord
from sqs_redriver.runtime.adapters.records.run_state import check_continuation, continuation_item

CONTINUATION_TAKEN_OVER = "treated as absent: overwritten by this run's continuation"


class ContinuationRecords(DynamoTable):
    """The continuation slot, offered and taken with conditional writes."""

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
