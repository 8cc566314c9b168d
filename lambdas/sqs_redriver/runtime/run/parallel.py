"""REDRIVE with several batches in flight at once, so the rate limit is reachable at real AWS
latency. SQS hands each message to one receive, the breaker writes are conditional, and the
workers share the client, the rate limit and the run's limit (a share each)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from sqs_redriver.runtime.act.breaker_writer import BreakerWriter
from sqs_redriver.runtime.decide.breaker import Breaker
from sqs_redriver.runtime.model.breaker_state import Mode
from sqs_redriver.runtime.model.report import StopReason, Tally
from sqs_redriver.runtime.run.loop import BatchLoop, Drained
from sqs_redriver.runtime.run.slow_start import SlowStart


def drain_in_parallel(
    loop: BatchLoop,
    breaker: Breaker,
    *,
    workers: int,
    limit: int,
    remaining_ms: Callable[[], int],
    writer: BreakerWriter,
    slow_start: SlowStart | None = None,
    source: str | None = None,
) -> Drained:
    """Each worker keeps its own tally and breaker copy, merged at the end. When one opens the
    breaker, fails on AWS, meets the time budget or back-pressure, or dies, all stop before their
    next batch."""
    halt = threading.Event()
    share = -(-limit // workers)

    def work() -> Drained:
        try:
            return loop.drain(
                Mode.REDRIVE,
                breaker,
                limit=share,
                remaining_ms=remaining_ms,
                writer=writer,
                halt=halt,
                slow_start=slow_start,
                source=source,
            )
        except BaseException:
            halt.set()  # this worker died: the others stop before their next batch
            raise

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(work) for _ in range(workers)]
        results = [future.result() for future in futures]
    return merge(results)


def merge(results: list[Drained]) -> Drained:
    """The run's result from its workers': the first reason that is not the end of a share, and
    the breaker record with the highest version."""
    tally = Tally()
    held: dict[str, str] = {}
    for result in results:
        tally += result.tally
        held.update(result.held)
    reasons = [r.stop for r in results]
    stop = next((r for r in reasons if r not in (StopReason.DLQ_EMPTY, StopReason.HALTED)), reasons[0])
    return Drained(
        tally=tally,
        breaker=max((r.breaker for r in results), key=lambda b: b.version),
        stop=stop,
        held=held,
        canary_may_hide=any(r.canary_may_hide for r in results),
    )
