"""The error every adapter of the core (SQS, the state table, S3) raises in place of botocore's when
an AWS call fails as a whole: ``AwsCallError``, which the runs and the operator's tool catch alike.
A state record that fails parsing is the table's own ``CorruptRecord`` (core/table.py)."""

from __future__ import annotations


class AwsCallError(RuntimeError):
    """An AWS call failed as a whole (after botocore's own retries)."""
