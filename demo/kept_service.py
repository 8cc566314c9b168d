"""The demo's Lambda service once the story is over (``make demo KEEP=1``): the event source keeps
feeding the consumer and the schedule keeps running the re-driver, as during the story, so that what
the operator does from the console or the tool plays out to its end. Each delivery, and each run
that found something, is told in one line; none of it goes into the story's books."""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from typing import Any

from demo.kit_act import POLL_SLEEP_SECONDS, KitAct

SHOWN_ID_CHARS = 13  # as the tool's tables show a MessageId


class KeptService:
    """Takes the act's hooks over and runs its stage's event source and schedule, one ``step`` at a
    time, until ``stop_requested`` says otherwise."""

    def __init__(self, act: KitAct, tell: Callable[[str], None], stop_requested: Callable[[], bool]) -> None:
        self._stage = act.stage
        self._tell = tell
        self._stop_requested = stop_requested
        self._fulfilled = dict(self._submitted())
        act.on_delivery = self._delivered
        act.while_redriver_waits = self._while_redriver_waits

    def step(self) -> None:
        """Deliver what the source queue holds, then run the re-driver if its tick is due."""
        self._deliver()
        try:
            summary = self._stage.schedule.fire_if_due()
        except Exception as error:  # noqa: BLE001 - Lambda records a failed run; the schedule goes on
            self._tell(f"re-driver: the run failed ({type(error).__name__}; see the log): the next tick runs")
            traceback.print_exc(file=self._stage.redriver.log)
            return
        if summary is not None and (summary["received"] or summary["breaker_transitions"]):
            self._tell(run_line(summary))

    def _deliver(self) -> None:
        while not self._stop_requested() and self._stage.event_source.poll():
            pass

    def _while_redriver_waits(self, seconds: float) -> None:
        """A run waits for verdicts: the consumer is fed meanwhile. Once a stop is asked the run
        goes on without waiting (its verdicts would come too late for anyone to see)."""
        until = time.monotonic() + seconds
        while not self._stop_requested():
            self._deliver()
            left = until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(POLL_SLEEP_SECONDS, left))

    def _delivered(self, messages: list[dict[str, Any]], failed: set[str]) -> None:
        submitted = self._submitted()
        for message in messages:
            order = order_id(message)
            if message["MessageId"] in failed:
                fate = "failed: left to SQS, which delivers it again or dead-letters it"
            elif submitted.get(order, 0) > self._fulfilled.get(order, 0):
                fate = "fulfilled"
            elif order in self._fulfilled:
                fate = "already fulfilled: answered from its idempotency record, not fulfilled again"
            else:
                fate = "refused: the consumer kit sent it to the DLQ with the reason"
            self._tell(f"consumer: {order or 'message ' + message['MessageId'][:SHOWN_ID_CHARS]} {fate}")
        self._fulfilled = dict(submitted)

    def _submitted(self) -> dict[str, int]:
        """Order id -> how many times the consumer's downstream fulfilled it."""
        return dict(self._stage.consumer.module.downstream.submitted)


def order_id(message: dict[str, Any]) -> str:
    """The order a message carries, or "" when its body is not one (an operator may edit it)."""
    try:
        body = json.loads(message["Body"])
    except ValueError:
        return ""
    found = body.get("order_id") if isinstance(body, dict) else None
    return found if isinstance(found, str) else ""


def run_line(summary: dict[str, Any]) -> str:
    """One line on a re-driver run, from its summary."""
    transitions = summary["breaker_transitions"]
    moved = f" ({', '.join(map(str, transitions))})" if transitions else ""
    return (
        f"re-driver: received {summary['received']}, re-driven {summary['redriven']}, "
        f"parked {summary['parked']}; breaker {summary['breaker_state']}{moved}"
    )
