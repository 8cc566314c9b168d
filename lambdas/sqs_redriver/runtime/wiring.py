"""The one place a Redriver is composed from settings and clients.

The handler, the tests, the bench and the demo all build their re-driver here, so what runs in
Lambda and what is tested are put together the same way.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from sqs_redriver.core.archive import S3Archive
from sqs_redriver.core.delivery import target_for
from sqs_redriver.core.source_growth import BaselineTable
from sqs_redriver.core.sqs import SqsQueue
from sqs_redriver.core.table import StateTable
from sqs_redriver.core.transfer import TokenBucket
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime.batch import BatchHandler, Executor
from sqs_redriver.runtime.batch_loop import BatchLoop
from sqs_redriver.runtime.consumer_breaker import ConsumerBreakerReader
from sqs_redriver.runtime.consumer_health import ConsumerWatch
from sqs_redriver.runtime.consumer_metrics import CloudWatchActivity
from sqs_redriver.runtime.held import CanaryRules, HeldGroups
from sqs_redriver.runtime.parking import Parker
from sqs_redriver.runtime.plan import Planner, PlanRules
from sqs_redriver.runtime.redrive import RedriveSender
from sqs_redriver.runtime.routing import Routes
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.source_growth import GrowthWatch, watches_growth
from sqs_redriver.runtime.workers import Drains

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqs_redriver.core.clients import AwsClients
    from sqs_redriver.runtime.ports import Queue, Target
    from sqs_redriver.runtime.settings import Settings

SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class Queues:
    """The queues a re-driver works on: its DLQ, the DLQ's source queues, and the parking lot."""

    dlq: Queue
    sources: list[Target]
    parking_lot: Queue

    def sources_by_url(self) -> dict[str, Target]:
        return {queue.url: queue for queue in self.sources}


def compose_redriver(
    settings: Settings,
    clients: AwsClients,
    *,
    logger: logging.Logger | Any = None,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
    limiter: TokenBucket | None = None,
    metrics: Any = None,
) -> Redriver:
    """A Redriver over ``clients``; ``clock``, ``sleep`` and ``limiter`` let tests move time themselves
    (the default limiter runs at MAX_REDRIVES_PER_SECOND on the real clock); ``metrics`` (Powertools
    Metrics) counts corrupt state records (None: they are only logged). The consumers' CloudWatch
    metrics are read through ``clients.cloudwatch`` when ``queue_metrics`` is on and that client is
    given (ValueError when the sources' metrics do not fit one GetMetricData request)."""
    logger = logger or logging.getLogger("redriver")
    queues = _queues(settings, clients)
    state = _state_table(settings, clients, clock=clock, sleep=sleep, logger=logger, metrics=metrics)
    routes = Routes(tuple(queue.url for queue in queues.sources))
    # One batch may go at once; beyond that, re-drives flow at the configured rate (a large
    # drain's worker: at its share of the drain's pace).
    limiter = limiter or TokenBucket(settings.max_redrives_per_second, burst=SQS_MAX_BATCH_SIZE)
    executor = _executor(settings, clients, queues, state, routes, limiter=limiter, logger=logger)
    watch = _consumer_watch(settings, clients, queues, clock=clock, logger=logger)
    planner = Planner(_plan_rules(settings, routes), rng or random.Random())
    held = _held_groups(settings, state, logger)
    growth = _growth_watch(settings, clients, queues, clock=clock, logger=logger, metrics=metrics)
    loop = _batch_loop(
        settings, queues, state, routes, executor, watch, planner, held, growth, clock=clock, logger=logger
    )
    drains = Drains(
        settings,
        state=state,
        dlq=queues.dlq,
        sources=queues.sources,
        limiter=limiter,
        clock=clock,
        logger=logger,
    )
    return Redriver(
        settings,
        state=state,
        loop=loop,
        logger=logger,
        clock=clock,
        sleep=sleep,
        watch=watch,
        drains=drains,
        breaker_reader=_breaker_reader(settings, clients, logger),
        held=held,
    )


def _state_table(
    settings: Settings,
    clients: AwsClients,
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    logger: Any,
    metrics: Any,
) -> StateTable:
    return StateTable(
        settings.table_name,
        clients.dynamodb,
        ttl_seconds=settings.state_ttl_days * SECONDS_PER_DAY,
        clock=clock,
        sleep=sleep,
        logger=logger,
        metrics=metrics,
        # Dead letters of another kind have no kit: their re-driver reads no kit record.
        kit_scope=None if settings.dead_letter_sources else settings.dlq_url,
    )


def _held_groups(settings: Settings, state: StateTable, logger: Any) -> HeldGroups:
    """The failure groups held in a partial outage (held.py), in the DLQ's HELD# record."""
    return HeldGroups(
        state,
        key=RecordKind.HELD.key(settings.dlq_url),
        rules=CanaryRules(settings.base_delay_seconds, settings.max_delay_seconds),
        reads_verdicts=settings.consumer_verdicts,
        logger=logger,
    )


def _breaker_reader(settings: Settings, clients: AwsClients, logger: Any) -> ConsumerBreakerReader | None:
    """The reader of the Powertools breakers the targets keep, when any source names one."""
    if not any(source.breaker for source in settings.dead_letter_sources):
        return None
    return ConsumerBreakerReader(clients.dynamodb, logger)


