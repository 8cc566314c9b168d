"""Act 1: a consumer with the consumer kit, in real time. Orders flow, the downstream has an outage,
some orders are poison.

The consumer uses the consumer kit: a poison order (InvalidOrder, terminal) goes to the DLQ at its
first failure with the error in the re-driver's mark, and the re-driver parks it on first sight,
never re-driving it. An order failed by the outage (DownstreamUnavailable, transient) is re-driven;
the breaker opens during the outage, a canary probes, the kit's verdict closes it within seconds of
the recovery, and re-drives drain the DLQ. Then the operator's part, with the real tool
(``sqs-redriver``): the re-driver's status and the parking lot's groups; one bug is fixed (in the
consumer's configuration) and its group replayed, and the consumer fulfils those orders. At the end
every order is accounted for: fulfilled exactly once (a poison one only after the fix and its
replay), or parked with its reason. Times are seconds on the demo's clock (from its start).

The act plays in real time, but its story does not depend on the machine's speed: its clock starts
once the handlers are imported, the outage lasts its planned time and, once it has failed an order,
until the breaker has opened, and each part of the act (the story, then the replay) ends when
everything has settled, the breaker closed, not at a time: ``time_limit_seconds`` only bounds a
part that never settles, and the report then says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import boto3

from demo.accounting import Ledger, account, by_order
from demo.emulators import DeliveryObserver
from demo.operator import OperatorsPart, OperatorTool
from demo.orders import make_orders
from demo.report import Report
from demo.stage import configure_consumer, inject_outage, note_downstream_errors, set_stage
from local_aws.cloudformation import Deployment
from local_aws.queues import peek, queue_counts
from local_aws.resources import breaker_state

POLL_SLEEP_SECONDS = 0.05


@dataclass(frozen=True)
class KitOptions:
    orders: int = 40
    poison: int = 3
    produce_seconds: float = 10.0  # orders are sent evenly over this long
    outage_start_seconds: float = 3.0
    outage_seconds: float = 20.0
    tick_seconds: float = 1.0  # the schedule, emulated: one re-driver run per tick
    time_limit_seconds: float = 240.0  # the story, and then the replay, each gives up after this long
    seed: int = 7


@dataclass
class KitProgress:
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

    @property
    def queues_empty(self) -> bool:
        """Nothing left in the source queue (visible, in flight or delayed) or the DLQ."""
        return self.source_visible + self.in_flight + self.delayed + self.dlq == 0


class KitAct:
    """Act 1 on a deployment of the demo stack: its stage set here, played by ``run``."""

    def __init__(self, deployment: Deployment, options: KitOptions, log: IO[str], tool: OperatorTool) -> None:
        self.options = options
        self.sqs = boto3.client("sqs")
        self.dynamodb = boto3.client("dynamodb")
        self.stage = set_stage(
            deployment,
            tick_seconds=options.tick_seconds,
            log=log,
            sqs=self.sqs,
            # Looked up at each call: a kept demo takes both hooks over once the story is over.
            on_delivery=lambda messages, failed: self.on_delivery(messages, failed),
            while_redriver_waits=lambda seconds: self.while_redriver_waits(seconds),
        )
        # The demo's clock starts with the stage set: importing the handlers can take seconds.
        started = time.time()
        outage_from = started + options.outage_start_seconds
        orders, poison = make_orders(options.orders, options.poison, options.seed)
        # Until _end_outage_when_heard ends it; by itself only when the story gives up.
        self.ledger = Ledger(orders, poison, started, (outage_from, started + options.time_limit_seconds))
        self.outage_planned_end: float | None = outage_from + options.outage_seconds  # None: ended
        inject_outage(self.stage, self.ledger.outage)
        self.on_delivery: DeliveryObserver = lambda messages, _failed: self.ledger.delivered(
            messages, self._elapsed()
        )
        self.while_redriver_waits: Callable[[float], None] = self._while_redriver_waits
        self.breaker_key: str = self.stage.redriver.module.SETTINGS.breaker_key
        note_downstream_errors(self.stage.consumer, self.ledger.transient_errors)
        self.pending = list(orders)
        self.progress = KitProgress()
        self.operator = OperatorsPart(tool, on_command=self._show_command)
        self._on_progress: Callable[[KitProgress], None] = lambda _: None

    def run(self, on_progress: Callable[[KitProgress], None] = lambda _: None) -> Report:
        """Play the act (``on_progress`` sees each snapshot) and account for every order."""
        self._on_progress = on_progress
        settled = self._run_until_settled()
        if settled:
            self.ledger.parked_seen = by_order(peek(self.sqs, self.stage.deployment.parking_lot_url))
            self.operator.play(lambda variable, value: configure_consumer(self.stage, **{variable: value}))
            self.progress.operator = ""
            settled = self._run_until_settled()
        return self._account(finished_in_time=settled)

    def _run_until_settled(self) -> bool:
        """Send, deliver, run the schedule and watch until everything has settled (False: it had
        not after ``time_limit_seconds``)."""
        deadline = time.monotonic() + self.options.time_limit_seconds
        while time.monotonic() < deadline:
            self._produce()
            while self.stage.event_source.poll():
                pass
            at = self._elapsed()
            summary = self.stage.schedule.fire_if_due()
            if summary is not None:
                self._record_run(at, summary)
            self._observe()
            if not self.pending and self._settled():
                return True
            time.sleep(POLL_SLEEP_SECONDS)
        return False

    def _show_command(self, command: str) -> None:
        self.progress.operator = command
        self._on_progress(self.progress)

    def _elapsed(self) -> float:
        return time.time() - self.ledger.started

    def _while_redriver_waits(self, seconds: float) -> None:
        """A re-driver run waits (for verdicts, slow start): meanwhile the producer sends and the
        event source feeds the consumer, as in AWS; no schedule tick fires (a run is going on)."""
        until = time.monotonic() + seconds
        while True:
            self._produce()
            while self.stage.event_source.poll():
                pass
            self._observe()
            left = until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(POLL_SLEEP_SECONDS, left))

    def _produce(self) -> None:
        """Send the orders due by now: evenly over ``produce_seconds``."""
        pending, orders = self.pending, self.ledger.orders
        elapsed = self._elapsed()
        due = (
            len(orders)
            if elapsed >= self.options.produce_seconds
            else int(len(orders) * elapsed / self.options.produce_seconds)
        )
        while pending and self.progress.sent < due:
            batch = pending[: min(10, due - self.progress.sent)]
            del pending[: len(batch)]
            self.sqs.send_message_batch(
                QueueUrl=self.stage.deployment.source_url,
                Entries=[{"Id": str(i), "MessageBody": body} for i, (_, body) in enumerate(batch)],
            )
            self.progress.sent += len(batch)

    def _record_run(self, at: float, summary: dict[str, Any]) -> None:
        progress = self.progress
        progress.runs += 1
        progress.breaker_state = summary["breaker_state"]
        progress.redriven += summary["redriven"]
        progress.parked += summary["parked"]
        progress.canaries += summary["canaries"]
        self.ledger.transitions.extend(summary["breaker_transitions"])
        self.ledger.run_summaries.append(
            {"at": round(at, 1), "seconds": round(self._elapsed() - at, 1)}
            | {k: v for k, v in summary.items() if v or k in ("mode", "breaker_state")}
        )

    def _observe(self) -> None:
        """Read the queues' depths and the breaker, note what changed, refresh the view."""
        progress, ledger, deployment = self.progress, self.ledger, self.stage.deployment
        progress.elapsed = elapsed = self._elapsed()
        progress.outage = ledger.outage[0] <= time.time() < ledger.outage[1]
        source = queue_counts(self.sqs, deployment.source_url)
        progress.source_visible = source.visible
        progress.in_flight = source.in_flight
        progress.delayed = source.delayed
        progress.dlq = queue_counts(self.sqs, deployment.dlq_url).total
        progress.parking_lot = queue_counts(self.sqs, deployment.parking_lot_url).total
        if progress.dlq:
            ledger.dlq_drained_at = None
        elif ledger.dlq_drained_at is None:
            ledger.dlq_drained_at = elapsed
        state = breaker_state(self.dynamodb, deployment.state_table, self.breaker_key)
        if not ledger.breaker_timeline or ledger.breaker_timeline[-1][1] != state:
            ledger.breaker_timeline.append((round(elapsed, 2), state))
        progress.breaker_state = state
        self._end_outage_when_heard()
        self._on_progress(progress)

    def _end_outage_when_heard(self) -> None:
        """End the outage once its planned time is over and the re-driver has heard it (the breaker
        opened), or it found no order to fail: on a busy machine the re-driver's runs come late,
        and the story is of a breaker that opens during the outage and closes after it."""
        now, ledger = time.time(), self.ledger
        if self.outage_planned_end is None or now < self.outage_planned_end:
            return
        if now >= ledger.outage[1]:  # it ended by itself: the story is giving up
            self.outage_planned_end = None
            return
        opened = any(state != "CLOSED" for _, state in ledger.breaker_timeline)
        found_nothing = not ledger.transient_errors and not self.pending and self.progress.queues_empty
        if opened or found_nothing:
            ledger.outage = (ledger.outage[0], now)
            inject_outage(self.stage, ledger.outage)
            self.outage_planned_end = None

    def _settled(self) -> bool:
        """Every order is either fulfilled or parked, nothing is left anywhere in flight, and the
        breaker is closed (a canary's verdict may still be on its way when the DLQ is empty)."""
        accounted = len(self._fulfilled()) + self.progress.parking_lot
        return (
            accounted >= len(self.ledger.orders)
            and self.progress.queues_empty
            and self.progress.breaker_state == "CLOSED"
        )

    def _fulfilled(self) -> dict[str, int]:
        return dict(self.stage.consumer.module.downstream.submitted)

    def _account(self, *, finished_in_time: bool) -> Report:
        fulfilled = self._fulfilled()
        # Looked at, not taken: the parking lot keeps its messages for the operator (make demo KEEP=1).
        left = by_order(peek(self.sqs, self.stage.deployment.parking_lot_url))
        return account(
            self.ledger,
            self.operator,
            fulfilled=fulfilled,
            left=left,
            redriven=self.progress.redriven,
            runs=self.progress.runs,
            queues_empty=self.progress.queues_empty,
            elapsed=self._elapsed(),
            finished_in_time=finished_in_time,
        )
