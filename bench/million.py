"""`python -m bench.million`: a million dead letters drained by the default stack's re-driver, in
simulated time (bench.million_model: the re-driver's own pace, width, slow start and breaker over a
model of SQS, Lambda and the consumer), and what it costs.

    python -m bench.million [--scenarios fast slow outage outage-slow outage-nokit single]
                            [--messages 1000000] [--worker-cpu-ms MS] [--json]

- ``fast``: a consumer of 200 concurrent invocations of 1 s a batch of 10: 2,000 messages a second;
- ``slow``: 20 of them: 200 messages a second;
- ``outage`` / ``outage-slow``: the fast / slow consumer fails every message it handles for 15
  minutes from the moment half the messages were re-driven;
- ``outage-nokit``: the fast consumer's outage, the consumer without the kit (no verdicts: one
  chain drains, as ``fans_out`` wants);
- ``single``: the fast consumer drained by one chain of runs (MAX_WORKERS 1): what draining cost
  before workers.

Every consumer's pollers scale as AWS documents (``poller_ramp``), and a worker moves no more than
its function's share of a vCPU allows at the CPU a re-drive costs it, measured first on moto by
bench.worker_cpu (or ``--worker-cpu-ms``). Targets: ``fast`` empty within 12 minutes (issue 34);
``slow`` never an oldest message older than 2 minutes and no throttling; ``outage`` at most 600
re-driven deliveries into it, ``outage-slow`` at most 70, ``outage-nokit`` no more than one chain
sends (issue 40). Besides the table, one line per scenario for scripts:
``million: scenario=... key=value ...``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench.cost import Prices
from bench.million_model import MB_PER_VCPU, Consumer, Figures, MillionWorld, Outage, Stack
from bench.report import scenario_table
from sqs_redriver.runtime.settings import load_settings

MESSAGES = 1_000_000
PRICES = Prices()
FAST, SLOW = Consumer(concurrency=200), Consumer(concurrency=20)
OUTAGE = Outage(after_fraction=0.5, minutes=15)
Scenario = Callable[[Stack, int, float], MillionWorld]  # the stack, messages, the CPU a message costs
SCENARIOS: dict[str, Scenario] = {
    "fast": lambda stack, n, cpu: MillionWorld(stack, FAST, n, cpu_ms_per_msg=cpu),
    "slow": lambda stack, n, cpu: MillionWorld(stack, SLOW, n, cpu_ms_per_msg=cpu),
    "outage": lambda stack, n, cpu: MillionWorld(stack, FAST, n, outage=OUTAGE, cpu_ms_per_msg=cpu),
    "outage-slow": lambda stack, n, cpu: MillionWorld(stack, SLOW, n, outage=OUTAGE, cpu_ms_per_msg=cpu),
    "outage-nokit": lambda stack, n, cpu: MillionWorld(
        without_kit(stack), FAST, n, outage=OUTAGE, kit=False, cpu_ms_per_msg=cpu
    ),
    "single": lambda stack, n, cpu: MillionWorld(stack, FAST, n, max_workers=1, cpu_ms_per_msg=cpu),
}
PLACEHOLDER_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/{}"
# What one call costs in DynamoDB's units: a consistent read of up to 4 KiB is one read unit, so the
# worker's BatchGetItem of three records is three; a write of up to 1 KiB one write unit.
READ_UNITS = {"BatchGetItem": 3, "GetItem": 1}
WRITE_UNITS = {"PutItem": 1}
# Per run, not counted by the model: Powertools idempotency's put and update, and one GetMetricData
# of the consumer's metrics (5 metrics: BENCHMARKS.md, "The cost of the metric reads").
WRITES_PER_RUN = 2
METRICS_READ_PER_RUN = 5
SQS_OPERATIONS = ("ReceiveMessage", "SendMessageBatch", "DeleteMessageBatch", "GetQueueAttributes")


@dataclass(frozen=True)
class Cost:
    """Dollars per million re-driven messages, by service."""

    sqs: float
    dynamodb: float
    lambda_: float
    cloudwatch: float
    kit_verdicts: float  # the consumer kit's verdict writes: the consumer's, caused by the re-drives

    @property
    def total(self) -> float:
        return self.sqs + self.dynamodb + self.lambda_ + self.cloudwatch


def without_kit(stack: Stack) -> Stack:
    """The stack with a consumer that does not report verdicts (no grant_consumer)."""
    return replace(stack, settings=replace(stack.settings, consumer_verdicts=False))


def stack_from_template(template: Mapping[str, Any]) -> Stack:
    """The re-driver's settings and what the model needs of the deployed stack, from its template."""
    resources = list(template["Resources"].values())
    [function] = [
        r["Properties"]
        for r in resources
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("Handler") == "sqs_redriver.runtime.handler.lambda_handler"
    ]
    env = {
        name: value if isinstance(value, str) else _placeholder(name)
        for name, value in function["Environment"]["Variables"].items()
    }
    [source] = [
        r["Properties"]
        for r in resources
        if r["Type"] == "AWS::SQS::Queue" and "RedrivePolicy" in r["Properties"]
    ]
    [schedule] = [
        r["Properties"]["ScheduleExpression"] for r in resources if r["Type"] == "AWS::Events::Rule"
    ]
    amount, unit = schedule.removeprefix("rate(").removesuffix(")").split(" ")
    return Stack(
        settings=load_settings(env),
        source_visibility_timeout=int(source["VisibilityTimeout"]),
        max_receive_count=int(source["RedrivePolicy"]["maxReceiveCount"]),
        schedule_seconds=int(amount) * (60 if unit.startswith("minute") else 3600),
        function_timeout=int(function["Timeout"]),
        memory_mb=int(function["MemorySize"]),
    )


