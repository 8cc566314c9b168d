"""Act 1's books: what it writes down as it runs (``Ledger``), and its account at the end: where
every order ended up, and what does not balance."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from demo.operator import FIXED_BUG, OperatorsPart
from demo.report import PoisonParked, Report
from local_aws.queues import mark_data


@dataclass
class Ledger:
    """What act 1 saw as it ran. ``started`` and ``outage`` are epoch seconds; other times are
    seconds on the demo's clock (from ``started``)."""

    orders: list[tuple[str, str]]  # (order id, body) in sending order
    poison: dict[str, str]  # poison order id -> the bug the producer put in it
    started: float
    outage: tuple[float, float]
    transitions: list[str] = field(default_factory=list)  # the breaker's, as the runs reported them
    run_summaries: list[dict[str, Any]] = field(default_factory=list)
    breaker_timeline: list[tuple[float, str]] = field(default_factory=list)  # (seconds, state) changes
    transient_errors: dict[str, str] = field(default_factory=dict)  # good order -> its last downstream error
    redriven_orders: set[str] = field(default_factory=set)  # good orders delivered with a re-drive mark
    poison_deliveries: dict[str, int] = field(default_factory=dict)
    poison_failed_at: dict[str, float] = field(default_factory=dict)  # seconds on the demo's clock
    replayed_orders: set[str] = field(default_factory=set)  # poison delivered again after the replay
    parked_seen: dict[str, dict[str, Any]] = field(default_factory=dict)  # parked, before the replay
    dlq_drained_at: float | None = None  # seconds on the demo's clock: since when the DLQ is empty

    def delivered(self, messages: list[dict[str, Any]], at: float) -> None:
        """The event source's batch at ``at`` (seconds): poison deliveries (before and after a
        replay), and good orders that came back re-driven."""
        for message in messages:
            order_id = str(json.loads(message["Body"]).get("order_id"))
            mark = mark_data(message)
            if order_id not in self.poison:
                if mark.get("n", 0) >= 1:
                    self.redriven_orders.add(order_id)
            elif mark.get("rp"):  # sent back by the operator's replay
                self.replayed_orders.add(order_id)
            else:
                self.poison_deliveries[order_id] = self.poison_deliveries.get(order_id, 0) + 1
                self.poison_failed_at.setdefault(order_id, at)


