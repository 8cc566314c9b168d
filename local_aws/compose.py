"""A re-driver composed for local use, through `sqs_redriver.runtime.wiring.compose_redriver` (the one place a
Redriver is composed, as in Lambda), with what tests and the bench choose: clients, clock, seed."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

from sqs_redriver.core.clients import AwsClients
from sqs_redriver.core.transfer import TokenBucket
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.settings import Settings
from sqs_redriver.runtime.wiring import compose_redriver


def local_redriver(
    settings: Settings,
    *,
    sqs: Any,
    dynamodb: Any,
    s3: Any = None,
    cloudwatch: Any = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    seed: int = 7,
    logger_name: str = "redriver-local",
    limiter: TokenBucket | None = None,
    delivery: Callable[[str, str], Any] | None = None,
) -> Redriver:
    """A Redriver over these clients (real, moto's, or proxies of them; ``s3`` when the settings
    name an archive bucket; ``cloudwatch`` to judge consumers by their queues' metrics, read only
    when ``queue_metrics`` is on; ``delivery``, a target's client by service and region, for a DLQ of another
    kind), its jitter drawn from a
    ``seed``ed generator so runs repeat; ``clock``, ``sleep`` and ``limiter`` let a test move time
    itself."""
    return compose_redriver(
        settings,
        AwsClients(sqs=sqs, dynamodb=dynamodb, s3=s3, cloudwatch=cloudwatch, delivery=delivery),
        logger=logging.getLogger(logger_name),
        clock=clock,
        rng=random.Random(seed),
        sleep=sleep,
        limiter=limiter,
    )
