"""Adapters: the only modules that call AWS. They turn ClientError into domain errors."""

from __future__ import annotations


class AwsCallError(RuntimeError):
    """An AWS call failed as a whole (after botocore's own retries)."""
