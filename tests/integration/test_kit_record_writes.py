"""The kit's state-table writes on moto: conditional UpdateItems of its own attributes, never a
PutItem, and records the re-driver reads as before."""

from __future__ import annotations

from collections import Counter

import pytest

from sqs_redriver.core.table import StateTable
from sqs_redriver.kit.aws import KitAws, VerdictTally
from sqs_redriver.kit.errors import KitAwsError
from sqs_redriver.protocol.failure import (
    FAILURE_RECORD_ATTRIBUTES,
    VERDICT_RECORD_ATTRIBUTES,
    VERDICT_RECORD_TTL_SECONDS,
    Failure,
    FailureKind,
)
from sqs_redriver.protocol.keys import RecordKind, kit_record_key
from tests.support.aws import Aws, stored_item
from tests.support.kit import NOW, Calls

IDENTITY = "content-identity-1"


def failure(at: int, message: str = "order o-1 is invalid") -> Failure:
    return Failure(
        kind=FailureKind.TERMINAL,
        error_class="orders.InvalidOrder",
        message=message,
        fingerprint="fp-1",
        at=at,
        attempt=1,
        source="arn:aws:sqs:eu-west-1:123456789012:orders",
    )


def kit_aws(aws: Aws) -> tuple[KitAws, Calls]:
    calls = Calls(aws.dynamodb)
    return KitAws(aws.table_name, dlq_url=aws.dlq_url, sqs=aws.sqs, dynamodb=calls), calls


def recorded_failure(aws: Aws) -> Failure:
    table = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60, clock=lambda: NOW, kit_scope=aws.dlq_url)
    recorded = table.load_marks([IDENTITY])[IDENTITY].failure
    assert recorded is not None
    return recorded


def test_a_failure_record_is_one_update_of_the_kits_own_attributes_read_by_the_redriver(aws: Aws) -> None:
    kit, calls = kit_aws(aws)

    kit.put_failure(IDENTITY, failure(NOW), NOW)

    record = stored_item(aws, kit_record_key(RecordKind.FAILURE, aws.dlq_url, IDENTITY))
    assert record is not None
    assert calls.counts == Counter({"update_item": 1})
    assert set(record) <= set(FAILURE_RECORD_ATTRIBUTES)
    assert (record["failed_at"], record["expires_at"]) == (
        {"N": str(NOW)},
        {"N": str(NOW + VERDICT_RECORD_TTL_SECONDS)},
    )
    assert recorded_failure(aws) == failure(NOW)


def test_a_newer_failure_replaces_an_older_one_and_a_late_older_one_is_ignored(aws: Aws) -> None:
    kit, _ = kit_aws(aws)

    kit.put_failure(IDENTITY, failure(NOW, "first"), NOW)
    kit.put_failure(IDENTITY, failure(NOW + 60, "second"), NOW + 60)
    kit.put_failure(IDENTITY, failure(NOW + 30, "late"), NOW + 30)  # no error: the newer one stands

    assert recorded_failure(aws).message == "second"


def test_a_failure_record_of_an_earlier_kit_without_its_time_is_replaced(aws: Aws) -> None:
    aws.dynamodb.put_item(
        TableName=aws.table_name,
        Item={"pk": {"S": kit_record_key(RecordKind.FAILURE, aws.dlq_url, IDENTITY)}, "failure": {"S": "{}"}},
    )
    kit, _ = kit_aws(aws)

    kit.put_failure(IDENTITY, failure(NOW), NOW)

    assert recorded_failure(aws) == failure(NOW)


def test_verdicts_are_one_update_of_the_kits_own_attributes(aws: Aws) -> None:
    kit, calls = kit_aws(aws)
    tally = VerdictTally(ok=2, terminal=1, fingerprints={"fp-1"})

    kit.add_verdicts("w-1", tally, NOW)
    kit.add_verdicts("w-1", tally, NOW + 10)

    record = stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1"))
    assert record is not None
    assert calls.counts == Counter({"update_item": 2})
    assert set(record) <= set(VERDICT_RECORD_ATTRIBUTES)
    assert (record["ok"], record["terminal"]) == ({"N": "4"}, {"N": "2"})


def test_verdicts_never_revive_an_expired_record(aws: Aws) -> None:
    kit, _ = kit_aws(aws)
    kit.add_verdicts("w-1", VerdictTally(ok=1), NOW)
    past_expiry = NOW + VERDICT_RECORD_TTL_SECONDS

    with pytest.raises(KitAwsError, match="ConditionalCheckFailed"):
        kit.add_verdicts("w-1", VerdictTally(ok=1), past_expiry)

    assert stored_item(aws, kit_record_key(RecordKind.VERDICTS, aws.dlq_url, "w-1"))["ok"] == {"N": "1"}  # type: ignore[index]


def test_a_failure_record_write_that_fails_otherwise_raises(aws: Aws) -> None:
    kit = KitAws("no-such-table", dlq_url=aws.dlq_url, sqs=aws.sqs, dynamodb=aws.dynamodb)

    with pytest.raises(KitAwsError, match="failure record"):
        kit.put_failure(IDENTITY, failure(NOW), NOW)
