"""A backlog drain in simulated time: a DLQ already holding ``n`` orders, a healthy consumer as fast
as the re-driver's rate limit, and the time the default stack's re-driver takes to empty the DLQ.

The first run is the first schedule tick (t = 300 s); "DLQ empty" is the first moment after a run
began with nothing visible, in flight or delayed in the DLQ; "drained", with every order
fulfilled as well. This
is what continuation changes: before it, a run stopped at 500 messages and the next waited for
the next tick.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace

from local_aws.consumers import kit_order_consumer, order_body, plain_order_consumer
from local_aws.queues import queue_counts
from local_aws.simulation import open_world, without_consumer_verdicts
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE


@dataclass(frozen=True)
class BacklogDrain:
    messages: int
    kit: bool
    consumer_rate: float  # messages a second the consumer takes
    dlq_empty_seconds: float | None  # from the first run's start to an empty DLQ; None: not in the cap
    drained_seconds: float | None  # ... to every order fulfilled as well
    runs: int
    stops: tuple[str, ...]  # each run's stop reason
    fulfilled: int
    duplicates: int
    redriver_requests: int
    wall_seconds: float

    @property
    def requests_per_message(self) -> float:
        return round(self.redriver_requests / self.messages, 3)


def drain_backlog(
    n_messages: int,
    *,
    kit: bool = False,
    consumer_call_seconds: float = 0.2,
    cap_hours: float = 3,
    seed: int = 7,
) -> BacklogDrain:
    """Fill the DLQ with ``n_messages`` good orders and let the world run until it is drained."""
    started = time.perf_counter()
    consumer = kit_order_consumer() if kit else plain_order_consumer()
    settings = None if kit else without_consumer_verdicts
    with open_world(consumer, consumer_call_seconds=consumer_call_seconds, adjust_settings=settings) as world:
        dlq = world.deployment.dlq_url
        rng = random.Random(seed)
        bodies = [order_body(f"o-{i:05d}", rng=rng) for i in range(n_messages)]
        for start in range(0, n_messages, SQS_MAX_BATCH_SIZE):
            entries = bodies[start : start + SQS_MAX_BATCH_SIZE]
            world.sqs.send_message_batch(
                QueueUrl=dlq, Entries=[{"Id": str(i), "MessageBody": b} for i, b in enumerate(entries)]
            )
        keys = {world.key_of(b) for b in bodies}
        empty_at: list[float] = []
        drained_at: list[float] = []

        def drained() -> bool:
            journal = world.journal
            if not journal.runs or queue_counts(world.sqs, dlq).total:
                return False
            empty_at[:] = empty_at or [world.clock.elapsed]
            if not keys <= {d.key for d in journal.deliveries if d.ok}:
                return False
            drained_at.append(world.clock.elapsed)
            return True

        world.run(until=drained, for_seconds=cap_hours * 3600)
        journal = world.journal
        ok = [d.key for d in journal.deliveries if d.ok]
        first_run = journal.runs[0].at if journal.runs else 0.0
        figures = BacklogDrain(
            messages=n_messages,
            kit=kit,
            consumer_rate=world.deployment.consumer_batch_size / consumer_call_seconds,
            dlq_empty_seconds=round(empty_at[0] - first_run, 1) if empty_at else None,
            drained_seconds=round(drained_at[0] - first_run, 1) if drained_at else None,
            runs=len(journal.runs),
            stops=tuple(r.stopped_because for r in journal.runs),
            fulfilled=len(set(ok)),
            duplicates=len(ok) - len(set(ok)),
            redriver_requests=sum(world.requests.values()),
            wall_seconds=0.0,
        )
    return replace(figures, wall_seconds=round(time.perf_counter() - started, 1))
