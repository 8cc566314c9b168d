"""`python -m bench.worker_cpu`: the CPU one re-drive costs a drain's worker, measured, and the
rate a worker of the function's memory can therefore keep.

    python -m bench.worker_cpu [--messages 3000] [--repeats 3] [--json]

A worker's run is CPU-bound in Lambda long before AWS's latency bounds it: Lambda gives a function
CPU in proportion to its memory, one vCPU at 1,769 MB (AWS's Lambda memory documentation), so a
256 MB function has about 0.145 of one. What it spends on a message is measured here: a real
re-driver run (``Redriver.run``, composed as the handler composes it, with Powertools' Logger
writing its JSON lines) drains ``--messages`` orders as one worker of a going drain, and
``time.process_time`` is read around it.

AWS's latency and moto's CPU are left out by where moto runs: in a process of its own (this
module's ``--serve``), so this process's CPU time is the worker's alone (its logic, boto3's
serialization, signing and parsing, the HTTP client), and a wait on the server is no CPU here.
The consumer that keeps up (bench.workers' purge, every PURGE_SECONDS) runs in a thread whose own
CPU time (``time.thread_time``) is taken off. The median of ``--repeats`` runs is reported.

``worker_rate`` is then ``1000 × vcpu_share / cpu_ms_per_msg``: the most one worker moves a second
on the function's share of a vCPU, whatever AWS's latency (bench.million's model takes it as
WORKER_CAPACITY's bound).
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from aws_lambda_powertools import Logger

# One vCPU at this much memory (AWS Lambda: "Configure Lambda function memory").
MB_PER_VCPU = 1769
DEFAULT_MESSAGES = 3_000
DEFAULT_REPEATS = 3


def vcpu_share(memory_mb: int) -> float:
    """The share of one vCPU Lambda gives a function of ``memory_mb``."""
    return memory_mb / MB_PER_VCPU


def cpu_bound_rate(memory_mb: int, cpu_ms_per_msg: float) -> float:
    """The most messages a second one worker of ``memory_mb`` moves on its CPU."""
    return 1000 * vcpu_share(memory_mb) / cpu_ms_per_msg


@dataclass(frozen=True)
class CpuFigures:
    messages: int
    moved: int
    cpu_ms_per_msg: float  # the worker's own CPU per message re-driven (median of the repeats)
    repeats: list[float]  # each repeat's figure
    load_1m: float


def serve(endpoint_file: str) -> None:
    """A moto server in this (child) process, its depth-dependent costs cut and its message calls
    atomic as SQS's are (bench.workers); writes its endpoint to ``endpoint_file`` and serves until
    killed."""
    from moto.server import ThreadedMotoServer

    from bench.workers import atomic_queue_calls
    from local_aws.server import speed_up_moto_sqs

    speed_up_moto_sqs()
    os.environ["MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR"] = "false"  # the consumer's purges
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    with atomic_queue_calls():
        server.start()
        host, port = server.get_host_and_port()
        with open(endpoint_file, "w", encoding="utf-8") as out:
            out.write(f"http://{host}:{port}")
        threading.Event().wait()


@contextmanager
def moto_elsewhere(endpoint_file: str) -> Iterator[str]:
    """A moto server in a child process; every boto3 client of this process pointed at it."""
    from local_aws import REGION
    from local_aws.environment import environment

    child = multiprocessing.get_context("spawn").Process(target=serve, args=(endpoint_file,), daemon=True)
    child.start()
    try:
        deadline = time.monotonic() + 60
        while not (os.path.exists(endpoint_file) and os.path.getsize(endpoint_file)):
            if time.monotonic() > deadline or not child.is_alive():
                raise RuntimeError("the moto server did not start")
            time.sleep(0.1)
        with open(endpoint_file, encoding="utf-8") as f:
            endpoint = f.read()
        variables = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "demo",
            "AWS_SECRET_ACCESS_KEY": "demo",
            "AWS_DEFAULT_REGION": REGION,
        }
        with environment(variables, unset=["AWS_PROFILE"]):
            yield endpoint
    finally:
        child.kill()
        child.join()
        os.unlink(endpoint_file)


class ThreadCpu:
    """A purging consumer (bench.workers.consumer_keeping_up) that keeps its own CPU time."""

    def __init__(self, source_url: str) -> None:
        from local_aws.resources import new_clients

        self.source_url = source_url
        self.sqs = new_clients().sqs
        self.stop = threading.Event()
        self.cpu = 0.0
        self.thread = threading.Thread(target=self._purge, name="consumer", daemon=True)

    def _purge(self) -> None:
        from bench.workers import PURGE_SECONDS

        started = time.thread_time()
        while not self.stop.wait(PURGE_SECONDS):
            self.sqs.purge_queue(QueueUrl=self.source_url)
        self.cpu = time.thread_time() - started

    def __enter__(self) -> ThreadCpu:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def one_repeat(endpoint: str, messages: int, logger: Logger) -> tuple[int, float]:
    """One worker's runs over a DLQ of ``messages``: what they moved and the CPU seconds they took."""
    from bench.drains import fill_dlq
    from bench.workers import LAMBDA_TIMEOUT_SECONDS, drain_settings, going_drain
    from local_aws.events import LambdaContext
    from local_aws.resources import new_clients
    from local_aws.server import reset_moto
    from sqs_redriver.core.clients import AwsClients
    from sqs_redriver.runtime.wiring import compose_redriver

    reset_moto(endpoint)
    resources = fill_dlq(messages)
    settings = drain_settings(resources, max_workers=16)
    [resume] = going_drain(settings, resources, 1, messages)
    clients = new_clients()
    redriver = compose_redriver(
        settings, AwsClients(sqs=clients.sqs, dynamodb=clients.dynamodb), logger=logger
    )
    moved = 0
    with ThreadCpu(resources.source_url) as consumer:
        started = time.process_time()
        following: Any = resume
        while following is not None:
            context = LambdaContext(timeout_seconds=LAMBDA_TIMEOUT_SECONDS)
            report = redriver.run(context.get_remaining_time_in_millis, following, start_worker=None)
            moved += report.redriven
            following = report.continue_with
        cpu = time.process_time() - started
    return moved, cpu - consumer.cpu


def measure(messages: int, repeats: int) -> CpuFigures:
    load_1m = os.getloadavg()[0]
    logging.getLogger("moto").setLevel(logging.ERROR)
    figures = []
    moved = 0
    endpoint_file = os.path.join(tempfile.gettempdir(), f"bench-worker-cpu-{os.getpid()}")
    with open(os.devnull, "w", encoding="utf-8") as devnull, moto_elsewhere(endpoint_file) as endpoint:
        # Powertools' JSON lines, as the handler's Logger writes them, to nowhere.
        logger = Logger(service="bench-worker-cpu", logger_handler=logging.StreamHandler(devnull))
        for _ in range(repeats):
            moved, cpu = one_repeat(endpoint, messages, logger)
            figures.append(round(1000 * cpu / max(moved, 1), 3))
    return CpuFigures(
        messages=messages,
        moved=moved,
        cpu_ms_per_msg=statistics.median(figures),
        repeats=figures,
        load_1m=round(load_1m, 2),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker_cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = measure(args.messages, args.repeats)
    if args.json:
        print(json.dumps(asdict(figures), indent=2))
    else:
        print(
            f"worker_cpu: cpu_ms_per_msg={figures.cpu_ms_per_msg} repeats={figures.repeats} "
            f"moved={figures.moved} load_1m={figures.load_1m}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
