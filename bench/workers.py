"""`python -m bench.workers`: a large drain's move rate with 1, 4 and 16 workers, side by side in
one run, on one moto server with a fixed latency added to every AWS call, so that the scaling of
issue 34's workers is measured, not assumed.

    python -m bench.workers [--workers 1 4 16] [--messages 3000] [--latency-ms 20 [200]] [--json]

For each worker count N, on a fresh moto: the DLQ holds ``--messages`` orders (bench.drains.fill_dlq),
the state table a going drain (``DRAIN#<DLQ URL>``) at MAX_DRAIN_RATE and N workers, and N real runs
of the re-driver go at once, each composed as a Lambda invocation composes it (its own clients,
counted by bench.metering.Meter, which adds the latency): slot 0 the chain, with the continuation
it was offered, slots 1 to N-1 workers, each with the lease a fan-out offers. A run that is
followed by another (its per-run limit, its time budget) is followed at once, in its thread, as
Lambda would. The rate is the messages the runs re-drove over the wall time from their start until
every run found the DLQ empty.

What is held still, so that the figure is the move rate and nothing else:

- The pace. Every CONTROL_SECONDS a worker would step it from the consumer's source queue and
  resize the fleet to ``workers_wanted``, which gives a short tail few workers (one per 2,000
  messages left): N workers would not stay N. The drain's record says it was stepped a few minutes
  ahead (within the clock skew the table accepts), so no step falls inside the measurement, and
  each worker's token bucket runs at its share of MAX_DRAIN_RATE throughout, more than it sends.
  A measurement that outlasts that horizon is refused, not reported.
- The consumer. Nobody takes the re-driven messages in this bench, and moto's cost of a send grows
  with the depth of the queue it sends to (each message sent computes the queue's attributes: at a
  depth of 6,000, 60 ms a batch of 10, more than the whole move costs). A consumer that keeps up
  is modelled by purging the source queue every PURGE_SECONDS, outside the counted clients.
- moto's atomicity. SQS hides a message in the same step that returns it; moto does not, so the
  queue calls that take and settle messages run one at a time inside the server for the
  measurement (as local_aws.clients.AtomicQueueCalls does for one client). Locked on the client,
  they would hold the lock across the added latency and cap every worker together at one receive
  per latency.

Every worker, the moto server and the bench share one Python process, so one GIL: whatever the
machine's cores, their CPU adds up to about one core. The CPU seconds of the process per wall
second (``cpu_per_wall``) say when that, and not the re-driver, is the limit: near 1, more workers
cannot add anything here. A message costs a few milliseconds of CPU (moto's share the larger), so
at 20 ms a call one worker already comes close; at 200 ms (``--latency-ms 20 200``) a worker waits
on AWS, not on the CPU, and what more workers add shows until the process reaches its core.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from moto.sqs.models import SQSBackend

from bench.drains import fill_dlq
from bench.metering import Meter
from local_aws.compose import local_redriver
from local_aws.environment import environment
from local_aws.events import LambdaContext
from local_aws.queues import queue_counts
from local_aws.resources import Resources, new_clients
from local_aws.server import moto_server, reset_moto
from sqs_redriver.core.table import DrainRecord, Resume, StateTable
from sqs_redriver.protocol.keys import worker_key
from sqs_redriver.protocol.settings import default
from sqs_redriver.runtime.continuation import CONTINUATION_STALE_SECONDS
from sqs_redriver.runtime.pace import PacePhase
from sqs_redriver.runtime.report import RunReport
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.settings import Settings
from sqs_redriver.runtime.workers import OFFER_SECONDS

DEFAULT_WORKERS = (1, 4, 16)
DEFAULT_MESSAGES = 3_000
DEFAULT_LATENCY_MS = 20
# The drain's record says it was stepped this far ahead: no pace step for as long (the table reads a
# time at most MAX_CLOCK_SKEW_SECONDS, 300, ahead as genuine).
STEP_HORIZON_SECONDS = 240
PURGE_SECONDS = 0.25
# The moto calls that take and settle messages, one at a time for the measurement.
ATOMIC_QUEUE_CALLS = (
    "receive_message",
    "delete_message",
    "delete_message_batch",
    "change_message_visibility",
    "change_message_visibility_batch",
)
LAMBDA_TIMEOUT_SECONDS: int = default("redriver_timeout_seconds")
SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class WorkersFigures:
    workers: int
    messages: int  # in the DLQ at the start
    latency_ms: int  # added to every counted AWS call
    moved: int  # re-driven by the runs
    left: int  # in the DLQ at the end (visible, in flight or delayed)
    runs: int  # invocations, continuations included
    errors: int  # the runs' failed AWS calls and actions
    wall_s: float
    rate: float  # moved per wall second
    requests_per_message: float  # the runs' AWS calls per message moved
    cpu_s: float  # the process's CPU seconds: the workers', moto's and the bench's together
    cpu_per_wall: float  # ~1: the process's one GIL is the limit
    load_1m: float  # the machine's load average when the measurement began (shared machine)


def measure(endpoint: str, workers: int, messages: int, latency_ms: int) -> WorkersFigures:
    """Drain a DLQ of ``messages`` with ``workers`` runs at once, on a fresh moto at ``endpoint``."""
    reset_moto(endpoint)
    resources = fill_dlq(messages)
    settings = drain_settings(resources, max_workers=max(workers, default("max_workers")))
    resumes = going_drain(settings, resources, workers, messages)
    meter = Meter(latency_seconds=latency_ms / 1000)
    redrivers = [worker_redriver(settings, meter, slot) for slot in range(workers)]
    load_1m = os.getloadavg()[0]
    with atomic_queue_calls(), consumer_keeping_up(resources):
        started, cpu_started = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [
                pool.submit(invocations, r, resume) for r, resume in zip(redrivers, resumes, strict=True)
            ]
            reports = [report for future in futures for report in future.result()]
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    if wall >= STEP_HORIZON_SECONDS:
        raise RuntimeError(
            f"{workers} workers took {wall:.0f} s, past the {STEP_HORIZON_SECONDS} s without a pace "
            "step: the pace may have changed the rate and the width; use fewer --messages"
        )
    moved = sum(report.redriven for report in reports)
    return WorkersFigures(
        workers=workers,
        messages=messages,
        latency_ms=latency_ms,
        moved=moved,
        left=queue_counts(resources.sqs, resources.dlq_url).total,
        runs=len(reports),
        errors=sum(report.errors for report in reports),
        wall_s=round(wall, 2),
        rate=round(moved / wall, 1),
        requests_per_message=round(meter.calls / max(moved, 1), 3),
        cpu_s=round(cpu, 1),
        cpu_per_wall=round(cpu / wall, 2),
        load_1m=round(load_1m, 2),
    )


def drain_settings(resources: Resources, *, max_workers: int) -> Settings:
    """The defaults, as `make bench` runs them: no long poll (moto would hold a receive's lock
    through it), a 1-day state TTL; MAX_WORKERS enough for the widest fleet measured; a consumer
    that reports verdicts (only then does a drain fan out)."""
    return Settings(
        dlq_url=resources.dlq_url,
        source_queue_url=resources.source_url,
        parking_lot_url=resources.parking_lot_url,
        table_name=resources.table_name,
        receive_wait_seconds=0,
        state_ttl_days=1,
        max_workers=max_workers,
        consumer_verdicts=True,
    )


def going_drain(settings: Settings, resources: Resources, workers: int, messages: int) -> list[Resume]:
    """Write a going drain of ``workers`` at MAX_DRAIN_RATE, stepped STEP_HORIZON_SECONDS ahead, and
    offer each slot as the chain and a fan-out would; the Resume each slot's run is started with."""
    state = StateTable(resources.table_name, resources.dynamodb, ttl_seconds=SECONDS_PER_DAY)
    now = int(time.time())
    record = DrainRecord(
        rate=settings.max_drain_rate, phase=PacePhase.CLIMB.value, fell_behind_at=0, workers=workers,
        messages_left=messages, stepped_at=now + STEP_HORIZON_SECONDS, started_at=now,
    )  # fmt: skip
    if not state.save_drain(settings.drain_key, record, expected_version=0):
        raise RuntimeError("a drain's record was already there: moto was not reset")
    resumes = []
    for slot in range(workers):
        token = uuid.uuid4().hex
        offered = (
            state.offer_worker(worker_key(settings.dlq_url, slot), token, expires_at=now + OFFER_SECONDS)
            if slot
            else state.offer_continuation(settings.dlq_url, token, stale_after=CONTINUATION_STALE_SECONDS)
        )
        if not offered:
            raise RuntimeError(f"slot {slot} was already held: moto was not reset")
        resumes.append(Resume(token=token, generation=0, full_rate=True, slot=slot, drain=True))
    return resumes


