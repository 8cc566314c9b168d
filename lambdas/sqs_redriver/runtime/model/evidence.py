"""What a breaker transition was based on (decide/breaker.py records it on the breaker)."""

from __future__ import annotations

from enum import StrEnum


class Evidence(StrEnum):
    """What moved the breaker last: shown by ``status`` and logged with every transition."""

    NONE = "none"  # never moved
    VERDICTS = "verdicts"  # the consumer kit's first-hand verdicts
    METRICS = "metrics"  # the source queue's CloudWatch metrics (decide/consumer_health.py)
    RETURNS = "returns"  # what came back to the DLQ, or a canary that did not
    ERRORS = "errors"  # AWS errors of the re-driver's own calls
    COOLDOWN = "cooldown"  # time: the cooldown of an OPEN breaker ended
    OPERATOR = "operator"  # the operator's tool
