"""``status``: the breakers, the pause, the queues, the DLQ's time to expiry, a large drain's
progress and the last runs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqs_redriver.console.aws import QueueDepth, oldest_age_seconds, queue_depth
from sqs_redriver.console.safe_text import duration, inert_str, when
from sqs_redriver.console.tool import Deployment
from sqs_redriver.core.breaker import SILENT_PROBES_LIMIT, Breaker, State
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import DrainRecord, Pause, RunSummary, StateTable
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.limits import DRAIN_STALE_SECONDS

# The re-driver parks messages this long before their retention ends (EXPIRY_MARGIN_SECONDS's
# default); the tool warns from the same point.
EXPIRY_WARNING_SECONDS = 86_400


class DrainState(StrEnum):
    GOING = "going"
    INTERRUPTED = "interrupted"  # going, but no worker stepped its pace for DRAIN_STALE_SECONDS
    ENDED = "ended"  # a worker found the DLQ empty


@dataclass(frozen=True)
class DrainProgress:
    """Where a large drain stands at ``at``: its record (``DRAIN#<DLQ URL>``, as the core parsed
    it), which says what the DLQ held and the pace at the last step."""

    record: DrainRecord
    at: int

    @property
    def state(self) -> DrainState:
        if not self.record.going:
            return DrainState.ENDED
        return DrainState.INTERRUPTED if self.stepped_ago > DRAIN_STALE_SECONDS else DrainState.GOING

    @property
    def stepped_ago(self) -> int:
        """Seconds since the last step (0 for a worker whose clock runs ahead of the tool's)."""
        return max(0, self.at - self.record.stepped_at)

    @property
    def seconds_to_empty(self) -> int | None:
        """The messages left at the current rate, in whole seconds; None unless the drain is going
        (an interrupted one starts over slower) and moves."""
        if self.state is not DrainState.GOING:
            return None
        left, rate = self.record.messages_left, self.record.rate
        if left <= 0:
            return 0
        return math.ceil(left / rate) if rate > 0 else None

    def rows(self) -> list[tuple[str, str]]:
        """What the terminal and the page show, a (label, text) per line; inert."""
        record = self.record
        return [
            ("state", self._state_text()),
            ("messages left", f"{record.messages_left:,} in the DLQ as of {duration(self.stepped_ago)} ago"),
            ("rate", f"{record.rate:,} msg/s, all workers together (phase {inert_str(record.phase)})"),
            ("workers wanted", str(record.workers)),
            ("time to empty", self._time_to_empty_text()),
            ("started", when(record.started_at, self.at)),
        ]

    def _state_text(self) -> str:
        state = self.state
        if state is DrainState.ENDED:
            return f"ended {when(self.record.ended_at, self.at)}: the DLQ was empty"
        if state is DrainState.INTERRUPTED:
            return (
                f"interrupted: no worker stepped its pace for {duration(self.stepped_ago)} (the breaker, "
                "a pause or the schedule); when it resumes, the pace starts over at the start rate"
            )
        return "going"

    def _time_to_empty_text(self) -> str:
        seconds, state = self.seconds_to_empty, self.state
        if seconds is not None:
            return f"{duration(seconds)} at this rate"
        return "nothing moves (rate 0)" if state is DrainState.GOING else f"- ({state.value})"

    def to_dict(self) -> dict[str, Any]:
        record = self.record
        return {
            "state": self.state.value,
            "messages_left": record.messages_left,
            "rate": record.rate,
            "phase": record.phase,
            "fell_behind_at": record.fell_behind_at,
            "workers": record.workers,
            "seconds_to_empty": self.seconds_to_empty,
            "stepped_at": record.stepped_at,
            "stepped_seconds_ago": self.stepped_ago,
            "started_at": record.started_at,
            "ended_at": record.ended_at or None,
        }


@dataclass(frozen=True)
class Status:
    """One look at a re-driver."""

    deployment: Deployment
    at: int
    pause: Pause | None
    breakers: dict[str, Breaker]  # source queue URL -> its breaker
    sources: list[QueueDepth]
    dlq: QueueDepth
    parking_lot: QueueDepth
    dlq_oldest_age_seconds: int | None
    runs: list[RunSummary]
    # The latest large drain (None: there has been none, or its record is corrupt: logged).
    drain: DrainProgress | None = None
    # What became of the latest replay, edit or group retry, in one line (outcomes.latest_line).
    latest_replay: str | None = None
    # Why the DLQ's oldest age is unknown, when CloudWatch refused or failed to say.
    age_unread: str | None = None

    @property
    def dlq_time_to_expiry_seconds(self) -> int | None:
        """How long until SQS deletes the DLQ's oldest message (None while its age is unknown)."""
        if self.dlq_oldest_age_seconds is None:
            return None
        return self.dlq.retention_seconds - self.dlq_oldest_age_seconds

    @property
    def problems(self) -> list[str]:
        """What an on-call engineer should look at (the command exits 1 when there is any)."""
        found = []
        if self.pause is not None:
            since = f" {when(self.pause.at, self.at)}" if self.pause.at else ""
            found.append(
                f"paused by {self.pause.by}{since}: {self.pause.reason} (no run re-drives until `resume`)"
            )
        found += [
            f"breaker of {_name(url)} is OPEN since {breaker.changed_at}"
            for url, breaker in self.breakers.items()
            if breaker.state is State.OPEN
        ]
        found += [
            f"the consumer of {_name(url)} reported no verdict for its last {breaker.silent_probes} probes "
            "(CONSUMER_VERDICTS is on): judged by its queue's metrics and the DLQ"
            for url, breaker in self.breakers.items()
            if breaker.silent_probes >= SILENT_PROBES_LIMIT
        ]
        if self.age_unread:
            found.append(f"the DLQ's oldest message age could not be read: {self.age_unread}")
        expiry = self.dlq_time_to_expiry_seconds
        if expiry is not None and expiry < EXPIRY_WARNING_SECONDS:
            found.append(f"the DLQ's oldest message expires in {expiry} s")
        if self.parking_lot.total:
            found.append(f"{self.parking_lot.total} message(s) in the parking lot")
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "deployment": self.deployment.name,
            "at": self.at,
            "paused": self.pause is not None,
            "pause": None if self.pause is None else vars(self.pause),
            "breakers": {
                url: {
                    "state": b.state.value,
                    "changed_at": b.changed_at,
                    "failures": b.failures,
                    "successes": b.successes,
                    "canary_in_flight": b.canary is not None,
                    "moved_by": b.evidence.value,
                    "silent_probes": b.silent_probes,
                }
                for url, b in self.breakers.items()
            },
            "queues": {
                "sources": [_depth(d) for d in self.sources],
                "dlq": {
                    **_depth(self.dlq),
                    "oldest_age_seconds": self.dlq_oldest_age_seconds,
                    "time_to_expiry_seconds": self.dlq_time_to_expiry_seconds,
                },
                "parking_lot": _depth(self.parking_lot),
            },
            "runs": [run.to_dict() for run in self.runs],
            "drain": None if self.drain is None else self.drain.to_dict(),
            "latest_replay": self.latest_replay,
            "problems": self.problems,
        }


