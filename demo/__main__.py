"""Run the demo: `python -m demo [--orders N] [--poison N] [--outage-seconds S] [--seed N] [--kit-only]
[--json] [--keep]`. Act 1, in real time: a consumer with the consumer kit (demo/kit_act.py). Then, on
the same local AWS, another kind of DLQ: a Lambda function's asynchronous failures
(demo/function_act.py). Act 2, in simulated time: a consumer without the kit, judged by its queue's
metrics (demo/no_kit_act.py). With --keep, act 1's world stays up afterwards, its consumer and
schedule running and the web console on it, until Ctrl-C (demo/keep.py)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from typing import IO

from demo.function_act import FunctionAct, FunctionOptions, run_function_act
from demo.keep import keep, stop_the_cdk_runtime
from demo.kit_act import KitAct, KitOptions
from demo.no_kit_act import NoKitAct, NoKitOptions, run_no_kit_act
from demo.operator import OperatorTool
from demo.report import Report
from local_aws import REGION
from local_aws.cloudformation import Deployment, deploy
from local_aws.server import moto_server

DEMO_PROFILE = {"redriver-profile": "demo"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    defaults = KitOptions()
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__)
    parser.add_argument("--orders", type=int, default=defaults.orders, help="orders the producer sends")
    parser.add_argument("--poison", type=int, default=defaults.poison, help="orders that can never succeed")
    parser.add_argument(
        "--outage-seconds", type=float, default=defaults.outage_seconds, help="downstream outage length"
    )
    parser.add_argument(
        "--outage-start", type=float, default=defaults.outage_start_seconds, help="outage start (s)"
    )
    parser.add_argument(
        "--produce-seconds", type=float, default=defaults.produce_seconds, help="sending spread (s)"
    )
    parser.add_argument(
        "--tick-seconds", type=float, default=defaults.tick_seconds, help="one re-driver run per tick"
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=defaults.time_limit_seconds,
        help="give up on a part (the story, the replay, the function act) not settled after (s)",
    )
    parser.add_argument("--seed", type=int, default=defaults.seed, help="random seed of the orders")
    parser.add_argument(
        "--kit-only",
        action="store_true",
        help="skip act 2 (a consumer without the kit, in simulated time: about 20 s)",
    )
    parser.add_argument("--json", action="store_true", help="print only the final report, as JSON")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="after act 1, keep its world (local AWS, consumer, schedule) and serve the web console on it "
        "until Ctrl-C (skips act 2)",
    )
    args = parser.parse_args(argv)
    if args.keep and args.json:
        parser.error("--keep prints a URL and commands for a person: drop --json")
    if not 0 <= args.poison <= args.orders:
        parser.error("--poison must be between 0 and --orders")
    return args


def run(args: argparse.Namespace, log: IO[str]) -> Report:
    options = KitOptions(
        orders=args.orders,
        poison=args.poison,
        produce_seconds=args.produce_seconds,
        outage_start_seconds=args.outage_start,
        outage_seconds=args.outage_seconds,
        tick_seconds=args.tick_seconds,
        time_limit_seconds=args.time_limit,
        seed=args.seed,
    )
    with moto_server() as endpoint:
        deployment = deploy(DEMO_PROFILE)
        if args.json:
            tool = OperatorTool(endpoint, REGION, deployment.stack_name, json=True)
            report = KitAct(deployment, options, log, tool).run()
            report.log_file = log.name
            report.add_function_act(run_function(deployment, args, json=True))
            return report
        from demo.view import KitLiveView, console, print_report  # rich only for a person

        # The tool's tables are printed after the live view, on the same terminal.
        tool = OperatorTool(
            endpoint,
            REGION,
            deployment.stack_name,
            json=False,
            color=console.is_terminal,
            columns=console.width,
        )
        act = KitAct(deployment, options, log, tool)
        with KitLiveView(deployment, options) as view:
            report = act.run(view.update)
        report.log_file = log.name
        print_report(report)  # act 1's, before act 2 starts (or the world is kept)
        report.add_function_act(run_function(deployment, args, json=False))
        if args.keep:
            # Act 2 plays in in-process moto, whose backends this server shares: it would wipe
            # what is kept. The real terminal: stdout is the log meanwhile.
            out = sys.__stdout__ or sys.stdout
            keep(act, endpoint, REGION, deployment.stack_name, out, function_act=report.function_act)
    if args.keep:
        print(
            "stopped: the consumer, the schedule, the web console and the demo's local AWS",
            file=sys.__stdout__,
        )
    return report


def run_function(deployment: Deployment, args: argparse.Namespace, *, json: bool) -> FunctionAct:
    """The function act, on act 1's local AWS (its moto server still up), after act 1's report."""
    options = FunctionOptions(tick_seconds=args.tick_seconds, time_limit_seconds=args.time_limit)
    if json:
        return run_function_act(deployment, options)
    from demo.function_view import FunctionLiveView, announce_function_act, print_function_act

    announce_function_act()
    with FunctionLiveView(options) as view:
        act = run_function_act(deployment, options, view.update)
    print_function_act(act)
    return act


def run_no_kit(args: argparse.Namespace) -> NoKitAct:
    """Act 2, after act 1 (its moto server stopped): a world of its own, in simulated time."""
    options = NoKitOptions(seed=args.seed)
    if args.json:
        return run_no_kit_act(options)
    from demo.no_kit_view import NoKitLiveView, announce_no_kit_act, print_no_kit_act

    announce_no_kit_act()
    with NoKitLiveView(options) as view:
        act = run_no_kit_act(options, view.update)
    print_no_kit_act(act)
    return act


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        with tempfile.NamedTemporaryFile("w", prefix="redriver-demo-", suffix=".log", delete=False) as log:
            # moto's and the handlers' console output (warnings for what moto does not emulate, EMF
            # metrics, JSON logs) goes to the log; the views draw on the real terminal.
            with redirect_stdout(log), redirect_stderr(log):
                report = run(args, log)
                if not (args.kit_only or args.keep):
                    report.add_no_kit_act(run_no_kit(args))
    except KeyboardInterrupt:  # Ctrl-C: what was running has stopped on its way out
        stop_the_cdk_runtime()
        print(f"interrupted (handler logs: {log.name})", file=sys.stderr)
        return 130
    if args.json:
        print(report.to_json())
    return 0 if report.balanced else 1


if __name__ == "__main__":
    sys.exit(main())
