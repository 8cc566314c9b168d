"""The one place a Redriver is composed from settings and clients.

The handler, the tests, the bench and the demo all build their re-driver here, so what runs in
Lambda and what is tested are put together the same way.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

from redriver.act.ratelimit import TokenBucket
from redriver.adapters.clients import AwsClients
from redriver.adapters.sqs_queue import SqsQueue
from redriver.adapters.state_table import StateTable
from redriver.run.runner import Redriver
from redriver.settings import Settings

SECONDS_PER_DAY = 86_400


def compose_redriver(
    settings: Settings,
    clients: AwsClients,
    *,
    logger: logging.Logger | Any = None,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
    pause: Callable[[float], None] = time.sleep,
    limiter: TokenBucket | None = None,
) -> Redriver:
    """A Redriver over ``clients``; ``clock``, ``pause`` and ``limiter`` let tests move time themselves
    (the default limiter runs at MAX_REDRIVES_PER_SECOND on the real clock)."""
    sqs = clients.sqs
    return Redriver(
        settings,
        dlq=SqsQueue(settings.dlq_url, sqs),
        sources=[SqsQueue(url, sqs) for url in settings.source_queue_urls],
        parking_lot=SqsQueue(settings.parking_lot_url, sqs),
        state=StateTable(
            settings.table_name,
            clients.dynamodb,
            ttl_seconds=settings.state_ttl_days * SECONDS_PER_DAY,
            clock=clock,
            pause=pause,
        ),
        logger=logger or logging.getLogger("redriver"),
        clock=clock,
        rng=rng or random.Random(),
        limiter=limiter,
    )
