"""Who may use a customer-managed KMS key, and only through the service that encrypts with it.

Every principal here uses a key only as SQS (a queue's), DynamoDB (the state table's) or S3 (the
archive's) asks it to, so each key statement names its actions and carries ``kms:ViaService``: the
grant cannot be used by calling KMS directly (to decrypt other data sealed under the same key, or
to make data keys of one's own), nor through another service. The service's endpoint is in the
key's region, the only one where SQS, DynamoDB and S3 can use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

VIA_SERVICE = "kms:ViaService"


class KeyUser(StrEnum):
    """The services that use a key on a principal's behalf (their endpoint's first label)."""

    SQS = "sqs"
    DYNAMODB = "dynamodb"
    S3 = "s3"


def via_service(key: kms.IKey, service: KeyUser) -> str:
    """``service``'s endpoint in ``key``'s region, as ``kms:ViaService`` names it."""
    return f"{service.value}.{key.env.region}.{Stack.of(key).url_suffix}"


def key_statements(
    keys: Iterable[kms.IKey], actions: Sequence[str], service: KeyUser
) -> list[iam.PolicyStatement]:
    """``actions`` on ``keys`` through ``service`` only: one statement per region the keys are in."""
    by_endpoint: dict[str, list[str]] = {}
    for key in keys:
        arns = by_endpoint.setdefault(via_service(key, service), [])
        if key.key_arn not in arns:
            arns.append(key.key_arn)
    return [
        iam.PolicyStatement(
            actions=list(actions), resources=arns, conditions={"StringEquals": {VIA_SERVICE: endpoint}}
        )
        for endpoint, arns in by_endpoint.items()
    ]


def grant_key(grantee: iam.IGrantable, key: kms.IKey, actions: Sequence[str], service: KeyUser) -> None:
    """Let ``grantee`` use ``key`` for ``actions`` through ``service`` only (in its own policy: the
    key policy of a key made by the CDK already delegates to the account's IAM policies)."""
    for statement in key_statements([key], actions, service):
        grantee.grant_principal.add_to_principal_policy(statement)