def by_order(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Messages of the demo's orders by order id."""
    return {str(json.loads(message["Body"])["order_id"]): message for message in messages}


def account(
    ledger: Ledger,
    operator: OperatorsPart,
    *,
    fulfilled: dict[str, int],
    left: dict[str, dict[str, Any]],
    redriven: int,
    runs: int,
    queues_empty: bool,
    elapsed: float,
    finished_in_time: bool,
) -> Report:
    """Where every order ended up: ``fulfilled`` (order id -> times), ``left`` in the parking lot
    at the end (by order id); and what does not balance."""
    parked = {order_id: str(mark_data(message)["parked"]["why"]) for order_id, message in left.items()}
    all_ids = {order_id for order_id, _ in ledger.orders}
    report = Report(
        orders=len(ledger.orders),
        good_orders=len(all_ids - set(ledger.poison)),
        poison_orders=len(ledger.poison),
        fulfilled_once=sum(1 for count in fulfilled.values() if count == 1),
        fulfilled_more_than_once=sorted(i for i, count in fulfilled.items() if count > 1),
        parked=parked,
        lost=sorted(all_ids - set(fulfilled) - set(parked)),
        unexpected=sorted((set(fulfilled) | set(parked)) - all_ids),
        breaker_transitions=ledger.transitions,
        redriven=redriven,
        runs=runs,
        elapsed_seconds=round(elapsed, 1),
        queues_empty=queues_empty,
        finished_in_time=finished_in_time,
    )
    _account_poison(report, ledger, {**ledger.parked_seen, **left})
    _account_outage(report, ledger, fulfilled)
    _account_operator(report, operator, ledger.replayed_orders, fulfilled)
    fixed_ids = {order_id for order_id, bug in ledger.poison.items() if bug == FIXED_BUG}
    report.problems = _problems(report, fulfilled, set(ledger.poison), fixed_ids, ledger.replayed_orders)
    return report


def _account_poison(report: Report, ledger: Ledger, seen: dict[str, dict[str, Any]]) -> None:
    """Each poison order as it was parked (``seen``: a replayed one, before its replay)."""
    report.poison_parked = [
        PoisonParked(
            order_id=order_id,
            bug=ledger.poison[order_id],
            deliveries=ledger.poison_deliveries.get(order_id, 0),
            failed_at=round(ledger.poison_failed_at.get(order_id, -1.0), 2),
            parked_at=round(_sent_at(seen[order_id]) - ledger.started, 2),
            replayed=order_id in ledger.replayed_orders,
            **_parking(mark_data(seen[order_id])),
        )
        for order_id in sorted(set(ledger.poison) & set(seen))
    ]
    report.fingerprints = dict(Counter(poison.fingerprint for poison in report.poison_parked))
    report.poison_bugs = len(set(ledger.poison.values()))


def _account_outage(report: Report, ledger: Ledger, fulfilled: dict[str, int]) -> None:
    """The outage's window, the good orders it failed, their re-drives, and the breaker."""
    start, end = (ledger.outage[0] - ledger.started, ledger.outage[1] - ledger.started)
    opened_at, closed_at = _opened_and_closed(ledger.breaker_timeline)
    drained_at = ledger.dlq_drained_at
    report.outage_window = (round(start, 2), round(end, 2))
    report.outage_failed_orders = len(ledger.transient_errors)
    report.transient_errors = dict(Counter(ledger.transient_errors.values()))
    report.redriven_orders = len(ledger.redriven_orders)
    report.redriven_fulfilled_once = sum(1 for i in ledger.redriven_orders if fulfilled.get(i) == 1)
    report.breaker_timeline = ledger.breaker_timeline
    report.breaker_opened_at = opened_at
    report.breaker_closed_at = closed_at
    report.dlq_drained_at = None if drained_at is None else round(drained_at, 2)
    report.closed_after_outage_seconds = _after(closed_at, end)
    report.drained_after_outage_seconds = _after(drained_at, end)
    report.run_summaries = ledger.run_summaries


def _account_operator(
    report: Report, operator: OperatorsPart, replayed_ids: set[str], fulfilled: dict[str, int]
) -> None:
    """The tool's commands, the fix, the group replayed after it, and its orders' fulfilments."""
    report.operator_runs = operator.runs
    report.fix = operator.fix
    report.replayed_group = str(operator.replayed_group.get("group", ""))
    report.replayed_group_label = str(operator.replayed_group.get("label", ""))
    report.replayed = len(replayed_ids)
    report.fulfilled_after_replay = sum(1 for i in replayed_ids if fulfilled.get(i) == 1)


def _sent_at(message: dict[str, Any]) -> float:
    """When SQS received this copy (epoch seconds)."""
    return int(message["Attributes"]["SentTimestamp"]) / 1000


def _parking(mark: dict[str, Any]) -> dict[str, Any]:
    """What a parked mark says: the parking's cause, the consumer's error (``err``), re-drives."""
    parked, error = mark.get("parked", {}), mark.get("err", {})
    return {
        "cause": str(parked.get("cause", "")),
        "error_class": str(error.get("class", "")),
        "message": str(error.get("msg", "")),
        "fingerprint": str(error.get("fp", "")),
        "redriven": int(mark.get("n", -1)),
        "attempt": int(error.get("try", 0)),
    }


def _opened_and_closed(timeline: list[tuple[float, str]]) -> tuple[float | None, float | None]:
    """When the breaker first left CLOSED, and when it last came back to CLOSED after that."""
    opened = next((at for at, state in timeline if state != "CLOSED"), None)
    if opened is None or timeline[-1][1] != "CLOSED":
        return opened, None
    return opened, timeline[-1][0]


def _after(at: float | None, outage_end: float) -> float | None:
    return None if at is None else round(at - outage_end, 2)


def _problems(
    report: Report,
    fulfilled: dict[str, int],
    poison_ids: set[str],
    fixed_ids: set[str],
    replayed_ids: set[str],
) -> list[str]:
    """What does not balance. A poison order may be fulfilled only once its bug was fixed and it
    was replayed; every order of the fixed bug must have been replayed and fulfilled exactly once."""
    problems = []
    if report.lost:
        problems.append(f"{len(report.lost)} order(s) lost: {report.lost[:10]}")
    if report.fulfilled_more_than_once:
        problems.append(f"fulfilled more than once: {report.fulfilled_more_than_once[:10]}")
    if report.unexpected:
        problems.append(f"unknown orders appeared: {report.unexpected[:10]}")
    if set(fulfilled) & set(report.parked):
        problems.append(f"fulfilled and also parked: {sorted(set(fulfilled) & set(report.parked))[:10]}")
    unfixed = sorted((poison_ids - replayed_ids) & set(fulfilled))
    if unfixed:
        problems.append(f"poison orders fulfilled without a fix and a replay: {unfixed}")
    if replayed_ids != fixed_ids:
        problems.append(
            f"replayed {sorted(replayed_ids)}, but the fixed bug's orders are {sorted(fixed_ids)}"
        )
    not_once = sorted(i for i in replayed_ids if fulfilled.get(i) != 1)
    if not_once:
        problems.append(f"replayed after the fix but not fulfilled exactly once: {not_once}")
    problems.extend(
        f"`{run.command}` exited {run.exit_code}: {run.errors[-300:]}"
        for run in report.operator_runs
        if not run.ok
    )
    if not all(report.parked.values()):
        problems.append("a parked order has no reason")
    if not report.queues_empty:
        problems.append("messages are still in the source queue or the DLQ")
    return problems + _breaker_problems(report)


def _breaker_problems(report: Report) -> list[str]:
    """The breaker's part of the story: opened by an outage that failed orders, closed at the end."""
    problems = []
    if report.outage_failed_orders and report.breaker_opened_at is None:
        problems.append(
            f"the outage failed {report.outage_failed_orders} order(s), but the breaker never opened"
        )
    if report.breaker_timeline and report.breaker_timeline[-1][1] != "CLOSED":
        problems.append(f"the breaker is {report.breaker_timeline[-1][1]} when the act ends")
    return problems
