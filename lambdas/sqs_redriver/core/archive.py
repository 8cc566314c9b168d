"""The archive of parked messages: one S3 object per parking."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.core.errors import AwsCallError


class S3Archive:
    """An S3 bucket (the ``Archive`` port); the bucket's default encryption applies."""

    def __init__(self, bucket: str, client: Any) -> None:
        self.bucket = bucket
        self._client = client

    def put(self, key: str, document: bytes) -> None:
        """PutObject of one JSON document."""
        try:
            self._client.put_object(
                Bucket=self.bucket, Key=key, Body=document, ContentType="application/json"
            )
        except (ClientError, BotoCoreError) as exc:
            raise AwsCallError(f"S3 PutObject s3://{self.bucket}/{key} failed: {exc}") from exc
