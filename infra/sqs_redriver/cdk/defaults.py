"""The project's secure defaults for queues, tables and buckets, in one place."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct


def secure_queue(
    scope: Construct, construct_id: str, *, encryption_key: kms.IKey | None = None, **props: Any
) -> sqs.Queue:
    """A queue that refuses requests not made over TLS, encrypted with ``encryption_key`` (SSE-KMS)
    when given, SQS-managed encryption otherwise; ``props``: further ``sqs.Queue`` props."""
    return sqs.Queue(
        scope,
        construct_id,
        enforce_ssl=True,
        encryption=sqs.QueueEncryption.KMS if encryption_key is not None else sqs.QueueEncryption.SQS_MANAGED,
        encryption_master_key=encryption_key,
        **props,
    )


def secure_table(
    scope: Construct,
    construct_id: str,
    *,
    partition_key: str,
    ttl_attribute: str,
    removal_policy: RemovalPolicy,
    encryption_key: kms.IKey | None = None,
) -> dynamodb.Table:
    """An on-demand table with a string partition key, TTL, point-in-time recovery and encryption
    (with ``encryption_key`` when given, an AWS-managed key otherwise)."""
    return dynamodb.Table(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        time_to_live_attribute=ttl_attribute,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED
        if encryption_key is not None
        else dynamodb.TableEncryption.AWS_MANAGED,
        encryption_key=encryption_key,
        removal_policy=removal_policy,
    )


def secure_bucket(
    scope: Construct,
    construct_id: str,
    *,
    expiration: Duration | None,
    removal_policy: RemovalPolicy,
    encryption_key: kms.IKey | None = None,
) -> s3.Bucket:
    """A private bucket, TLS only, encrypted with ``encryption_key`` (SSE-KMS with an S3 Bucket Key,
    one KMS call per bucket key rather than per object) when given, S3-managed keys otherwise;
    objects deleted ``expiration`` after they were written (None: kept)."""
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.KMS if encryption_key is not None else s3.BucketEncryption.S3_MANAGED,
        encryption_key=encryption_key,
        bucket_key_enabled=True if encryption_key is not None else None,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        lifecycle_rules=[s3.LifecycleRule(expiration=expiration)] if expiration else None,
        removal_policy=removal_policy,
    )
