"""The real re-driver in the simulated world (local_aws.simulation): composed on the simulated
clock, invoked when Lambda would invoke it, and what each run leaves in the world's journal."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from local_aws.compose import local_redriver
from local_aws.journal import Journal, Parking, Run
from local_aws.queues import mark_data
from local_aws.simulated_time import SimulatedClock
from sqs_redriver.core.table import Resume
from sqs_redriver.core.transfer import TokenBucket
from sqs_redriver.protocol.limits import SQS_MAX_BATCH_SIZE
from sqs_redriver.runtime.report import RunReport
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.settings import Settings

CONTINUATION_START_MS = 1000
QUIET_LOGGER = "redriver-simulation"  # the re-driver's logger in the world: logs nowhere


def simulated_redriver(
    settings: Settings,
    *,
    sqs: Any,
    dynamodb: Any,
    s3: Any,
    cloudwatch: Any,
    clock: SimulatedClock,
    sleep: Callable[[float], None],
    seed: int,
    delivery: Callable[[str, str], Any] | None = None,
) -> Redriver:
    """The re-driver over the world's clients, on its clock: its waits call ``sleep``; ``delivery``,
    the targets' clients of a DLQ of another kind."""
    quiet = logging.getLogger(QUIET_LOGGER)
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    return local_redriver(
        settings,
        sqs=sqs,
        dynamodb=dynamodb,
        s3=s3,
        cloudwatch=cloudwatch,
        clock=clock,
        sleep=sleep,
        seed=seed,
        logger_name=quiet.name,
        delivery=delivery,
        # The default limiter reads the real monotonic clock and sleeps for real.
        limiter=TokenBucket(
            settings.max_redrives_per_second, burst=SQS_MAX_BATCH_SIZE, clock=clock, sleep=sleep
        ),
    )


class Invocations:
    """When Lambda invokes the re-driver: at each tick of its schedule; and a run's continuation
    right after the run (Lambda queues the asynchronous invocation and starts it about a second
    later). The world plays one run at a time: a tick due during a run starts when it returns (in
    Lambda it may run beside it; the chain's held slot keeps it from starting a second chain). A
    large drain's workers are not played here (bench/million_model.py)."""

    def __init__(self, clock: SimulatedClock, schedule_seconds: int) -> None:
        self._clock = clock
        self._period_ms = schedule_seconds * 1000
        self._next_tick_ms = clock.now_ms + self._period_ms
        self._continuation: Resume | None = None
        self._continuation_at_ms = 0

    def next_ms(self) -> int:
        """When the next invocation starts."""
        return self._continuation_at_ms if self._continuation else self._next_tick_ms

    def take(self) -> Resume | None:
        """The invocation starting now: the continuation's, or (None) the schedule's."""
        resume, self._continuation = self._continuation, None
        return resume

    def returned(self, report: RunReport, *, scheduled: bool) -> None:
        """A run returned: its continuation follows it; a scheduled run's missed ticks are dropped
        (they come down to this one run, not a burst of catch-up runs)."""
        if report.continue_with is not None:
            self._continuation = report.continue_with
            self._continuation_at_ms = self._clock.now_ms + CONTINUATION_START_MS
        if scheduled:
            while self._next_tick_ms <= self._clock.now_ms:
                self._next_tick_ms += self._period_ms


def run_record(report: RunReport, *, started_ms: int, clock: SimulatedClock, breaker_state: str) -> Run:
    """The journal's record of a run that started at ``started_ms`` and ends now."""
    return Run(
        at=(started_ms - clock.start_ms) / 1000,
        seconds=(clock.now_ms - started_ms) / 1000,
        mode=report.mode.value,
        received=report.received,
        redriven=report.redriven,
        parked=report.parked,
        returned=report.returned,
        errors=report.errors,
        stopped_because=report.stopped_because.value,
        breaker_state=breaker_state,
    )


def collect_parked(
    sqs: Any, parking_lot_url: str, journal: Journal, *, key: Callable[[str], str], at: float
) -> None:
    """Take what a run parked out of the parking lot, as an operator would, into the journal."""
    while True:
        messages = sqs.receive_message(
            QueueUrl=parking_lot_url,
            MaxNumberOfMessages=SQS_MAX_BATCH_SIZE,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            return
        for m in messages:
            mark = mark_data(m)
            parked = mark.get("parked", {})
            redrives = int(parked.get("redrive_count", mark.get("n", 0)))
            journal.parkings.append(
                Parking(at, key(m["Body"]), redrives, str(parked.get("why", "")), error=mark.get("err"))
            )
        sqs.delete_message_batch(
            QueueUrl=parking_lot_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )
