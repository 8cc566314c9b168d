"""`python -m bench.cost`: what one re-driver of the default stack costs a month in us-east-1, at a
given number of dead letters a month, from AWS's published on-demand prices (``Prices``), free tiers
left out. The inputs, each from where it is known:

- the synthesized default stack (``Deployment.from_template``): alarms, dashboards, the schedule,
  the function's memory, architecture, tracing and settings;
- the function measured (bench.idle_run, ``IdleRun.measure``): one scheduled run of the real handler
  on an empty DLQ, as deployed into moto: its AWS requests, the bytes it logs, its custom metrics;
- the requests per re-drive of the backlog drains (BENCHMARKS.md, "Backlog drains at the rate
  limit": 0.317 and 0.314 requests per message, a receive, a send and a delete per 10 messages);
- the assumptions in ``Assumed``, each named in the printed notes.

    python -m bench.cost [--dead-letters 0 10000 1000000] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

SECONDS_PER_MONTH = 30 * 24 * 3600
GB = 1024**3
REDRIVER_HANDLER = "sqs_redriver.runtime.handler.lambda_handler"
RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86_400}
SQS_OPERATIONS = {"ReceiveMessage", "SendMessageBatch", "DeleteMessageBatch", "GetQueueAttributes"}


@dataclass(frozen=True)
class Prices:
    """Published on-demand prices, us-east-1 (checked 2026-11), in dollars."""

    sqs_request: float = 0.40 / 1e6
    lambda_request: float = 0.20 / 1e6
    lambda_gb_second_arm64: float = 0.0000133334
    lambda_gb_second_x86: float = 0.0000166667
    dynamodb_write_unit: float = 0.625 / 1e6
    dynamodb_read_unit: float = 0.125 / 1e6
    dashboard_month: float = 3.00
    alarm_month: float = 0.10  # a standard-resolution alarm on one metric
    custom_metric_month: float = 0.30  # the first 10,000 metrics
    get_metric_data_metric: float = 0.01 / 1000  # per metric requested
    logs_ingested_gb: float = 0.50
    logs_stored_gb_month: float = 0.03
    xray_trace: float = 5.00 / 1e6  # per trace recorded


@dataclass(frozen=True)
class Assumed:
    """What is not measured here, stated."""

    seconds_per_aws_call: float = 0.015  # an idle run's calls, one after another
    platform_log_bytes: int = 600  # Lambda's JSON platform.start and platform.report records
    redrives_per_dead_letter: float = 1.0  # the consumer takes it on the first re-drive
    requests_per_redrive: float = 0.317  # the backlog drains', almost all SQS (BENCHMARKS.md)
    # The function's metrics read per run with messages to judge: the source queue's 2 and, with a
    # known consumer function, its 3 (BENCHMARKS.md, "The cost of the metric reads").
    metrics_per_read: int = 5


@dataclass(frozen=True)
class Deployment:
    """What one re-driver is billed for, from the synthesized template."""

    alarms: int
    dashboards: int
    runs_per_month: float
    memory_gb: float
    arm64: bool
    traced: bool
    receive_wait_seconds: float
    redrives_per_second: float
    queue_metrics: bool

    @classmethod
    def from_template(cls, template: Mapping[str, Any]) -> Deployment:
        resources = list(template["Resources"].values())
        kinds = [r["Type"] for r in resources]
        [function] = [
            r["Properties"]
            for r in resources
            if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == REDRIVER_HANDLER
        ]
        [schedule] = [
            r["Properties"]["ScheduleExpression"] for r in resources if r["Type"] == "AWS::Events::Rule"
        ]
        env = function["Environment"]["Variables"]
        return cls(
            alarms=kinds.count("AWS::CloudWatch::Alarm"),
            dashboards=kinds.count("AWS::CloudWatch::Dashboard"),
            runs_per_month=SECONDS_PER_MONTH / schedule_seconds(schedule),
            memory_gb=function.get("MemorySize", 128) / 1024,
            arm64=function.get("Architectures") == ["arm64"],
            traced=function.get("TracingConfig", {}).get("Mode") == "Active",
            receive_wait_seconds=float(env["RECEIVE_WAIT_SECONDS"]),
            redrives_per_second=float(env["MAX_REDRIVES_PER_SECOND"]),
            queue_metrics=env.get("QUEUE_METRICS", "true") == "true",
        )


def schedule_seconds(expression: str) -> int:
    """The period of an EventBridge ``rate(...)`` expression; ValueError for any other."""
    found = RATE.match(expression)
    if found is None:
        raise ValueError(f"schedule {expression!r}: only rate(...) has a fixed number of runs a month")
    return int(found[1]) * UNIT_SECONDS[found[2].rstrip("s")]


@dataclass(frozen=True)
class IdleRun:
    """One scheduled run on an empty DLQ, measured (the last of bench.idle_run's: warm, with the
    run history in the state table full)."""

    requests: Mapping[str, int]
    read_units: float
    write_units: float
    log_bytes: int  # what the handler printed, a run on average: log lines and EMF metrics
    custom_metrics: int  # distinct (namespace, dimensions, name) in its EMF lines

    @property
    def sqs_requests(self) -> int:
        return sum(n for op, n in self.requests.items() if op in SQS_OPERATIONS)

    @classmethod
    def from_output(cls, stdout: str, runs: Sequence[Mapping[str, Any]]) -> IdleRun:
        """bench.idle_run's output: its stdout and its summary of each run."""
        metrics = set()
        for line in stdout.splitlines():
            if '"_aws"' not in line:
                continue
            for directive in json.loads(line)["_aws"]["CloudWatchMetrics"]:
                for dimensions in directive["Dimensions"]:
                    for metric in directive["Metrics"]:
                        metrics.add((directive["Namespace"], tuple(dimensions), metric["Name"]))
        last = runs[-1]
        return cls(
            requests=last["requests"],
            read_units=last["read_units"],
            write_units=last["write_units"],
            log_bytes=len(stdout.encode()) // len(runs),
            custom_metrics=len(metrics),
        )

    @classmethod
    def measure(cls) -> IdleRun:
        """bench.idle_run in a process of its own."""
        with tempfile.TemporaryDirectory() as directory:
            summary_path = Path(directory) / "summary.json"
            done = subprocess.run(
                [sys.executable, "-m", "bench.idle_run", str(summary_path)],
                capture_output=True,
                text=True,
                check=True,
            )
            return cls.from_output(done.stdout, json.loads(summary_path.read_text()))