def worker_redriver(settings: Settings, meter: Meter, slot: int) -> Redriver:
    """One invocation's re-driver: its own clients, counted (and slowed) by ``meter``."""
    clients = new_clients()
    return local_redriver(
        settings,
        sqs=meter.attach(clients.sqs),
        dynamodb=meter.attach(clients.dynamodb),
        seed=slot,
        logger_name=f"bench-worker-{slot}",
    )


def invocations(redriver: Redriver, resume: Resume) -> list[RunReport]:
    """A slot's run, then each run that follows it, started at once as Lambda would start it."""
    reports: list[RunReport] = []
    following: Resume | None = resume
    while following is not None:
        context = LambdaContext(timeout_seconds=LAMBDA_TIMEOUT_SECONDS)
        reports.append(redriver.run(context.get_remaining_time_in_millis, following, start_worker=None))
        following = reports[-1].continue_with
    return reports


@contextmanager
def atomic_queue_calls() -> Iterator[None]:
    """moto's calls that take and settle messages, one at a time inside the server (this process's
    moto backend), for a while. Reentrant: a batch call makes the single calls."""
    lock = threading.RLock()
    saved = {name: getattr(SQSBackend, name) for name in ATOMIC_QUEUE_CALLS}

    def atomic(call: Callable[..., Any]) -> Callable[..., Any]:
        def locked(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return call(*args, **kwargs)

        return locked

    for name, call in saved.items():
        setattr(SQSBackend, name, atomic(call))
    try:
        yield
    finally:
        for name, call in saved.items():
            setattr(SQSBackend, name, call)


@contextmanager
def consumer_keeping_up(resources: Resources) -> Iterator[None]:
    """A consumer that takes every message re-driven at once: the source queue purged every
    PURGE_SECONDS (one uncounted request each; moto, in this process, told to allow that), so
    moto's sends stay as cheap as SQS's."""
    stop = threading.Event()
    sqs = new_clients().sqs

    def purge() -> None:
        while not stop.wait(PURGE_SECONDS):
            sqs.purge_queue(QueueUrl=resources.source_url)

    purger = threading.Thread(target=purge, name="consumer", daemon=True)
    with environment({"MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR": "false"}):
        purger.start()
        try:
            yield
        finally:
            stop.set()
            purger.join()


def million_line(figures: WorkersFigures, speedup: float) -> str:
    """The figures of one worker count as one ``million:`` line of key=value pairs."""
    pairs = {"scenario": "workers", **asdict(figures), "speedup": speedup}
    return "million: " + " ".join(f"{key}={value}" for key, value in pairs.items())


COLUMNS: list[tuple[str, Callable[[WorkersFigures], Any]]] = [
    ("workers", lambda f: f.workers),
    ("messages", lambda f: f"{f.messages:,}"),
    ("moved", lambda f: f"{f.moved:,}"),
    ("left", lambda f: f.left),
    ("runs", lambda f: f.runs),
    ("errors", lambda f: f.errors),
    ("wall (s)", lambda f: f.wall_s),
    ("rate (/s)", lambda f: f.rate),
    ("requests / message", lambda f: f.requests_per_message),
    ("CPU (s)", lambda f: f.cpu_s),
    ("CPU / wall", lambda f: f.cpu_per_wall),
    ("load (1 min)", lambda f: f.load_1m),
]


def speedups(rows: Sequence[WorkersFigures]) -> list[float]:
    """Each row's rate over the rate of the fewest workers measured at the same latency."""
    fewest: dict[int, WorkersFigures] = {}
    for row in rows:
        if row.latency_ms not in fewest or row.workers < fewest[row.latency_ms].workers:
            fewest[row.latency_ms] = row
    base = {latency: row.rate for latency, row in fewest.items()}
    return [round(row.rate / base[row.latency_ms], 2) if base[row.latency_ms] else 0.0 for row in rows]


def render(rows: Sequence[WorkersFigures], *, as_json: bool) -> str:
    """A table of the worker counts side by side, then a ``million:`` line each; a speedup is the
    rate over that of the fewest workers measured at the same latency."""
    gains = speedups(rows)
    if as_json:
        return json.dumps([asdict(r) | {"speedup": g} for r, g in zip(rows, gains, strict=True)], indent=2)
    header = [c for c, _ in COLUMNS] + ["speedup"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row, gain in zip(rows, gains, strict=True):
        lines.append("| " + " | ".join([*(str(cell(row)) for _, cell in COLUMNS), str(gain)]) + " |")
    lines.append("")
    lines += [million_line(row, gain) for row, gain in zip(rows, gains, strict=True)]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.workers", description=__doc__)
    parser.add_argument("--workers", type=int, nargs="+", default=list(DEFAULT_WORKERS))
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument("--latency-ms", type=int, nargs="+", default=[DEFAULT_LATENCY_MS])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if min(args.workers) < 1 or args.messages < 1 or min(args.latency_ms) < 0:
        parser.error("--workers and --messages are at least 1, --latency-ms at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.getLogger("moto").setLevel(logging.ERROR)
    rows = []
    with moto_server() as endpoint:
        for latency_ms in args.latency_ms:
            for workers in args.workers:
                rows.append(measure(endpoint, workers, args.messages, latency_ms))
                done = rows[-1]
                print(
                    f"{workers} workers, {latency_ms} ms: {done.rate}/s in {done.wall_s} s", file=sys.stderr
                )
    print(render(rows, as_json=args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
