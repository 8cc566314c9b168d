"""The project's secure defaults for queues, tables and buckets, in one place."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct


def secure_queue(scope: Construct, construct_id: str, **props: object) -> sqs.Queue:
    """A queue with SQS-managed encryption that refuses requests not made over TLS."""
    return sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        **props,  # type: ignore[arg-type]
    )


def secure_table(
    scope: Construct,
    construct_id: str,
    *,
    partition_key: str,
    ttl_attribute: str,
    removal_policy: RemovalPolicy,
) -> dynamodb.Table:
    """An on-demand table with a string partition key, TTL, point-in-time recovery and encryption."""
    return dynamodb.Table(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        time_to_live_attribute=ttl_attribute,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        removal_policy=removal_policy,
    )


def secure_bucket(
    scope: Construct,
    construct_id: str,
    *,
    expiration: Duration | None,
    removal_policy: RemovalPolicy,
) -> s3.Bucket:
    """A private bucket, S3-managed encryption, TLS only; objects deleted ``expiration`` after they
    were written (None: kept)."""
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        lifecycle_rules=[s3.LifecycleRule(expiration=expiration)] if expiration else None,
        removal_policy=removal_policy,
    )
