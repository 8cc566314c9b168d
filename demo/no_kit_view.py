"""The second act's live view and report, with rich (demo/no_kit_act.py)."""

from __future__ import annotations

from collections import Counter

from rich.markup import escape
from rich.table import Table

from demo.no_kit_act import NoKitAct, NoKitOptions, NoKitProgress
from demo.view import BREAKER_STYLE, LiveTable, console

TITLE = "Act 2: a consumer without the kit"


class NoKitLiveView(LiveTable[NoKitProgress]):
    def __init__(self, options: NoKitOptions) -> None:
        self._title = (
            f"Simulated time: {options.good} good orders and {options.poison} poison sent at minute 0, "
            f"nothing after (up to {options.cap_minutes:g} simulated minutes)"
        )
        super().__init__(NoKitProgress())

    def _render(self, p: NoKitProgress) -> Table:
        table = Table(title=self._title, show_header=False, min_width=90)
        table.add_row("simulated time", f"minute {p.minutes:5.1f}")
        table.add_row("good orders fulfilled", str(p.fulfilled))
        table.add_row("source queue / DLQ", f"{p.in_source} / {p.in_dlq}")
        table.add_row("parked", str(p.parked))
        style = BREAKER_STYLE.get(p.breaker.state, "white")
        table.add_row("breaker (evidence)", f"[{style}]{p.breaker.state}[/] ({p.breaker.evidence})")
        table.add_row("re-driver runs", str(p.runs))
        return table


def announce_no_kit_act() -> None:
    """What the second act is, before it starts."""
    console.print()
    console.rule(f"[bold]{TITLE}[/]")
    console.print(
        "Without the kit nobody tells the re-driver why a message failed: it reads the source queue's "
        "CloudWatch metrics, which arrive minutes late, on the default stack's schedule. That takes "
        "about an hour, so this act runs in [bold]simulated time[/]: the default stack deployed into "
        "in-process moto, the real re-driver code, a consumer without the kit, the queue's metrics "
        "published late as AWS publishes them, and a clock that jumps from event to event."
    )


def print_no_kit_act(act: NoKitAct) -> None:
    """Where every order of the second act ended up, each parked one with its reason, the breaker."""
    console.print(
        f"\n[bold]{TITLE}[/]: {act.simulated_minutes:g} simulated minutes in {act.wall_seconds:g} s "
        f"(schedule {act.schedule}: {act.runs} re-driver runs, {act.redrives} re-drives; metrics "
        f"published {act.metrics_lag_seconds:g} s late; suspect limit {act.suspect_limit})"
    )
    for parked in act.parked:
        kind = "poison" if parked.poison else "[bold red]GOOD ORDER[/]"
        console.print(
            f"  parked {parked.order_id} ({kind}) at minute {parked.parked_at_minutes:g} after "
            f"{parked.redrives} re-drives, cause [bold]{escape(parked.cause)}[/]:\n"
            f"          {escape(parked.why)}"
        )
    fates = Counter(act.fates.values())
    console.print(
        f"  every order: {fates['fulfilled']} fulfilled ({act.good_orders} good), {fates['parked']} "
        f"parked ({act.poison_orders} poison), {fates['in a queue']} still in a queue, "
        f"{fates['lost']} lost"
    )
    console.print(f"  breaker: {_breaker(act)}")
    if not act.problems:
        console.print(
            "[bold green]The books balance: every good order fulfilled, every poison order parked "
            "on its queue's metrics, nothing lost.[/]"
        )
    for problem in act.problems:
        console.print(f"[bold red]PROBLEM[/] {escape(problem)}")


def _breaker(act: NoKitAct) -> str:
    now = act.breaker
    style = BREAKER_STYLE.get(now.state, "white")
    if not act.breaker_changes:
        return (
            f"[{style}]{now.state}[/] throughout, evidence [bold]{now.evidence}[/] (it never moved: "
            "a suspect never counts against the breaker)"
        )
    changes = ", ".join(f"{c.state} on {c.evidence} at minute {c.at_minutes:g}" for c in act.breaker_changes)
    return f"[{style}]{now.state}[/], evidence [bold]{now.evidence}[/] (changes: {changes})"
