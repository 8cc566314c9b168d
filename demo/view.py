"""The live terminal view and the final report, with rich."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Generic, Self, TypeVar

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from demo.kit_act import KitOptions, KitProgress
from demo.report import Report
from local_aws.cloudformation import Deployment

BREAKER_STYLE = {"CLOSED": "green", "HALF_OPEN": "yellow", "OPEN": "bold red"}
# The handlers' output is redirected to the log file while they run: draw on the real terminal.
console = Console(file=sys.__stdout__)
P = TypeVar("P")


class LiveTable(Generic[P]):
    """A table redrawn on the real terminal at each ``update``; subclasses say how to ``_render``
    their progress. No redirection: sys.stdout and sys.stderr already go to the log while the
    demo runs."""

    def __init__(self, initial: P) -> None:
        self._live = Live(
            self._render(initial),
            console=console,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def __enter__(self) -> Self:
        self._live.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._live.__exit__(kind, error, trace)

    def update(self, progress: P) -> None:
        self._live.update(self._render(progress), refresh=True)

    def _render(self, progress: P) -> Table:
        raise NotImplementedError


class KitLiveView(LiveTable[KitProgress]):
    def __init__(self, deployment: Deployment, options: KitOptions) -> None:
        self._title = (
            f"SQS smart re-driver, local demo. Act 1: a consumer with the kit, in real time: "
            f"{options.orders} orders, {options.poison} poison, "
            f"{options.outage_seconds:.0f} s downstream outage; schedule {deployment.schedule_expression} "
            f"emulated as one run per {options.tick_seconds:g} s"
        )
        super().__init__(KitProgress())

    def _render(self, p: KitProgress) -> Table:
        table = Table(title=self._title, show_header=False, min_width=90)
        table.add_row(
            "elapsed", f"{p.elapsed:5.1f} s" + ("   [bold red]downstream OUTAGE[/]" if p.outage else "")
        )
        table.add_row("orders sent", str(p.sent))
        table.add_row(
            "source: visible / in flight / delayed", f"{p.source_visible} / {p.in_flight} / {p.delayed}"
        )
        table.add_row("DLQ", str(p.dlq))
        table.add_row("parking lot", str(p.parking_lot))
        style = BREAKER_STYLE.get(p.breaker_state, "white")
        table.add_row("breaker", f"[{style}]{p.breaker_state}[/]")
        table.add_row(
            "re-driver runs / re-driven / canaries / parked",
            f"{p.runs} / {p.redriven} / {p.canaries} / {p.parked}",
        )
        if p.operator:
            table.add_row("operator", f"sqs-redriver {escape(p.operator)}")
        return table


def print_report(report: Report) -> None:
    _print_operator(report)
    table = Table(title="Act 1's final report: where every order ended up", show_header=False)
    table.add_row("orders", f"{report.orders} ({report.good_orders} good, {report.poison_orders} poison)")
    table.add_row("fulfilled exactly once", str(report.fulfilled_once))
    table.add_row("fulfilled more than once", str(len(report.fulfilled_more_than_once)))
    table.add_row("parked (with reason)", str(len(report.parked)))
    table.add_row(
        "poison replayed after the fix / fulfilled once",
        f"{report.replayed} / {report.fulfilled_after_replay}",
    )
    table.add_row("lost", str(len(report.lost)))
    table.add_row("breaker transitions", " -> ".join(_states(report.breaker_transitions)) or "none")
    table.add_row("re-drives / re-driver runs", f"{report.redriven} / {report.runs}")
    table.add_row("elapsed", f"{report.elapsed_seconds} s")
    table.add_row("handler logs", report.log_file)
    console.print(table)
    _print_poison(report)
    _print_outage(report)
    other = {
        i: why for i, why in report.parked.items() if i not in {p.order_id for p in report.poison_parked}
    }
    for order_id, why in sorted(other.items()):
        console.print(f"  parked {order_id} (not poison): {why}")
    if report.balanced:
        replayed = f" ({report.replayed} poison only after their fix and replay)" if report.replayed else ""
        console.print(
            "[bold green]The books balance: every order fulfilled exactly once"
            f"{replayed} or parked with its reason.[/]"
        )
    else:
        for problem in report.problems:
            console.print(f"[bold red]PROBLEM[/] {problem}")


def _print_operator(report: Report) -> None:
    """The tool's commands as an operator typed them, and what they printed."""
    if not report.operator_runs:
        return
    console.print()
    console.rule("[bold]The operator's view[/]: sqs-redriver on the demo's endpoint, by stack name")
    for run in report.operator_runs:
        console.print(
            f"[bold]$ {escape(run.command)}[/]" + ("" if run.ok else f"  [red](exit {run.exit_code})[/]")
        )
        console.print(Text.from_ansi(run.output.rstrip()))
        if run.data is not None and report.replayed_group:
            console.print(
                f"  the demo reads this JSON: group [bold]{escape(report.replayed_group)}[/] is the bug it "
                f"fixes ({escape(report.replayed_group_label)}); the fix goes into the consumer's "
                f"configuration: [bold]{escape(report.fix)}[/]"
            )
        if run.errors:
            console.print(Text(run.errors, style="red"))
    console.rule()


def _print_poison(report: Report) -> None:
    console.print(
        f"\n[bold]Poison[/]: {len(report.poison_parked)} of {report.poison_orders} parked at their "
        "first failure (the consumer kit's terminal verdict)"
    )
    for p in report.poison_parked:
        console.print(
            f"  {p.order_id}  failed at {p.failed_at:.1f} s (delivery {p.attempt}), parked at "
            f"{p.parked_at:.1f} s: cause [bold]{p.cause}[/], re-driven {p.redriven} times"
            + ("; [bold green]replayed after the fix[/]" if p.replayed else "")
            + "\n"
            f"          {escape(p.error_class.rpartition('.')[2])}: {escape(p.message)}  "
            f"fingerprint {escape(p.fingerprint)}"
        )
    groups = ", ".join(f"{fp} x{count}" for fp, count in sorted(report.fingerprints.items()))
    console.print(
        f"  grouped by fingerprint: {groups or 'none'}: {len(report.fingerprints)} fingerprint(s) "
        f"for the {report.poison_bugs} bug(s) the producer put in"
    )


def _print_outage(report: Report) -> None:
    start, end = report.outage_window
    console.print(f"\n[bold]Outage[/] from {start:.1f} s to {end:.1f} s (downstream unavailable)")
    errors = ", ".join(f"{name} x{count}" for name, count in sorted(report.transient_errors.items()))
    console.print(
        f"  {report.outage_failed_orders} good orders failed ({errors or 'none'}, transient); "
        f"{report.redriven_orders} re-driven, {report.redriven_fulfilled_once} of them fulfilled exactly once"
    )
    timeline = "  ".join(
        f"[{BREAKER_STYLE.get(state, 'white')}]{state}[/] {at:.1f}" for at, state in report.breaker_timeline
    )
    console.print(f"  breaker (state at s): {timeline}")
    opened = (
        "not opened" if report.breaker_opened_at is None else f"opened at {report.breaker_opened_at:.1f} s"
    )
    console.print(
        f"  {opened}{' (during the outage)' if report.opened_during_outage else ''}; "
        f"CLOSED {_seconds(report.closed_after_outage_seconds)} after the outage ended, "
        f"DLQ drained {_seconds(report.drained_after_outage_seconds)} after it"
    )


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


def _states(transitions: list[str]) -> list[str]:
    states = [transitions[0].split("->")[0]] if transitions else []
    return states + [t.split("->")[1] for t in transitions]