def _placeholder(name: str) -> str:
    """A value for a variable the template resolves at deploy (a queue URL, a table or a function
    name): the model reads none of them."""
    subject = name.lower().replace("_", "-")
    return PLACEHOLDER_URL.format(subject) if "URL" in name else subject


def cost_per_million(figures: Figures, stack: Stack, *, kit: bool, prices: Prices = PRICES) -> Cost:
    requests, scale = figures.requests, 1e6 / figures.messages
    sqs = sum(requests[op] for op in SQS_OPERATIONS) * prices.sqs_request
    reads = sum(requests[op] * units for op, units in READ_UNITS.items())
    writes = sum(requests[op] * units for op, units in WRITE_UNITS.items()) + figures.runs * WRITES_PER_RUN
    dynamodb = reads * prices.dynamodb_read_unit + writes * prices.dynamodb_write_unit
    gb_seconds = figures.run_seconds * stack.memory_mb / 1024
    invocations = figures.runs + requests["Invoke"]
    lambda_ = gb_seconds * prices.lambda_gb_second_arm64 + invocations * prices.lambda_request
    cloudwatch = figures.runs * METRICS_READ_PER_RUN * prices.get_metric_data_metric
    verdicts = figures.deliveries * prices.dynamodb_write_unit if kit else 0.0
    return Cost(*(round(x * scale, 4) for x in (sqs, dynamodb, lambda_, cloudwatch, verdicts)))


@dataclass(frozen=True)
class Result:
    scenario: str
    world: MillionWorld
    figures: Figures
    cost: Cost
    wall_seconds: float


def run(names: Sequence[str], stack: Stack, messages: int, cpu_ms_per_msg: float) -> list[Result]:
    results = []
    for name in names:
        started = time.perf_counter()
        world = SCENARIOS[name](stack, messages, cpu_ms_per_msg)
        figures = world.run()
        cost = cost_per_million(figures, stack, kit=world.kit)
        results.append(Result(name, world, figures, cost, round(time.perf_counter() - started, 1)))
    return results


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


ROWS: list[tuple[str, Callable[[Result], Any]]] = [
    ("messages", lambda r: f"{r.figures.messages:,}"),
    ("consumer capacity (msg/s)", lambda r: f"{r.figures.capacity:,.0f}"),
    ("DLQ empty, every message delivered (min)", lambda r: _minutes(r.figures.drained_s)),
    (
        "peak / mean re-drive rate (msg/s)",
        lambda r: f"{r.figures.peak_rate:,.0f} / {r.figures.mean_rate:,.0f}",
    ),
    ("most workers at once", lambda r: r.figures.workers_max),
    ("source queue's oldest message, highest age (s)", lambda r: f"{r.figures.oldest_age_max_s:,.0f}"),
    ("consumer invocations throttled", lambda r: r.figures.throttled),
    ("pace steps that found the consumer stalled", lambda r: r.figures.stalls),
    ("re-drives sent into the outage", lambda r: _outage(r, r.figures.redrives_into_outage)),
    ("re-driven deliveries into the outage", lambda r: _outage(r, r.figures.deliveries_into_outage)),
    (
        "... of them visible when it began / in progress then (fail in it)",
        lambda r: (
            _outage(r, r.figures.backlog_at_outage) + " / " + _outage(r, r.figures.in_progress_at_outage)
        ),
    ),
    ("outage began -> breaker opened (s)", lambda r: _opened(r.figures)),
    ("outage ended -> re-drives again / at half capacity (min)", lambda r: _resumed(r.figures)),
    ("runs (Lambda invocations)", lambda r: f"{r.figures.runs:,}"),
    (
        "re-driver's requests per message",
        lambda r: f"{sum(r.figures.requests.values()) / r.figures.messages:.3f}",
    ),
    ("cost per million: SQS / DynamoDB / Lambda / CloudWatch ($)", lambda r: _cost(r.cost)),
    ("cost per million, total ($)", lambda r: f"{r.cost.total:.3f}"),
    ("... and the kit's verdict writes, the consumer's ($)", lambda r: f"{r.cost.kit_verdicts:.3f}"),
    ("wall (s)", lambda r: r.wall_seconds),
]


