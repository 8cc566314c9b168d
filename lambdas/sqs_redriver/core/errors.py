"""The core's errors: ``AwsCallError``, which every adapter of the core (SQS, the state table, S3)
raises in place of botocore's when an AWS call fails as a whole, and the runs and the operator's tool
catch alike; and ``CorruptRecord``, a state record that fails parsing (core/table.py meets it with
that record kind's fixed fate)."""

from __future__ import annotations

from sqs_redriver.protocol.keys import RecordKind, kind_of


class AwsCallError(RuntimeError):
    """An AWS call failed as a whole (after botocore's own retries)."""


class CorruptRecord(ValueError):
    """A state record that fails validation: its key, the field at fault, and the problem."""

    def __init__(self, key: str, field: str, problem: str) -> None:
        super().__init__(f"corrupt state record {key[:200]!r}: {field}: {problem}")
        self.key = key
        self.field = field
        self.problem = problem

    @property
    def kind(self) -> RecordKind | None:
        return kind_of(self.key)