def read_status(deployment: Deployment, *, sqs: Any, cloudwatch: Any, table: StateTable, now: int) -> Status:
    """Read everything ``status`` shows: a few GetItem and GetQueueAttributes calls, one metric."""
    dlq = queue_depth(sqs, deployment.dlq_url)
    try:
        oldest, age_unread = oldest_age_seconds(cloudwatch, dlq.name, now), None
    except AwsCallError as exc:  # the queues and the breakers are still worth showing
        oldest, age_unread = None, str(exc)
    drain = table.load_drain(RecordKind.DRAIN.key(deployment.dlq_url))
    return Status(
        deployment=deployment,
        at=now,
        pause=table.load_pause(RecordKind.PAUSE.key(deployment.dlq_url)),
        breakers={
            source: table.load_breaker(RecordKind.BREAKER.key(source)) for source in deployment.sources
        },
        sources=[queue_depth(sqs, url) for url in deployment.source_queue_urls],
        dlq=dlq,
        parking_lot=queue_depth(sqs, deployment.parking_lot_url),
        dlq_oldest_age_seconds=oldest,
        runs=[RunSummary.from_dict(run) for run in table.load_runs(RecordKind.RUNS.key(deployment.dlq_url))],
        drain=None if drain is None else DrainProgress(drain, now),
        age_unread=age_unread,
    )


def _depth(depth: QueueDepth) -> dict[str, Any]:
    return {
        "name": depth.name,
        "url": depth.url,
        "visible": depth.visible,
        "in_flight": depth.in_flight,
        "delayed": depth.delayed,
        "retention_seconds": depth.retention_seconds,
    }


def _name(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]