def _outage(result: Result, value: float) -> str:
    return "-" if result.figures.outage_start_s is None else f"{value:,.0f}"


def _opened(figures: Figures) -> str:
    if figures.outage_start_s is None or figures.breaker_opened_s is None:
        return "-"
    return f"{figures.breaker_opened_s - figures.outage_start_s:.2f}"


def _resumed(figures: Figures) -> str:
    if figures.outage_start_s is None:
        return "-"
    return f"{_minutes(figures.resumed_after_s)} / {_minutes(figures.at_capacity_after_s)}"


def _cost(cost: Cost) -> str:
    return f"{cost.sqs:.3f} / {cost.dynamodb:.3f} / {cost.lambda_:.3f} / {cost.cloudwatch:.3f}"


def line(result: Result) -> str:
    """The scenario's line for scripts."""
    f = result.figures
    fields = {
        "scenario": result.scenario,
        "messages": f.messages,
        "capacity": round(f.capacity),
        "drained_s": "none" if f.drained_s is None else round(f.drained_s, 1),
        "peak_rate": round(f.peak_rate),
        "mean_rate": round(f.mean_rate),
        "workers_max": f.workers_max,
        "oldest_age_max_s": round(f.oldest_age_max_s, 1),
        "throttled": f.throttled,
        "deliveries_into_outage": round(f.deliveries_into_outage),
        "redrives_into_outage": round(f.redrives_into_outage),
        "backlog_at_outage": round(f.backlog_at_outage),
        "resumed_after_s": "none" if f.resumed_after_s is None else round(f.resumed_after_s, 1),
        "cost_per_million_usd": f"{result.cost.total:.4f}",
        "worker_cpu_ms_per_msg": result.world.cpu_ms_per_msg,
        "vcpu_share": round(result.world.stack.memory_mb / MB_PER_VCPU, 3),
        "worker_rate": round(result.world.worker_rate, 1),
        "poller_ramp": int(result.world.poller_ramp),
    }
    return "million: " + " ".join(f"{key}={value}" for key, value in fields.items())


def render(results: Sequence[Result], *, as_json: bool) -> str:
    if as_json:
        return json.dumps([_as_dict(r) for r in results], indent=2)
    table = scenario_table([r.scenario for r in results], ROWS, results)
    return "\n".join([*table, "", *(line(r) for r in results)])


def _as_dict(result: Result) -> dict[str, Any]:
    figures = {k: v for k, v in vars(result.figures).items() if k != "requests"}
    figures["requests"] = {op: round(n, 1) for op, n in result.figures.requests.items()}
    return {
        "scenario": result.scenario,
        "figures": figures,
        "cost": vars(result.cost),
        "wall_s": result.wall_seconds,
    }


def default_stack_model() -> Stack:
    from local_aws.simulation import default_stack  # synthesizes: only when run

    return stack_from_template(default_stack().template)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.million", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument(
        "--worker-cpu-ms",
        type=float,
        help="the CPU (ms) one re-drive costs a worker; measured by bench.worker_cpu when not given",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    cpu_ms = args.worker_cpu_ms or measured_cpu_ms()
    print(render(run(args.scenarios, default_stack_model(), args.messages, cpu_ms), as_json=args.json))
    return 0


def measured_cpu_ms() -> float:
    """The CPU one re-drive costs a worker, measured now on moto (bench.worker_cpu)."""
    from bench.worker_cpu import measure

    figures = measure(messages=2_000, repeats=3)
    print(f"worker CPU: {figures.cpu_ms_per_msg} ms a message {figures.repeats}", file=sys.stderr)
    return figures.cpu_ms_per_msg


if __name__ == "__main__":
    sys.exit(main())
