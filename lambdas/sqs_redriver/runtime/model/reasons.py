"""Why a message is parked, as a typed value; the parking lot and the table get its JSON form."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqs_redriver.protocol.failure import Failure


class ParkCause(StrEnum):
    OVER_LIMIT = "over_limit"  # it came back MAX_REDRIVE_COUNT times
    UNKNOWN_SOURCE = "unknown_source"  # SQS names a source queue that is not configured
    SOURCE_REJECTED = "source_rejected"  # the source queue refuses it for good (a sender fault)
    TERMINAL = "terminal"  # the consumer kit classified its failure as terminal
    EXPIRING = "expiring"  # the DLQ's retention would delete it soon (decide/retention.py)
    OPERATOR = "operator"  # an operator parked its failure group (a PARK#<fingerprint> record)
    SUSPECT = "suspect"  # it kept failing while the consumer processed others (decide/suspicion.py)


@dataclass(frozen=True)
class ParkReason:
    cause: ParkCause
    why: str
    redrive_count: int
    first_failed_at: int
    last_failed_at: int
    source_queue: str
    dlq_message_id: str
    # The consumer's last failure, when the consumer kit reported it: the mark carries it as
    # ``err``, the table record of a message without a mark as ``failure``.
    failure: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``parked`` object of the mark: the fields operators read."""
        return {
            "cause": self.cause.value,
            "why": self.why,
            "redrive_count": self.redrive_count,
            "first_failed_at": self.first_failed_at,
            "last_failed_at": self.last_failed_at,
            "source_queue": self.source_queue,
            "dlq_message_id": self.dlq_message_id,
        }
