"""One log line per decision about a message, with the fields an operator searches by."""

from __future__ import annotations

from typing import Any

from sqs_redriver.runtime.model.tracked import Tracked


def log_decision(logger: Any, decision: str, tracked: Tracked, **fields: Any) -> None:
    """One log line per decision, with the message's identity, MessageId and count."""
    logger.info(
        decision,
        extra={
            "identity": tracked.mark.identity,
            "message_id": tracked.message_id,
            "redrive_count": tracked.mark.count,
            **fields,
        },
    )