def _queues(settings: Settings, clients: AwsClients) -> Queues:
    """The DLQ, the parking lot, and where dead letters go back: the source queues, or the
    targets of a DLQ of another kind's sources (core/delivery.py)."""
    sqs = clients.sqs
    sources: list[Target]
    if settings.dead_letter_sources:
        if clients.delivery is None:
            raise ValueError("DEAD_LETTER_SOURCES is set: the re-driver needs the delivery clients")
        sources = [target_for(source, clients.delivery) for source in settings.dead_letter_sources]
    else:
        sources = [SqsQueue(url, sqs) for url in settings.source_queue_urls]
    return Queues(
        dlq=SqsQueue(settings.dlq_url, sqs, settings.dead_letter_sources),
        sources=sources,
        parking_lot=SqsQueue(settings.parking_lot_url, sqs),
    )


def _batch_loop(
    settings: Settings,
    queues: Queues,
    state: StateTable,
    routes: Routes,
    executor: Executor,
    watch: ConsumerWatch,
    planner: Planner,
    held: HeldGroups,
    growth: Callable[[], GrowthWatch] | None,
    *,
    clock: Callable[[], float],
    logger: Any,
) -> BatchLoop:
    """The loop that takes DLQ batches, and the handler that plans and acts on each."""
    handler = BatchHandler(
        planner=planner,
        messages=state,
        group_marks=state,
        sources=queues.sources_by_url(),
        routes=routes,
        fifo=settings.fifo,
        logger=logger,
        clock=clock,
        dlq=queues.dlq,
        expiry_margin_seconds=settings.expiry_margin_seconds,
        watch=watch,
        consumer_verdicts=settings.consumer_verdicts,
        held_groups=held,
    )
    return BatchLoop(
        dlq=queues.dlq,
        sources=queues.sources,
        handler=handler,
        executor=executor,
        watch=watch,
        settings=settings,
        logger=logger,
        growth=growth,
    )


def _growth_watch(
    settings: Settings,
    clients: AwsClients,
    queues: Queues,
    *,
    clock: Callable[[], float],
    logger: Any,
    metrics: Any,
) -> Callable[[], GrowthWatch] | None:
    """Each run's watch of its source's growth (source_growth.py), where a chain watches it."""
    if not watches_growth(settings):
        return None
    store = BaselineTable(settings.table_name, clients.dynamodb, clock=clock, logger=logger, metrics=metrics)
    source = SqsQueue(settings.source_queue_url, clients.sqs)
    return partial(
        GrowthWatch, dlq=queues.dlq, source=source, store=store, settings=settings, clock=clock, logger=logger
    )


def _executor(
    settings: Settings,
    clients: AwsClients,
    queues: Queues,
    state: StateTable,
    routes: Routes,
    *,
    limiter: TokenBucket,
    logger: Any,
) -> Executor:
    """Re-drives to the sources and parking in the lot (and the archive, when a bucket is set)."""
    redrives = RedriveSender(
        sources=queues.sources,
        state=state,
        limiter=limiter,
        routes=routes,
        fifo=settings.fifo,
        record_every_redrive=settings.record_every_redrive,
        logger=logger,
    )
    if settings.archive_bucket and clients.s3 is None:
        raise ValueError("ARCHIVE_BUCKET is set: the re-driver needs an S3 client to archive")
    parker = Parker(
        parking_lot=queues.parking_lot,
        dlq=queues.dlq,
        state=state,
        routes=routes,
        fifo=settings.fifo,
        logger=logger,
        archive=S3Archive(settings.archive_bucket, clients.s3) if settings.archive_bucket else None,
    )
    return Executor(dlq=queues.dlq, redrives=redrives, parker=parker, logger=logger)


def _consumer_watch(
    settings: Settings, clients: AwsClients, queues: Queues, *, clock: Callable[[], float], logger: Any
) -> ConsumerWatch:
    return ConsumerWatch(
        _activity(settings, clients, logger),
        sources=queues.sources_by_url(),
        watched=settings.watched_queues,
        lag_seconds=settings.metrics_lag_seconds,
        consumer_verdicts=settings.consumer_verdicts,
        clock=clock,
        logger=logger,
    )


def _activity(settings: Settings, clients: AwsClients, logger: Any) -> CloudWatchActivity | None:
    """The consumers' CloudWatch metrics, when they are to be judged and a client is given."""
    if not settings.queue_metrics or clients.cloudwatch is None:
        return None
    return CloudWatchActivity(clients.cloudwatch, logger, watched=settings.watched_queues)


def _plan_rules(settings: Settings, routes: Routes) -> PlanRules:
    return PlanRules(
        max_redrive_count=settings.max_redrive_count,
        fifo=settings.fifo,
        canary_size=settings.canary_size,
        base_delay_seconds=settings.base_delay_seconds,
        max_delay_seconds=settings.max_delay_seconds,
        breaker=settings.breaker,
        routes=routes,
        suspect_limit=settings.suspect_limit,
        waits_in_dlq=bool(settings.dead_letter_sources),
    )


def idempotency_guard(settings: Settings, dynamodb: Any) -> tuple[IdempotencyConfig, Any]:
    """EventBridge delivers at least once: a repeated event id is answered from the first run.
    The records live in the state table under ``IDEMPOTENCY#<DLQ URL>#<hash>``, the only keys of
    that kind the function's grant allows (infra/sqs_redriver/cdk/access.py). Returns the config and
    the decorator."""
    config = IdempotencyConfig(event_key_jmespath="id", expires_after_seconds=3600)
    persistence = DynamoDBPersistenceLayer(
        table_name=settings.table_name, key_attr="pk", expiry_attr="expires_at", boto3_client=dynamodb
    )
    guard = idempotent_function(
        data_keyword_argument="event",
        config=config,
        persistence_store=persistence,
        key_prefix=RecordKind.IDEMPOTENCY.key(settings.dlq_url),
    )
    return config, guard
