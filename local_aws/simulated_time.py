"""Simulated time for the world of local_aws.simulation: the clock freezegun holds, a long poll
that waits in simulated time, and when a moto queue's next message becomes visible.

moto keeps, per message, ``visible_at`` (the end of its visibility timeout) and ``delayed_until``
(the end of its DelaySeconds), in float milliseconds of its clock (``datetime``, frozen by
freezegun). They are read from moto's in-process backend: the only thing read behind moto's API.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from moto.sqs.models import sqs_backends

from local_aws import ACCOUNT, REGION
from local_aws.clients import ClientProxy

SIM_EPOCH = 1_795_305_600  # 2026-11-22T00:00:00Z: where simulated time starts
# Not scanned by freezegun when it starts (its scan touches every attribute of every module, and
# the CDK's lazy modules load themselves when touched: seconds per start); they never read the time
# in the world. Powertools' parser is lazy too: loaded while freezegun fakes ``datetime``, its
# pydantic models fail to build (batch imports it when pydantic was imported first, as moto does).
UNFROZEN = [
    "aws_cdk",
    "jsii",
    "constructs",
    "cdk_nag",
    "sqs_redriver.cdk",
    "app",
    "typeguard",
    "aws_lambda_powertools.utilities.parser",
]
SCHEDULE_SECONDS = {"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86_400, "days": 86_400}


class SimulatedClock:
    """Epoch seconds, in whole milliseconds, that move only when the world moves them; freezegun
    makes ``time.time`` and ``datetime`` (moto's clock) say the same."""

    def __init__(self, freezer: Any, start_ms: int) -> None:
        self._freezer = freezer
        self.start_ms = start_ms
        self.now_ms = start_ms
        self._listeners: list[Callable[[int], None]] = []

    def __call__(self) -> float:
        return self.now_ms / 1000

    @property
    def elapsed(self) -> float:
        """Simulated seconds since the world started."""
        return (self.now_ms - self.start_ms) / 1000

    def on_move(self, listener: Callable[[int], None]) -> None:
        """Call ``listener(now_ms)`` after every move, before anything else sees the new time."""
        self._listeners.append(listener)

    def move_to(self, ms: int) -> None:
        if ms < self.now_ms:
            raise ValueError(f"the simulated clock does not go back ({ms} < {self.now_ms})")
        self.now_ms = ms
        self._freezer.move_to(datetime.fromtimestamp(ms / 1000, UTC))
        for listener in self._listeners:
            listener(ms)


class SimulatedLongPoll(ClientProxy):
    """A long poll in simulated time: moto's in-process long poll waits on the real clock (and
    never ends on a frozen one). An empty receive that asked to wait lets the world move for the
    wait, then looks once more (SQS would answer as soon as a message arrives)."""

    def __init__(self, client: Any, sleep: Callable[[float], None]) -> None:
        super().__init__(client)
        self._sleep = sleep

    def receive_message(self, **kwargs: Any) -> Any:
        wait = int(kwargs.pop("WaitTimeSeconds", 0))
        response = self._client.receive_message(WaitTimeSeconds=0, **kwargs)
        if response.get("Messages") or not wait:
            return response
        self._sleep(wait)
        return self._client.receive_message(WaitTimeSeconds=0, **kwargs)


def schedule_seconds(expression: str) -> int:
    """The period of a ``rate(N unit)`` schedule expression."""
    amount, _, unit = expression.removeprefix("rate(").removesuffix(")").partition(" ")
    if not expression.startswith("rate(") or unit not in SCHEDULE_SECONDS:
        raise ValueError(f"the world plays rate(...) schedules only, got {expression!r}")
    return int(amount) * SCHEDULE_SECONDS[unit]


def moto_queue(queue_url: str) -> Any:
    return sqs_backends[ACCOUNT][REGION].queues[queue_url.rsplit("/", 1)[-1]]


def next_visible_ms(queue_url: str, *, not_before: int) -> int | None:
    """The first whole millisecond, at or after ``not_before``, when a message of the queue is
    visible (moto: after ``visible_at``, and at or after ``delayed_until``); None if it is empty."""
    times = [_wake_ms(m.visible_at, m.delayed_until) for m in moto_queue(queue_url)._messages]
    return max(min(times), not_before) if times else None


def _wake_ms(visible_at: float, delayed_until: float) -> int:
    """moto's tests, in float ms: visible when now > visible_at; delayed while now < delayed_until.
    The tolerance absorbs float noise; an early wake costs one empty poll and a 1 ms step."""
    return max(math.floor(visible_at + 1e-6) + 1, math.ceil(delayed_until - 1e-6))
