"""The demo scenario: orders flow, the downstream has an outage, some orders are poison.

The re-driver saves the pipeline: failed orders reach the DLQ, the breaker opens during the outage,
canaries probe, it closes after recovery, re-drives drain the DLQ, poison lands in the parking lot.
At the end every order is accounted for: fulfilled exactly once, or parked with its reason.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import IO, Any

import boto3

from demo.emulators import InProcessFunction, Schedule, SqsEventSource
from local_aws.cloudformation import Deployment, read_deployment
from local_aws.queues import drain, queue_counts
from redriver.model.envelope import MARK_ATTRIBUTE

POLL_PAUSE_SECONDS = 0.05


@dataclass(frozen=True)
class ScenarioOptions:
    orders: int = 40
    poison: int = 3
    produce_seconds: float = 10.0  # orders are sent evenly over this long
    outage_start_seconds: float = 3.0
    outage_seconds: float = 20.0
    tick_seconds: float = 1.0  # the schedule, emulated: one re-driver run per tick
    time_limit_seconds: float = 240.0
    seed: int = 7


@dataclass
class Progress:
    """A snapshot for the live view."""

    elapsed: float = 0.0
    sent: int = 0
    source_visible: int = 0
    in_flight: int = 0
    delayed: int = 0
    dlq: int = 0
    parking_lot: int = 0
    breaker_state: str = "CLOSED"
    redriven: int = 0
    parked: int = 0
    canaries: int = 0
    runs: int = 0
    outage: bool = False


@dataclass
class Report:
    orders: int
    good_orders: int
    poison_orders: int
    fulfilled_once: int
    fulfilled_more_than_once: list[str]
    parked: dict[str, str]
    lost: list[str]
    unexpected: list[str]
    breaker_transitions: list[str]
    redriven: int
    runs: int
    elapsed_seconds: float
    queues_empty: bool
    finished_in_time: bool
    log_file: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def balanced(self) -> bool:
        return not self.problems

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "balanced": self.balanced}, indent=2, sort_keys=True)


def make_orders(options: ScenarioOptions) -> tuple[list[tuple[str, str]], set[str]]:
    """(order id, body) pairs in sending order, and the ids of the poison ones."""
    rng = random.Random(options.seed)
    orders: list[dict[str, Any]] = []
    for number in range(options.orders):
        order_id = f"o-{number:04d}"
        items = [
            {
                "sku": f"sku-{rng.randint(1, 50)}",
                "quantity": rng.randint(1, 3),
                "unit_price": f"{rng.uniform(1, 90):.2f}",
            }
            for _ in range(rng.randint(1, 4))
        ]
        orders.append(
            {
                "order_id": order_id,
                "customer_id": f"c-{rng.randint(1, 20)}",
                "currency": "EUR",
                "items": items,
            }
        )
    poison_ids = {order["order_id"] for order in rng.sample(orders, options.poison)}
    for order in orders:
        if order["order_id"] in poison_ids:
            order["items"] = [{"sku": "sku-0", "quantity": 0, "unit_price": "1.00"}]  # never valid
    return [(order["order_id"], json.dumps(order)) for order in orders], poison_ids


class Scenario:
    def __init__(self, deployment: Deployment, options: ScenarioOptions, log: IO[str]) -> None:
        self.options = options
        self.sqs = boto3.client("sqs")
        self.started = time.time()
        outage_from = self.started + options.outage_start_seconds
        self.outage = (outage_from, outage_from + options.outage_seconds)
        # Inject the outage the way an operator would: in the consumer's configuration.
        boto3.client("lambda").update_function_configuration(
            FunctionName=deployment.consumer.name,
            Environment={
                "Variables": {
                    **deployment.consumer.environment,
                    "DOWNSTREAM_OUTAGE_WINDOWS": f"{self.outage[0]:.3f}-{self.outage[1]:.3f}",
                }
            },
        )
        # moto would run the event source mapping itself, by invoking the function in Docker on
        # every send (and failing here): the emulator below takes the mapping over.
        boto3.client("lambda").update_event_source_mapping(UUID=deployment.consumer_mapping_id, Enabled=False)
        self.deployment = deployment = read_deployment(deployment.stack_name)  # as it is now
        self.consumer = InProcessFunction(deployment.consumer, log)
        self.redriver = InProcessFunction(deployment.redriver, log)
        self.event_source = SqsEventSource(
            self.sqs,
            deployment.source_url,
            deployment.source_queue_arn,
            self.consumer,
            deployment.consumer_batch_size,
        )
        self.schedule = Schedule(self.redriver, options.tick_seconds)
        self.orders, self.poison_ids = make_orders(options)
        self.progress = Progress()
        self.transitions: list[str] = []

    def run(self, on_progress: Callable[[Progress], None] = lambda _: None) -> Report:
        pending = list(self.orders)
        deadline = self.started + self.options.time_limit_seconds
        while time.time() < deadline:
            self._produce(pending)
            while self.event_source.poll():
                pass
            summary = self.schedule.fire_if_due()
            if summary is not None:
                self._record_run(summary)
            self._refresh_depths()
            on_progress(self.progress)
            if not pending and self._settled():
                break
            time.sleep(POLL_PAUSE_SECONDS)
        return self._account(finished_in_time=time.time() < deadline)

    def _produce(self, pending: list[tuple[str, str]]) -> None:
        elapsed = time.time() - self.started
        due = (
            len(self.orders)
            if elapsed >= self.options.produce_seconds
            else int(len(self.orders) * elapsed / self.options.produce_seconds)
        )
        while pending and self.progress.sent < due:
            batch = pending[: min(10, due - self.progress.sent)]
            del pending[: len(batch)]
            self.sqs.send_message_batch(
                QueueUrl=self.deployment.source_url,
                Entries=[{"Id": str(i), "MessageBody": body} for i, (_, body) in enumerate(batch)],
            )
            self.progress.sent += len(batch)

    def _record_run(self, summary: dict[str, Any]) -> None:
        progress = self.progress
        progress.runs += 1
        progress.breaker_state = summary["breaker_state"]
        progress.redriven += summary["redriven"]
        progress.parked += summary["parked"]
        progress.canaries += summary["canaries"]
        self.transitions.extend(summary["breaker_transitions"])

    def _refresh_depths(self) -> None:
        progress = self.progress
        progress.elapsed = time.time() - self.started
        progress.outage = self.outage[0] <= time.time() < self.outage[1]
        source = queue_counts(self.sqs, self.deployment.source_url)
        progress.source_visible = source.visible
        progress.in_flight = source.in_flight
        progress.delayed = source.delayed
        progress.dlq = queue_counts(self.sqs, self.deployment.dlq_url).total
        progress.parking_lot = queue_counts(self.sqs, self.deployment.parking_lot_url).total

    def _settled(self) -> bool:
        """Every order is either fulfilled or parked, and nothing is left anywhere in flight."""
        p = self.progress
        accounted = len(self._fulfilled()) + p.parking_lot
        return accounted >= len(self.orders) and p.source_visible + p.in_flight + p.delayed + p.dlq == 0

    def _fulfilled(self) -> dict[str, int]:
        return dict(self.consumer.module.downstream.submitted)

    def _account(self, *, finished_in_time: bool) -> Report:
        fulfilled = self._fulfilled()
        parked = self._drain_parking_lot()
        all_ids = {order_id for order_id, _ in self.orders}
        good_ids = all_ids - self.poison_ids
        report = Report(
            orders=len(self.orders),
            good_orders=len(good_ids),
            poison_orders=len(self.poison_ids),
            fulfilled_once=sum(1 for count in fulfilled.values() if count == 1),
            fulfilled_more_than_once=sorted(i for i, count in fulfilled.items() if count > 1),
            parked=parked,
            lost=sorted(all_ids - set(fulfilled) - set(parked)),
            unexpected=sorted((set(fulfilled) | set(parked)) - all_ids),
            breaker_transitions=self.transitions,
            redriven=self.progress.redriven,
            runs=self.progress.runs,
            elapsed_seconds=round(time.time() - self.started, 1),
            queues_empty=self.progress.source_visible
            + self.progress.in_flight
            + self.progress.delayed
            + self.progress.dlq
            == 0,
            finished_in_time=finished_in_time,
        )
        report.problems = _problems(report, fulfilled, self.poison_ids)
        return report

    def _drain_parking_lot(self) -> dict[str, str]:
        """Order id -> the reason the re-driver gave for parking it."""
        parked: dict[str, str] = {}
        for message in drain(self.sqs, self.deployment.parking_lot_url):
            order_id = json.loads(message["Body"])["order_id"]
            mark = json.loads(message["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])
            parked[order_id] = mark["parked"]["why"]
        return parked


def _problems(report: Report, fulfilled: dict[str, int], poison_ids: set[str]) -> list[str]:
    problems = []
    if report.lost:
        problems.append(f"{len(report.lost)} order(s) lost: {report.lost[:10]}")
    if report.fulfilled_more_than_once:
        problems.append(f"fulfilled more than once: {report.fulfilled_more_than_once[:10]}")
    if report.unexpected:
        problems.append(f"unknown orders appeared: {report.unexpected[:10]}")
    if set(fulfilled) & set(report.parked):
        problems.append(f"fulfilled and also parked: {sorted(set(fulfilled) & set(report.parked))[:10]}")
    if poison_ids & set(fulfilled):
        problems.append(f"poison orders were fulfilled: {sorted(poison_ids & set(fulfilled))}")
    if not all(report.parked.values()):
        problems.append("a parked order has no reason")
    if not report.queues_empty:
        problems.append("messages are still in the source queue or the DLQ")
    return problems