def monthly(
    deployment: Deployment,
    idle: IdleRun,
    dead_letters: float,
    *,
    prices: Prices = Prices(),
    assumed: Assumed = Assumed(),
) -> dict[str, float]:
    """Each line of the month's bill, in dollars, for ``dead_letters`` a month (each re-driven
    ``assumed.redrives_per_dead_letter`` times, spread over the month's runs)."""
    runs = deployment.runs_per_month
    redrives = dead_letters * assumed.redrives_per_dead_letter
    calls = sum(idle.requests.values())
    run_seconds = deployment.receive_wait_seconds + calls * assumed.seconds_per_aws_call
    redrive_seconds = redrives / deployment.redrives_per_second
    gb_second = prices.lambda_gb_second_arm64 if deployment.arm64 else prices.lambda_gb_second_x86
    log_gb = runs * (idle.log_bytes + assumed.platform_log_bytes) / GB
    # Each dead letter in a run of its own at most: a run with messages reads the metrics once.
    reads = min(runs, dead_letters) if deployment.queue_metrics else 0
    return {
        "dashboard": deployment.dashboards * prices.dashboard_month,
        "alarms": deployment.alarms * prices.alarm_month,
        "custom metrics": idle.custom_metrics * prices.custom_metric_month,
        "metric reads (GetMetricData)": reads * assumed.metrics_per_read * prices.get_metric_data_metric,
        "Lambda requests": runs * prices.lambda_request,
        "Lambda duration": (runs * run_seconds + redrive_seconds) * deployment.memory_gb * gb_second,
        "SQS requests": (runs * idle.sqs_requests + redrives * assumed.requests_per_redrive)
        * prices.sqs_request,
        "DynamoDB": runs
        * (idle.write_units * prices.dynamodb_write_unit + idle.read_units * prices.dynamodb_read_unit),
        "CloudWatch Logs": log_gb * (prices.logs_ingested_gb + prices.logs_stored_gb_month),
        "X-Ray traces": runs * prices.xray_trace if deployment.traced else 0.0,
    }


def render(deployment: Deployment, idle: IdleRun, volumes: Sequence[float], *, as_json: bool) -> str:
    bills = {volume: monthly(deployment, idle, volume) for volume in volumes}
    if as_json:
        report = {"deployment": asdict(deployment), "idle_run": asdict(idle), "assumed": asdict(Assumed())}
        report["monthly"] = {f"{v:g}": bill for v, bill in bills.items()}
        return json.dumps(report, indent=2)
    header = ["dead letters a month", *(f"{v:,.0f}" for v in volumes)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for item in bills[volumes[0]]:
        lines.append("| " + " | ".join([item, *(dollars(bills[v][item]) for v in volumes)]) + " |")
    lines.append("| **total** | " + " | ".join(f"**${sum(bills[v].values()):.2f}**" for v in volumes) + " |")
    lines += ["", *options_table(deployment, idle, volumes)]
    lines += [
        "",
        f"deployment: {asdict(deployment)}",
        f"idle run (warm, measured): {idle.requests}, {idle.log_bytes} log bytes, {idle.read_units:g} "
        f"read and {idle.write_units:g} write units, {idle.custom_metrics} custom metrics",
        f"assumed: {asdict(Assumed())}",
    ]
    return "\n".join(lines)


# docs/cost.md's "What cuts it": each option as the deployment it makes.
OPTIONS: dict[str, dict[str, Any]] = {
    "the defaults": {},
    "`monitoring=False`": {"alarms": 0, "dashboards": 0},
    '`schedule="rate(15 minutes)"`': {"runs_per_month": 30 * 24 * 4},
    '`schedule="rate(1 hour)"`': {"runs_per_month": 30 * 24},
    "`queue_metrics=False`": {"queue_metrics": False},
    "`redriver_memory_mb=256`": {"memory_gb": 256 / 1024},
}


def options_table(deployment: Deployment, idle: IdleRun, volumes: Sequence[float]) -> list[str]:
    """The monthly total of each option of OPTIONS, at each volume."""
    lines = ["| option | monthly total (" + " / ".join(f"{v:,.0f}" for v in volumes) + ") |", "|---|---|"]
    for option, changes in OPTIONS.items():
        changed = replace(deployment, **changes)
        totals = " / ".join(f"${sum(monthly(changed, idle, v).values()):.2f}" for v in volumes)
        lines.append(f"| {option} | {totals} |")
    return lines


def dollars(amount: float) -> str:
    """Cents, or a tenth of a cent below one: a line is never shown as nothing when it is not."""
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cost", description=__doc__)
    parser.add_argument("--dead-letters", type=float, nargs="+", default=[0, 10_000, 1_000_000])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from local_aws.simulation import default_stack  # synthesizes: only when run

    deployment = Deployment.from_template(default_stack().template)
    print(render(deployment, IdleRun.measure(), args.dead_letters, as_json=args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
