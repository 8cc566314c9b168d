"""Customer-managed KMS keys: what the construct encrypts with which key, and who is granted it,
for what, through which service (kms:ViaService)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Match, Template

from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import SettingsError
from tests.support.stacks import (
    ACCOUNT,
    REGION,
    app_with_nag,
    assert_nag_clean,
    dead_letter_queue,
    nag_clean_consumer,
    nag_report,
    source_queue,
)
from tests.support.templates import (
    arn_of,
    as_list,
    key_actions,
    key_uses,
    properties,
    role_statements,
    statements_on,
    via,
)

DLQ_KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
SOURCE_KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/2234abcd-12ab-34cd-56ef-1234567890ab"
OTHER_KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/3234abcd-12ab-34cd-56ef-1234567890ab"
# What sending to a KMS-encrypted queue uses of its key; what item access to a KMS-encrypted table does.
SEND_KEY_ACTIONS = {"kms:Decrypt", "kms:GenerateDataKey"}
TABLE_KEY_ACTIONS = {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"}
ARCHIVE_PUT_KEY_ACTIONS = {"kms:GenerateDataKey"}  # an SSE-KMS PutObject
# The re-drive function's use of the key of everything it touches: the DLQ and the parking lot
# through SQS, the table through DynamoDB, the archive through S3.
REDRIVER_KEY_USES = {"sqs": SEND_KEY_ACTIONS, "dynamodb": TABLE_KEY_ACTIONS, "s3": ARCHIVE_PUT_KEY_ACTIONS}


@dataclass
class Built:
    stack: cdk.Stack
    template: Template
    redriver: SqsRedriver
    consumer: lambda_.Function
    dlq_key: kms.Key
    data_key: kms.Key | None

    def statements(self, function: lambda_.Function) -> list[dict[str, Any]]:
        return role_statements(self.template, properties(self.template, function))


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Built], dict[str, Any]]:
    """One app, synthesized once with the nag packs: a KMS DLQ alone ("lent"), a KMS DLQ with an
    own encryption_key ("own"), and queues imported with their keys ("imported"); and its report."""
    app = app_with_nag(tmp_path_factory.mktemp("cdk.out"))
    result: dict[str, tuple[cdk.Stack, SqsRedriver, lambda_.Function, Any, Any]] = {}

    stack = cdk.Stack(app, "Lent")
    dlq_key = kms.Key(stack, "DlqKey", enable_key_rotation=True)
    dlq = dead_letter_queue(stack, dlq_key)
    redriver = SqsRedriver(stack, "Redriver", source_queue=source_queue(stack, dlq), dead_letter_queue=dlq)
    function = nag_clean_consumer(stack)
    redriver.grant_consumer(function)
    result["lent"] = (stack, redriver, function, dlq_key, None)

    stack = cdk.Stack(app, "Own")
    dlq_key = kms.Key(stack, "DlqKey", enable_key_rotation=True)
    data_key = kms.Key(stack, "DataKey", enable_key_rotation=True)
    dlq = dead_letter_queue(stack, dlq_key)
    redriver = SqsRedriver(
        stack,
        "Redriver",
        source_queue=source_queue(stack, dlq),
        dead_letter_queue=dlq,
        encryption_key=data_key,
    )
    function = nag_clean_consumer(stack)
    redriver.grant_consumer(function)
    result["own"] = (stack, redriver, function, dlq_key, data_key)

    stack = cdk.Stack(app, "Imported", env=cdk.Environment(account=ACCOUNT, region=REGION))
    redriver = SqsRedriver.from_queue_arns(
        stack,
        "Redriver",
        source_queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:payments",
        dead_letter_queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:payments-dlq",
        other_source_queue_arns=[f"arn:aws:sqs:{REGION}:{ACCOUNT}:refunds"],
        source_queue_key_arn=SOURCE_KEY_ARN,
        dead_letter_queue_key_arn=DLQ_KEY_ARN,
        other_source_queue_key_arns=[OTHER_KEY_ARN],
    )
    function = nag_clean_consumer(stack)
    redriver.grant_consumer(function, max_receive_count=5)
    result["imported"] = (stack, redriver, function, None, None)

    report = nag_report(app)
    built = {
        name: Built(stack, Template.from_stack(stack), redriver, function, dlq_key, data_key)
        for name, (stack, redriver, function, dlq_key, data_key) in result.items()
    }
    return built, report


@pytest.fixture(scope="module")
def built(synthesized: tuple[dict[str, Built], dict[str, Any]]) -> dict[str, Built]:
    return synthesized[0]


@pytest.fixture(scope="module")
def report(synthesized: tuple[dict[str, Built], dict[str, Any]]) -> dict[str, Any]:
    return synthesized[1]


# --- a DLQ with a customer-managed key lends it to what the construct creates -------------------


def test_the_parking_lot_of_a_kms_dlq_uses_the_dlqs_key_not_sqs_managed_encryption(
    built: dict[str, Built],
) -> None:
    lent = built["lent"]
    parking_lot = properties(lent.template, lent.redriver.parking_lot)

    assert parking_lot["KmsMasterKeyId"] == arn_of(lent.dlq_key)
    assert "SqsManagedSseEnabled" not in parking_lot
    assert lent.redriver.encryption_key is lent.dlq_key


def test_the_archive_and_table_of_a_kms_dlq_use_the_dlqs_key_too(built: dict[str, Built]) -> None:
    lent = built["lent"]
    assert lent.redriver.archive is not None

    bucket = properties(lent.template, lent.redriver.archive)
    table = properties(lent.template, lent.redriver.state_table)

    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {
            "BucketKeyEnabled": True,
            "ServerSideEncryptionByDefault": {
                "KMSMasterKeyID": arn_of(lent.dlq_key),
                "SSEAlgorithm": "aws:kms",
            },
        }
    ]
    assert table["SSESpecification"] == {
        "KMSMasterKeyId": arn_of(lent.dlq_key),
        "SSEEnabled": True,
        "SSEType": "KMS",
    }


def test_the_redrive_function_may_decrypt_the_dlq_and_encrypt_into_the_parking_lot_archive_and_table(
    built: dict[str, Built],
) -> None:
    lent = built["lent"]

    uses = key_uses(lent.statements(lent.redriver.function), arn_of(lent.dlq_key))

    assert uses == REDRIVER_KEY_USES  # no kms:ReEncrypt*, no wildcard, no use outside these services


# --- an own encryption_key ------------------------------------------------------------------------


def test_an_encryption_key_encrypts_the_parking_lot_archive_and_table_instead_of_the_dlqs(
    built: dict[str, Built],
) -> None:
    own = built["own"]
    assert own.data_key is not None and own.redriver.archive is not None
    resources = own.redriver.parking_lot, own.redriver.archive, own.redriver.state_table

    parking_lot, bucket, table = (properties(own.template, resource) for resource in resources)

    assert parking_lot["KmsMasterKeyId"] == arn_of(own.data_key)
    [rule] = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == arn_of(own.data_key)
    assert rule["BucketKeyEnabled"] is True
    assert table["SSESpecification"]["KMSMasterKeyId"] == arn_of(own.data_key)
    assert own.redriver.encryption_key is own.data_key


def test_with_an_encryption_key_the_function_gets_both_keys_for_what_it_does_with_each(
    built: dict[str, Built],
) -> None:
    own = built["own"]
    assert own.data_key is not None
    statements = own.statements(own.redriver.function)

    # the DLQ's key: only to read (consume) the DLQ; the data key: the lot, the table, the archive
    assert key_uses(statements, arn_of(own.dlq_key)) == {"sqs": {"kms:Decrypt"}}
    assert key_uses(statements, arn_of(own.data_key)) == REDRIVER_KEY_USES


def test_a_granted_consumer_gets_the_dlq_key_and_the_tables_key(built: dict[str, Built]) -> None:
    own = built["own"]
    assert own.data_key is not None
    statements = own.statements(own.consumer)

    # the DLQ's for its dead-lettering, the table's for its verdict and failure records
    assert key_uses(statements, arn_of(own.dlq_key)) == {"sqs": SEND_KEY_ACTIONS}
    assert key_uses(statements, arn_of(own.data_key)) == {"dynamodb": TABLE_KEY_ACTIONS}


# --- queues imported with their keys -------------------------------------------------------------


def test_imported_queues_keys_are_granted_with_the_queues(built: dict[str, Built]) -> None:
    imported = built["imported"]
    statements = imported.statements(imported.redriver.function)

    assert "kms:Decrypt" in key_actions(statements, DLQ_KEY_ARN)  # consume the DLQ
    assert key_uses(statements, SOURCE_KEY_ARN) == {"sqs": SEND_KEY_ACTIONS}  # re-drive to the source
    assert key_uses(statements, OTHER_KEY_ARN) == {"sqs": SEND_KEY_ACTIONS}  # and to the other source
    # through SQS in the key's own region (its ARN's): the only one where SQS can use it
    [source_key] = statements_on(statements, SOURCE_KEY_ARN)
    assert source_key["Condition"] == via("sqs", REGION)


def test_an_imported_dlqs_key_encrypts_the_parking_lot(built: dict[str, Built]) -> None:
    imported = built["imported"]

    assert properties(imported.template, imported.redriver.parking_lot)["KmsMasterKeyId"] == DLQ_KEY_ARN
    # and the function sends to it with that key
    assert SEND_KEY_ACTIONS <= key_actions(imported.statements(imported.redriver.function), DLQ_KEY_ARN)


def test_a_consumer_of_an_imported_kms_dlq_gets_its_key(built: dict[str, Built]) -> None:
    imported = built["imported"]
    statements = imported.statements(imported.consumer)

    # to send to the DLQ, and to write its records to the table that the DLQ's key encrypts
    assert key_uses(statements, DLQ_KEY_ARN) == {"sqs": SEND_KEY_ACTIONS, "dynamodb": TABLE_KEY_ACTIONS}
    assert statements_on(statements, SOURCE_KEY_ARN) == []  # it only sends to the DLQ


def test_other_source_key_arns_must_match_the_other_sources_one_to_one() -> None:
    stack = cdk.Stack(cdk.App(), "Mismatch")

    with pytest.raises(
        SettingsError, match=r"other_source_queue_key_arns must name one key ARN .* got 2 for 1"
    ):
        SqsRedriver.from_queue_arns(
            stack,
            "Redriver",
            source_queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:a",
            dead_letter_queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:a-dlq",
            other_source_queue_arns=[f"arn:aws:sqs:{REGION}:{ACCOUNT}:b"],
            other_source_queue_key_arns=[OTHER_KEY_ARN, SOURCE_KEY_ARN],
        )


def test_imported_queues_without_keys_grant_no_kms_and_keep_sqs_managed_encryption() -> None:
    stack = cdk.Stack(cdk.App(), "Plain", env=cdk.Environment(account=ACCOUNT, region=REGION))
    redriver = SqsRedriver.from_queue_arns(
        stack,
        "Redriver",
        source_queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:a",
        dead_letter_queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:a-dlq",
    )
    template = Template.from_stack(stack)

    statements = role_statements(template, properties(template, redriver.function))
    assert [s for s in statements if any(a.startswith("kms:") for a in as_list(s["Action"]))] == []
    assert properties(template, redriver.parking_lot)["SqsManagedSseEnabled"] is True
    assert redriver.encryption_key is None


def test_every_key_statement_names_the_one_service_it_is_used_through(built: dict[str, Built]) -> None:
    for name, one in built.items():
        statements = [
            statement
            for policy in one.template.find_resources("AWS::IAM::Policy").values()
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            if any(action.startswith("kms:") for action in as_list(statement["Action"]))
        ]

        assert statements, name
        for statement in statements:
            [(operator, condition)] = statement["Condition"].items()
            assert (operator, list(condition)) == ("StringEquals", ["kms:ViaService"]), statement


def test_the_archives_key_is_used_for_put_object_through_s3_only(built: dict[str, Built]) -> None:
    own = built["own"]
    assert own.data_key is not None
    put = {"Action": "kms:GenerateDataKey", "Condition": via("s3"), "Resource": arn_of(own.data_key)}

    own.template.has_resource_properties(
        "AWS::IAM::Policy",
        {"PolicyDocument": {"Statement": Match.array_with([Match.object_like(put)])}},
    )


# --- secure defaults -----------------------------------------------------------------------------


def test_cdk_nag_packs_find_nothing_unacknowledged_with_keys(report: dict[str, Any]) -> None:
    assert_nag_clean(report)
    suppressed = {v["ruleName"] for p in report["pluginReports"] for v in p["suppressedViolations"]}
    # every key grant names its actions: no wildcard of CDK's key grants is left to acknowledge
    assert (
        not {
            "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
            "AwsSolutions-IAM5[Action::kms:ReEncrypt*]",
        }
        & suppressed
    )
