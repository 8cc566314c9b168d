"""The demo scenario: orders flow, the downstream has an outage, some orders are poison.

The consumer uses the consumer kit: a poison order (InvalidOrder, terminal) goes to the DLQ at its
first failure with the error in the re-driver's mark, and the re-driver parks it on first sight,
never re-driving it. An order failed by the outage (DownstreamUnavailable, transient) is re-driven;
the breaker opens during the outage, a canary probes, the kit's verdict closes it within seconds of
the recovery, and re-drives drain the DLQ. Then the operator's part, with the real tool
(``sqs-redriver``): the re-driver's status and the parking lot's groups; one bug is fixed (in the
consumer's configuration) and its group replayed, and the consumer fulfils those orders. At the end
every order is accounted for: fulfilled exactly once (a poison one only after the fix and its
replay), or parked with its reason. Times are seconds on the demo's clock (from its start).
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import IO, Any

import boto3

from consumer.orders import DROP_ZERO_QUANTITY_LINES
from demo.emulators import InProcessFunction, Schedule, SqsEventSource, wait_with
from demo.no_kit_act import NoKitAct
from demo.operator import OperatorTool, ToolRun
from local_aws.cloudformation import Deployment, read_deployment
from local_aws.queues import drain, peek, queue_counts
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE

POLL_PAUSE_SECONDS = 0.05
# The poison the producer sends: two distinct bugs, each hit by orders whose error messages differ
# only in numbers (so each bug should make one fingerprint).
ZERO_QUANTITY = "a line with quantity 0"
NO_CUSTOMER = "no customer_id"
POISON_BUGS = (ZERO_QUANTITY, NO_CUSTOMER)
# The bug the operator fixes: its group is the one whose label shows the consumer's error for it.
FIXED_BUG = ZERO_QUANTITY
FIXED_ERROR = re.compile(r"has quantity 0 and price")


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
    operator: str = ""  # the tool's command running now


@dataclass
class PoisonParked:
    """One poison order as the parking lot holds it: the parked mark's reason and the consumer's
    error the kit put in the mark."""

    order_id: str
    bug: str  # which bug the producer put in it
    cause: str  # the parked object's cause: "terminal" when parked on the kit's classification
    error_class: str
    message: str
    fingerprint: str
    redriven: int  # the mark's ``n``: re-drives before it was parked
    attempt: int  # the consumer's delivery that failed it (``err.try``): 1 = its first
    deliveries: int  # how many times the consumer was given it
    failed_at: float  # seconds on the demo's clock: the consumer failed it (first time)
    parked_at: float  # seconds on the demo's clock: it reached the parking lot
    replayed: bool = False  # the operator fixed its bug and replayed it


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
    # Poison: each order's parking, the fingerprints with their counts, the bugs injected.
    poison_parked: list[PoisonParked] = field(default_factory=list)
    fingerprints: dict[str, int] = field(default_factory=dict)
    poison_bugs: int = 0
    # The outage: its window, the good orders it failed, those re-driven, and their fulfilments.
    outage_window: tuple[float, float] = (0.0, 0.0)
    outage_failed_orders: int = 0
    transient_errors: dict[str, int] = field(default_factory=dict)  # error class -> orders
    redriven_orders: int = 0
    redriven_fulfilled_once: int = 0
    # The breaker on the demo's clock, read from the state table while runs go on.
    breaker_timeline: list[tuple[float, str]] = field(default_factory=list)
    breaker_opened_at: float | None = None
    breaker_closed_at: float | None = None
    dlq_drained_at: float | None = None
    closed_after_outage_seconds: float | None = None
    drained_after_outage_seconds: float | None = None
    run_summaries: list[dict[str, Any]] = field(default_factory=list)
    # The operator's part: the tool's commands, the fix, the group replayed after it, its orders.
    operator_runs: list[ToolRun] = field(default_factory=list)
    fix: str = ""
    replayed_group: str = ""
    replayed_group_label: str = ""
    replayed: int = 0  # poison orders the consumer was given again after the replay
    fulfilled_after_replay: int = 0  # of those, fulfilled exactly once
    log_file: str = ""
    problems: list[str] = field(default_factory=list)
    no_kit_act: NoKitAct | None = None  # the second act (demo/no_kit_act.py); its problems are in ours

    def add_no_kit_act(self, act: NoKitAct) -> None:
        """The second act's result: its problems unbalance the whole report."""
        self.no_kit_act = act
        self.problems.extend(f"without the kit: {problem}" for problem in act.problems)

    @property
    def opened_during_outage(self) -> bool:
        start, end = self.outage_window
        return self.breaker_opened_at is not None and start <= self.breaker_opened_at <= end

    @property
    def balanced(self) -> bool:
        return not self.problems

    def to_json(self) -> str:
        derived = {"balanced": self.balanced, "opened_during_outage": self.opened_during_outage}
        return json.dumps({**asdict(self), **derived}, indent=2, sort_keys=True)


