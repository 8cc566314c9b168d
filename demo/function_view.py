"""The function act's live view and report, with rich (demo/function_act.py)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from demo.function_act import FUNCTION_NAME, FunctionAct, FunctionOptions, FunctionProgress
from demo.view import LiveTable, console

TITLE = f"A Lambda function's asynchronous failures ({FUNCTION_NAME})"


class FunctionLiveView(LiveTable[FunctionProgress]):
    def __init__(self, options: FunctionOptions) -> None:
        self._title = (
            f"{options.good + options.poison} notifications invoked asynchronously while the mail service "
            f"is down ({options.poison} for an order without an e-mail address); one re-driver run per "
            f"{options.tick_seconds:g} s"
        )
        super().__init__(FunctionProgress())

    def _render(self, p: FunctionProgress) -> Table:
        table = Table(title=self._title, show_header=False, min_width=90)
        service = "[green]up[/]" if p.mail_service_up else "[bold red]DOWN[/]"
        table.add_row("elapsed", f"{p.elapsed:5.1f} s   mail service {service}")
        table.add_row("invocations / destination records", f"{p.invocations} / {p.records}")
        table.add_row("DLQ / parking lot", f"{p.dlq} / {p.parking_lot}")
        table.add_row("re-driver runs / re-driven / parked", f"{p.runs} / {p.redriven} / {p.parked}")
        table.add_row("notifications e-mailed", str(p.delivered))
        return table


def announce_function_act() -> None:
    """What the act is, before it starts."""
    console.print()
    console.rule(f"[bold]{TITLE}[/]")
    console.print(
        f"On the same local AWS: the function {FUNCTION_NAME} is invoked asynchronously; Lambda retries a "
        "failed invocation twice, then sends its record (request, error, a request id) to the function's "
        "DLQ, its on-failure destination. moto cannot run code: the function and Lambda's retries are "
        "played here. The re-driver is the real one, composed from the demo profile's settings (slow start "
        "off and 3 re-drives before parking: a few events, in seconds) with DEAD_LETTER_SOURCES naming the "
        "function: each record's event goes back to the function alone, invoked asynchronously as Lambda "
        "invoked it."
    )


def print_function_act(act: FunctionAct) -> None:
    """Where every notification ended up: e-mailed after its re-drive, or parked with the function's error."""
    console.print()
    table = Table(title="Where every notification ended up", show_header=False)
    poison = sum(1 for event in act.events if event.poison)
    table.add_row("notifications", f"{len(act.events)} ({len(act.events) - poison} good, {poison} poison)")
    table.add_row(
        "destination records (request ids)", f"{sum(e.records for e in act.events)} ({act.request_ids})"
    )
    table.add_row("re-driven / re-driver runs", f"{act.redriven} / {act.runs}")
    table.add_row("e-mailed exactly once", str(act.delivered_once))
    table.add_row("parked (with the function's error)", str(sum(e.fate == "parked" for e in act.events)))
    table.add_row("elapsed", f"{act.wall_seconds} s")
    console.print(table)
    for event in act.events:
        told = (
            f"{event.records} record(s) in the DLQ, re-driven {event.redriven} time(s), "
            f"ran {event.attempts} times"
        )
        if event.fate == "delivered":
            console.print(f"  {event.order_id}  {told}; [green]e-mailed[/] at {event.delivered_at} s")
        elif event.fate == "parked":
            console.print(
                f"  {event.order_id}  {told}; [bold]parked[/] (its last record, request "
                f"{event.parked_request_id}):\n          {escape(event.parked_reason)}"
            )
        else:
            console.print(f"  {event.order_id}  {told}; {event.fate}")
    if act.problems:
        for problem in act.problems:
            console.print(f"[bold red]PROBLEM[/] {escape(problem)}")
    else:
        console.print(
            "[bold green]Every notification e-mailed exactly once after its re-drive, or parked with the "
            "function's error.[/]"
        )
