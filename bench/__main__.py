"""`make bench`: drain the same DLQ with the published design and with this re-driver, on one moto
server, counting every AWS request with botocore event hooks; optionally with a fixed latency added
to every request (closer to real AWS than moto's local calls).

    python -m bench [--sizes 200 500] [--repeats 3] [--latency-ms 0 20] [--limiter-rates 10 50 200] [--json]

`--recovery` runs, instead, the recovery scenarios in simulated time (bench/recovery.py):

    python -m bench --recovery [--scenarios outage-60 outage-120 poison poison-then-fresh lone-poison
        partial-outage]
        [--kits off on silent] [--json]

`--baselines` runs one outage and backlog re-driven by each design (bench/recovery_compare.py),
measured in simulated time and predicted by a model, then predicted at 40,000 messages:

    python -m bench --baselines [--backlogs 500 1000] [--outage-minutes 90] [--designs ...] [--json]

`--backlog-drains` drains a DLQ already holding a backlog (bench/backlog_compare.py), in simulated
time, against the model and the target, then predicted at 40,000 messages:

    python -m bench --backlog-drains [--drain-sizes 1200 3000] [--json]

`--operator` measures the operator's tool on a parking lot (bench/operator.py):

    python -m bench --operator [--lot-sizes 200 1000] [--replay-rate 50] [--json]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import asdict
from typing import Any

from bench import backlog_compare, operator, recovery, recovery_compare
from bench.cold_start import cold_starts, lambda_environment, runtime_python
from bench.measurements import DESIGNS, limiter_messages, limiter_rate, measure
from bench.recovery import KITS, SCENARIOS
from bench.report import progress_line, render
from local_aws.server import moto_server


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency-ms", type=int, nargs="+", default=[0, 20])
    parser.add_argument("--limiter-rates", type=int, nargs="*", default=[10, 50, 200])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--recovery", action="store_true", help="run the recovery scenarios in simulated time instead"
    )
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument(
        "--kits",
        nargs="+",
        choices=list(KITS),
        default=list(KITS),
        help="recovery scenarios without (off) and/or with (on) the consumer kit",
    )
    parser.add_argument(
        "--baselines",
        action="store_true",
        help="run the recovery benchmark against the baselines in simulated time instead",
    )
    parser.add_argument("--backlogs", type=int, nargs="+", default=[500, 1000])
    parser.add_argument(
        "--backlog-drains",
        action="store_true",
        help="drain a DLQ already holding a backlog in simulated time, against the model, instead",
    )
    parser.add_argument("--drain-sizes", type=int, nargs="+", default=[1200, 3000])
    parser.add_argument(
        "--operator", action="store_true", help="measure the operator's tool on a parking lot instead"
    )
    parser.add_argument("--lot-sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--replay-rate", type=float, default=50)
    parser.add_argument("--outage-minutes", type=float, default=90)
    parser.add_argument(
        "--designs",
        nargs="+",
        choices=list(recovery_compare.DESIGNS),
        default=list(recovery_compare.DESIGNS),
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.operator:
        print(operator.render(operator.run(args.lot_sizes, args.replay_rate), as_json=args.json))
        return 0
    if args.backlog_drains:
        print(backlog_compare.render(backlog_compare.run(args.drain_sizes), as_json=args.json))
        return 0
    if args.baselines:
        report = recovery_compare.run(args.backlogs, args.outage_minutes, args.designs)
        print(recovery_compare.render(report, as_json=args.json))
        return 0
    if args.recovery:
        print(recovery.render(recovery.run(args.scenarios, args.kits), as_json=args.json))
        return 0
    runtime_python()  # fail now, not after the drains, when the runtime venv is not built

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
                for design in DESIGNS:
                    runs = [measure(endpoint, design, messages, latency_ms) for _ in range(args.repeats)]
                    median = sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]
                    rows.append(asdict(median))
                    print(progress_line(median), file=sys.stderr)
    cold_start = cold_starts(args.repeats * 2, environment)
    report = {"results": rows, "cold_start_ms": cold_start, "limiter_achieved_per_second": limiter}
    print(render(report, as_json=args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