def make_orders(options: ScenarioOptions) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """(order id, body) pairs in sending order, and the poison ones' ids with their bug."""
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
    poison = sorted(rng.sample(orders, options.poison), key=lambda order: str(order["order_id"]))
    bugs: dict[str, str] = {}
    for number, order in enumerate(poison):
        bug = POISON_BUGS[number % len(POISON_BUGS)]
        if bug == ZERO_QUANTITY:  # an extra line (valid once the fix drops it); where, and its price, vary
            line = {
                "sku": f"sku-{rng.randint(1, 50)}",
                "quantity": 0,
                "unit_price": f"{rng.uniform(1, 90):.2f}",
            }
            order["items"].insert(rng.randint(0, len(order["items"])), line)
        else:
            del order["customer_id"]
        bugs[order["order_id"]] = bug
    return [(order["order_id"], json.dumps(order)) for order in orders], bugs


def fixed_group(groups: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The parking lot's group (from ``groups --json``) of the bug the operator fixes."""
    return next(
        (g for g in groups if g["queue"] == "parking-lot" and FIXED_ERROR.search(str(g["label"]))), None
    )


class Scenario:
    def __init__(
        self, deployment: Deployment, options: ScenarioOptions, log: IO[str], tool: OperatorTool
    ) -> None:
        self.options = options
        self.tool = tool
        self.sqs = boto3.client("sqs")
        self.dynamodb = boto3.client("dynamodb")
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
        self.breaker_key: str = self.redriver.module.SETTINGS.breaker_key
        self.event_source = SqsEventSource(
            self.sqs,
            deployment.source_url,
            deployment.source_queue_arn,
            self.consumer,
            deployment.consumer_batch_size,
            on_delivery=self._delivered,
        )
        wait_with(self.redriver, self._while_redriver_waits)
        self.schedule = Schedule(self.redriver, options.tick_seconds)
        self.orders, self.poison = make_orders(options)
        self.pending = list(self.orders)
        self.progress = Progress()
        self.transitions: list[str] = []
        self.summaries: list[dict[str, Any]] = []
        self.timeline: list[tuple[float, str]] = []
        self.transient_errors: dict[str, str] = {}  # good order -> the class of its last downstream error
        self._count_downstream_errors()
        self.redriven_orders: set[str] = set()  # good orders delivered with a re-drive mark (n >= 1)
        self.poison_deliveries: dict[str, int] = {}
        self.poison_failed_at: dict[str, float] = {}
        self.replayed_orders: set[str] = set()  # poison delivered again after the operator's replay
        self.parked_seen: dict[str, dict[str, Any]] = {}  # order id -> its parked message, before the replay
        self.operator_runs: list[ToolRun] = []
        self.fix = ""
        self.replayed_group: dict[str, Any] = {}
        self.dlq_drained_at: float | None = None
        self._on_progress: Callable[[Progress], None] = lambda _: None

    def run(self, on_progress: Callable[[Progress], None] = lambda _: None) -> Report:
        self._on_progress = on_progress
        deadline = self.started + self.options.time_limit_seconds
        settled = self._run_until_settled(deadline)
        if settled:
            self._operate()
            self.progress.operator = ""
            settled = self._run_until_settled(deadline)
        return self._account(finished_in_time=settled)

    def _run_until_settled(self, deadline: float) -> bool:
        """Send, deliver, run the schedule and watch until everything has settled (False: the
        deadline came first)."""
        while time.time() < deadline:
            self._produce()
            while self.event_source.poll():
                pass
            at = self._elapsed()
            summary = self.schedule.fire_if_due()
            if summary is not None:
                self._record_run(at, summary)
            self._observe()
            if not self.pending and self._settled():
                return True
            time.sleep(POLL_PAUSE_SECONDS)
        return False

    def _operate(self) -> None:
        """The operator's part, with the real tool: the re-driver's status, the parking lot's
        groups; then the fix of one bug (the consumer's configuration) and the replay of its group,
        which the consumer is given from the next poll on."""
        self.parked_seen = _by_order(peek(self.sqs, self.deployment.parking_lot_url))
        look = ["--json"] if self.tool.json else []
        self._tool("status", *look, ok_codes=(0, 1))  # 1: it found messages in the parking lot
        if not self.tool.json:
            self._tool("groups", "--queue", "parking-lot")
        groups = self._tool("groups", "--queue", "parking-lot", "--json")
        group = fixed_group(groups.data or [])
        if group is None:
            return
        self.replayed_group = group
        self._fix_consumer()
        self._tool("replay", "--group", str(group["group"]), "--yes", *look)

    def _tool(self, *args: str, ok_codes: tuple[int, ...] = (0,)) -> ToolRun:
        self.progress.operator = " ".join(args)
        self._on_progress(self.progress)
        run = self.tool.run(*args, ok_codes=ok_codes)
        self.operator_runs.append(run)
        return run

    def _fix_consumer(self) -> None:
        """Deploy the fix the way the outage came: in the consumer's configuration."""
        consumer = self.consumer.config
        self.fix = f"{DROP_ZERO_QUANTITY_LINES}=true"
        boto3.client("lambda").update_function_configuration(
            FunctionName=consumer.name,
            Environment={"Variables": {**consumer.environment, DROP_ZERO_QUANTITY_LINES: "true"}},
        )
        self.consumer.reconfigure(read_deployment(self.deployment.stack_name).consumer)

    def _elapsed(self) -> float:
        return time.time() - self.started

    def _while_redriver_waits(self, seconds: float) -> None:
        """A re-driver run waits (for verdicts, slow start): meanwhile the producer sends and the
        event source feeds the consumer, as in AWS; no schedule tick fires (a run is going on)."""
        until = time.monotonic() + seconds
        while True:
            self._produce()
            while self.event_source.poll():
                pass
            self._observe()
            left = until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(POLL_PAUSE_SECONDS, left))

    def _produce(self) -> None:
        pending = self.pending
        elapsed = self._elapsed()
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

    def _delivered(self, messages: list[dict[str, Any]], failed: set[str]) -> None:
        """The event source's batch: poison deliveries (before and after a replay), and good orders
        that came back re-driven.
        (``failed`` is of no use here: the kit dead-letters a failed order itself and reports it
        done.)"""
        at = self._elapsed()
        for message in messages:
            order_id = str(json.loads(message["Body"]).get("order_id"))
            mark = _mark(message)
            if order_id not in self.poison:
                if mark.get("n", 0) >= 1:
                    self.redriven_orders.add(order_id)
            elif mark.get("rp"):  # sent back by the operator's replay
                self.replayed_orders.add(order_id)
            else:
                self.poison_deliveries[order_id] = self.poison_deliveries.get(order_id, 0) + 1
                self.poison_failed_at.setdefault(order_id, at)

    def _count_downstream_errors(self) -> None:
        """Note which orders the consumer's downstream refused, and with what error (the kit
        dead-letters them with it, and the re-driver's mark drops it when it re-drives)."""
        downstream = self.consumer.module.downstream
        submit = downstream.submit

        def submit_noting_errors(order: Any) -> Any:
            try:
                return submit(order)
            except Exception as error:
                self.transient_errors[order.order_id] = type(error).__name__
                raise

        downstream.submit = submit_noting_errors

    def _record_run(self, at: float, summary: dict[str, Any]) -> None:
        progress = self.progress
        progress.runs += 1
        progress.breaker_state = summary["breaker_state"]
        progress.redriven += summary["redriven"]
        progress.parked += summary["parked"]
        progress.canaries += summary["canaries"]
        self.transitions.extend(summary["breaker_transitions"])
        self.summaries.append(
            {"at": round(at, 1), "seconds": round(self._elapsed() - at, 1)}
            | {k: v for k, v in summary.items() if v or k in ("mode", "breaker_state")}
        )

    def _observe(self) -> None:
        """Read the queues' depths and the breaker, note what changed, refresh the view."""
        progress = self.progress
        progress.elapsed = elapsed = self._elapsed()
        progress.outage = self.outage[0] <= time.time() < self.outage[1]
        source = queue_counts(self.sqs, self.deployment.source_url)
        progress.source_visible = source.visible
        progress.in_flight = source.in_flight
        progress.delayed = source.delayed
        progress.dlq = queue_counts(self.sqs, self.deployment.dlq_url).total
        progress.parking_lot = queue_counts(self.sqs, self.deployment.parking_lot_url).total
        if progress.dlq:
            self.dlq_drained_at = None
        elif self.dlq_drained_at is None:
            self.dlq_drained_at = elapsed
        state = self._breaker_state()
        if not self.timeline or self.timeline[-1][1] != state:
            self.timeline.append((round(elapsed, 2), state))
        progress.breaker_state = state
        self._on_progress(progress)

    def _breaker_state(self) -> str:
        item = self.dynamodb.get_item(
            TableName=self.deployment.state_table,
            Key={"pk": {"S": self.breaker_key}},
            ConsistentRead=True,
        ).get("Item")
        return str(item["state"]["S"]) if item else "CLOSED"

    def _settled(self) -> bool:
        """Every order is either fulfilled or parked, and nothing is left anywhere in flight."""
        p = self.progress
        accounted = len(self._fulfilled()) + p.parking_lot
        return accounted >= len(self.orders) and p.source_visible + p.in_flight + p.delayed + p.dlq == 0

    def _fulfilled(self) -> dict[str, int]:
        return dict(self.consumer.module.downstream.submitted)

    def _account(self, *, finished_in_time: bool) -> Report:
        fulfilled = self._fulfilled()
        left = _by_order(drain(self.sqs, self.deployment.parking_lot_url))
        parked = {order_id: str(_mark(message)["parked"]["why"]) for order_id, message in left.items()}
        seen = {**self.parked_seen, **left}  # each order as it was parked (a replayed one: before it)
        all_ids = {order_id for order_id, _ in self.orders}
        poison_ids = set(self.poison)
        good_ids = all_ids - poison_ids
        outage_window = (self.outage[0] - self.started, self.outage[1] - self.started)
        opened_at, closed_at = _opened_and_closed(self.timeline)
        drained_at = self.dlq_drained_at
        poison_parked = [
            PoisonParked(
                order_id=order_id,
                bug=self.poison[order_id],
                deliveries=self.poison_deliveries.get(order_id, 0),
                failed_at=round(self.poison_failed_at.get(order_id, -1.0), 2),
                parked_at=round(_sent_at(seen[order_id]) - self.started, 2),
                replayed=order_id in self.replayed_orders,
                **_parking(_mark(seen[order_id])),
            )
            for order_id in sorted(poison_ids & set(seen))
        ]
        report = Report(
            orders=len(self.orders),
            good_orders=len(good_ids),
            poison_orders=len(poison_ids),
            fulfilled_once=sum(1 for count in fulfilled.values() if count == 1),
            fulfilled_more_than_once=sorted(i for i, count in fulfilled.items() if count > 1),
            parked=parked,
            lost=sorted(all_ids - set(fulfilled) - set(parked)),
            unexpected=sorted((set(fulfilled) | set(parked)) - all_ids),
            breaker_transitions=self.transitions,
            redriven=self.progress.redriven,
            runs=self.progress.runs,
            elapsed_seconds=round(self._elapsed(), 1),
            queues_empty=self.progress.source_visible
            + self.progress.in_flight
            + self.progress.delayed
            + self.progress.dlq
            == 0,
            finished_in_time=finished_in_time,
            poison_parked=poison_parked,
            fingerprints=dict(Counter(poison.fingerprint for poison in poison_parked)),
            poison_bugs=len(set(self.poison.values())),
            outage_window=(round(outage_window[0], 2), round(outage_window[1], 2)),
            outage_failed_orders=len(self.transient_errors),
            transient_errors=dict(Counter(self.transient_errors.values())),
            redriven_orders=len(self.redriven_orders),
            redriven_fulfilled_once=sum(1 for i in self.redriven_orders if fulfilled.get(i) == 1),
            breaker_timeline=self.timeline,
            breaker_opened_at=opened_at,
            breaker_closed_at=closed_at,
            dlq_drained_at=None if drained_at is None else round(drained_at, 2),
            closed_after_outage_seconds=_after(closed_at, outage_window[1]),
            drained_after_outage_seconds=_after(drained_at, outage_window[1]),
            run_summaries=self.summaries,
            operator_runs=self.operator_runs,
            fix=self.fix,
            replayed_group=str(self.replayed_group.get("group", "")),
            replayed_group_label=str(self.replayed_group.get("label", "")),
            replayed=len(self.replayed_orders),
            fulfilled_after_replay=sum(1 for i in self.replayed_orders if fulfilled.get(i) == 1),
        )
        fixed_ids = {order_id for order_id, bug in self.poison.items() if bug == FIXED_BUG}
        report.problems = _problems(report, fulfilled, poison_ids, fixed_ids, self.replayed_orders)
        return report


def _by_order(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Messages of the demo's orders by order id."""
    return {str(json.loads(message["Body"])["order_id"]): message for message in messages}


def _sent_at(message: dict[str, Any]) -> float:
    """When SQS received this copy (epoch seconds)."""
    return int(message["Attributes"]["SentTimestamp"]) / 1000


def _mark(message: dict[str, Any]) -> dict[str, Any]:
    """The re-driver's mark on a message ({} without one)."""
    attribute = message.get("MessageAttributes", {}).get(MARK_ATTRIBUTE)
    return dict(json.loads(attribute["StringValue"])) if attribute else {}


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
    return problems
