"""`make bench`: drain the same DLQ with the published design and with this re-driver, on one moto
server, counting every AWS request with botocore event hooks; optionally with a fixed latency added
to every request (closer to real AWS than moto's local calls).

    python -m bench [--sizes 200 500] [--repeats 3] [--latency-ms 0 20] [--limiter-rates 10 50 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import boto3

import demo  # noqa: F401 - puts lambdas/ on sys.path, as Lambda does
from bench.baseline import PublishedRedriver
from demo.local_aws import AtomicReceive, deploy, moto_server
from redriver.adapters.sqs_queue import SqsQueue
from redriver.adapters.state_table import StateTable
from redriver.run.runner import Redriver
from redriver.settings import Settings

REGION = "us-east-1"
SQS_BILLING_CHUNK = 64 * 1024
# Published on-demand prices, us-east-1 (per million): SQS standard requests, DynamoDB write and
# read request units.
PRICE_SQS_REQUEST = 0.40
PRICE_WRU = 0.625
PRICE_RRU = 0.125


@dataclass
class Meter:
    """Counts requests by operation and the units AWS bills for them."""

    latency_seconds: float = 0.0
    operations: Counter[str] = field(default_factory=Counter)
    sqs_requests: float = 0
    write_units: float = 0
    read_units: float = 0

    def attach(self, client: Any) -> Any:
        client.meta.events.register("provide-client-params.*.*", self._count)
        if self.latency_seconds:
            client.meta.events.register("before-send.*.*", self._wait)
        return client

    def _wait(self, **_: Any) -> None:
        time.sleep(self.latency_seconds)

    def _count(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        self.operations[name] += 1
        service = model.service_model.service_name
        if name in {"SendMessageBatch", "SendMessage"}:
            entries = params.get("Entries") or [params]
            payload = sum(len(e.get("MessageBody", "").encode()) for e in entries)
            self.sqs_requests += max(1, math.ceil(payload / SQS_BILLING_CHUNK))
        elif name in {"BatchWriteItem"}:
            self.write_units += sum(len(items) for items in params["RequestItems"].values())
        elif name in {"PutItem", "UpdateItem", "DeleteItem"}:
            self.write_units += 1
        elif name == "BatchGetItem":
            for request in params["RequestItems"].values():
                self.read_units += len(request["Keys"]) * (1 if request.get("ConsistentRead") else 0.5)
        elif name == "GetItem":
            self.read_units += 1 if params.get("ConsistentRead") else 0.5
        elif service != "dynamodb":
            self.sqs_requests += 1

    @property
    def billable(self) -> float:
        return self.sqs_requests + self.write_units + self.read_units

    def cost_per_million(self, messages: int) -> float:
        dollars = (
            self.sqs_requests * PRICE_SQS_REQUEST + self.write_units * PRICE_WRU + self.read_units * PRICE_RRU
        )
        return dollars / messages  # $ per million requests x (requests / message) x 1e6 / 1e6


@dataclass
class Result:
    design: str
    messages: int
    latency_ms: int
    seconds: float
    per_second: float
    calls_per_message: float
    billable_per_message: float
    cost_per_million_usd: float
    operations: dict[str, int]


def reset(endpoint: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")).read()


def create_resources(messages: int) -> dict[str, str]:
    sqs = boto3.client("sqs", region_name=REGION)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    urls = {
        name: sqs.create_queue(QueueName=name)["QueueUrl"] for name in ("orders", "orders-dlq", "parking-lot")
    }
    for table, key in (("redriver-state", "pk"), ("published-state", "PK")):
        dynamodb.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    rng = random.Random(7)
    bodies = [json.dumps({"order_id": f"o-{i:05d}", "amount": rng.randint(1, 500)}) for i in range(messages)]
    attributes = {"tenant": {"DataType": "String", "StringValue": "acme"}}
    for start in range(0, messages, 10):
        sqs.send_message_batch(
            QueueUrl=urls["orders-dlq"],
            Entries=[
                {"Id": str(i), "MessageBody": body, "MessageAttributes": attributes}
                for i, body in enumerate(bodies[start : start + 10])
            ],
        )
    return urls


def visible(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def drain_with_published(urls: dict[str, str], meter: Meter) -> None:
    plain = boto3.client("sqs", region_name=REGION)
    redriver = PublishedRedriver(
        meter.attach(boto3.client("sqs", region_name=REGION)),
        meter.attach(boto3.client("dynamodb", region_name=REGION)),
        dlq_url=urls["orders-dlq"],
        source_url=urls["orders"],
        parking_lot_url=urls["parking-lot"],
        table_name="published-state",
        queue_name="orders",
        wait_seconds=0,
    )
    while visible(plain, urls["orders-dlq"]):
        redriver.handler()


def drain_with_redriver(urls: dict[str, str], meter: Meter, messages: int, rate: int = 500) -> None:
    # Parallel batches share this client; SQS hands a message to one receive, moto needs help.
    sqs = AtomicReceive(meter.attach(boto3.client("sqs", region_name=REGION)))
    settings = Settings(
        dlq_url=urls["orders-dlq"],
        source_queue_url=urls["orders"],
        parking_lot_url=urls["parking-lot"],
        table_name="redriver-state",
        receive_wait_seconds=0,
        max_messages_per_run=messages,
        max_redrives_per_second=rate,
    )
    redriver = Redriver(
        settings,
        dlq=SqsQueue(settings.dlq_url, sqs),
        sources=[SqsQueue(settings.source_queue_url, sqs)],
        parking_lot=SqsQueue(settings.parking_lot_url, sqs),
        state=StateTable(
            settings.table_name,
            meter.attach(boto3.client("dynamodb", region_name=REGION)),
            ttl_seconds=86_400,
        ),
        logger=logging.getLogger("bench"),
        clock=time.time,
        rng=random.Random(7),
    )
    plain = boto3.client("sqs", region_name=REGION)
    while visible(plain, urls["orders-dlq"]):
        redriver.run(lambda: 900_000)


def measure(endpoint: str, design: str, messages: int, latency_ms: int) -> Result:
    reset(endpoint)
    urls = create_resources(messages)
    meter = Meter(latency_seconds=latency_ms / 1000)
    started = time.perf_counter()
    if design == "published":
        drain_with_published(urls, meter)
    else:
        drain_with_redriver(urls, meter, messages)
    seconds = time.perf_counter() - started
    calls = sum(meter.operations.values())
    return Result(
        design=design,
        messages=messages,
        latency_ms=latency_ms,
        seconds=round(seconds, 2),
        per_second=round(messages / seconds, 1),
        calls_per_message=round(calls / messages, 3),
        billable_per_message=round(meter.billable / messages, 3),
        cost_per_million_usd=round(meter.cost_per_million(messages), 2),
        operations=dict(meter.operations),
    )


def limiter_messages(rate: int) -> int:
    """At least 200 messages and about 4 s of draining: the bucket starts with one batch, which
    a short drain would count as speed."""
    return max(200, 4 * rate)


def limiter_rate(endpoint: str, rate: int, messages: int) -> float:
    """Messages per second achieved by one run with the rate limit set to ``rate``."""
    reset(endpoint)
    urls = create_resources(messages)
    started = time.perf_counter()
    drain_with_redriver(urls, Meter(), messages, rate=rate)
    return round(messages / (time.perf_counter() - started), 1)


RUNTIME_VENV = Path(__file__).resolve().parent.parent / ".bench-venv"
# What the Lambda runtime and the Powertools layer provide, pinned as in requirements-dev.txt.
RUNTIME_PACKAGES = ["boto3==1.44.5", "botocore==1.44.5", "aws-lambda-powertools[tracer]==3.37.0"]


def runtime_python() -> str:
    """An interpreter with only what the function has in Lambda, so imports cost what they would
    there (the development venv holds the CDK, moto and more, which slows package discovery)."""
    python = RUNTIME_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(RUNTIME_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *RUNTIME_PACKAGES], check=True)
    return str(python)


REPOSITORY = Path(__file__).resolve().parent.parent
# The target compares the imports; the client rows show what the first invocation adds (the
# handler creates its clients then, not at import).
COLD_START_STATEMENTS = {
    "boto3": "import boto3",
    "redriver.handler": "import redriver.handler",
    "boto3 + sqs and dynamodb clients": "import boto3; boto3.client('sqs'); boto3.client('dynamodb')",
    "redriver.handler + its runtime (clients)": "import redriver.handler as h; h._runtime()",
}


def lambda_environment() -> dict[str, str]:
    """The environment Lambda gives the re-drive function: its own variables, read back from the
    default stack deployed into moto, and what the runtime sets. LAMBDA_TASK_ROOT matters most: it
    tells the X-Ray SDK it runs in Lambda, where it samples locally; elsewhere it builds a
    centralized-sampling client at import. Credentials come from variables, as in Lambda (without
    them botocore would search files and the instance metadata service when creating a client)."""
    function = deploy({}).redriver
    return {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPOSITORY / "lambdas"),
        "LAMBDA_TASK_ROOT": str(REPOSITORY / "lambdas"),
        "AWS_EXECUTION_ENV": f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}",
        "AWS_LAMBDA_FUNCTION_NAME": function.name,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_SESSION_TOKEN": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
        "_HANDLER": function.handler,
        **function.environment,
    }


def cold_start_ms(statement: str, repeats: int, environment: dict[str, str]) -> float:
    """Median wall time of a fresh runtime interpreter running ``statement`` in ``environment``,
    minus an empty interpreter."""
    python = runtime_python()

    def timed(code: str) -> float:
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            subprocess.run([python, "-c", code], env=environment, check=True)
            samples.append(time.perf_counter() - started)
        return statistics.median(samples)

    return round((timed(statement) - timed("pass")) * 1000, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency-ms", type=int, nargs="+", default=[0, 20])
    parser.add_argument("--limiter-rates", type=int, nargs="*", default=[10, 50, 200])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    rows: list[dict[str, Any]] = []
    limiter: dict[str, float] = {}
    with moto_server() as endpoint:
        environment = lambda_environment()  # first: it synthesizes the app, which needs node
        for rate in args.limiter_rates:
            limiter[f"{rate}/s"] = statistics.median(
                limiter_rate(endpoint, rate, limiter_messages(rate)) for _ in range(args.repeats)
            )
        for latency_ms in args.latency_ms:
            for messages in args.sizes:
                for design in ("published", "redriver"):
                    runs = [measure(endpoint, design, messages, latency_ms) for _ in range(args.repeats)]
                    median = sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]
                    rows.append(asdict(median))
                    print(_line(median), file=sys.stderr)
    cold_start = {
        name: cold_start_ms(statement, args.repeats * 2, environment)
        for name, statement in COLD_START_STATEMENTS.items()
    }
    report = {"results": rows, "cold_start_ms": cold_start, "limiter_achieved_per_second": limiter}
    print(json.dumps(report, indent=2) if args.json else _table(rows, cold_start, limiter))
    return 0


def _line(r: Result) -> str:
    return (
        f"{r.design:9} n={r.messages:5} latency={r.latency_ms:3} ms: {r.seconds:7.2f} s, "
        f"{r.per_second:7.1f} msg/s, {r.calls_per_message:.3f} calls/msg, "
        f"{r.billable_per_message:.3f} billable/msg, ${r.cost_per_million_usd:.2f} per million"
    )


def _table(rows: list[dict[str, Any]], cold_start: dict[str, float], limiter: dict[str, float]) -> str:
    columns = [
        "design",
        "messages",
        "latency/call",
        "wall time",
        "msg/s",
        "API calls/msg",
        "billable/msg",
        "$/1M msgs",
    ]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append(
            f"| {r['design']} | {r['messages']} | {r['latency_ms']} ms | {r['seconds']} s "
            f"| {r['per_second']} | {r['calls_per_message']} | {r['billable_per_message']} "
            f"| {r['cost_per_million_usd']} |"
        )
    lines += [
        "",
        f"cold start in the Lambda environment (median, minus an empty interpreter), ms: {cold_start}",
        f"rate limiter, setting -> achieved messages/s (at least 200 messages and 4 s): {limiter}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
