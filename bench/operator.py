"""What the operator's tool costs on a parking lot of N messages (a moto server, every AWS request
counted): `groups` (a scan that consumes nothing) and a rate-limited `replay` of one group.

    python -m bench --operator [--lot-sizes 200 1000] [--replay-rate 50] [--json]
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from bench.metering import Meter
from local_aws.resources import create_resources
from local_aws.server import moto_server, reset_moto
from sqs_redriver.console.inventory import Where, group
from sqs_redriver.console.replay import MoveReport, replay
from sqs_redriver.console.tool import Connection, Target, Tool
from sqs_redriver.core.table import ParkCause, ParkReason
from sqs_redriver.core.transfer import TokenBucket
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.mark import Mark

GROUPS = ("bug-a", "bug-b")  # the parking lot holds two groups, half each


@dataclass(frozen=True)
class OperatorFigures:
    parked: int
    groups_seconds: float
    groups_requests_per_message: float
    replayed: int
    replay_rate: float
    replay_seconds: float
    replay_requests_per_message: float
    replay_write_units: float


def run(sizes: list[int], rate: float) -> list[OperatorFigures]:
    figures = []
    with moto_server() as endpoint:
        for size in sizes:
            reset_moto(endpoint)
            figures.append(_measure(size, rate))
    return figures


def _measure(size: int, rate: float) -> OperatorFigures:
    aws = create_resources()
    _park(aws, size)
    now = int(time.time())

    scan_meter = Meter()
    tool = _tool(aws, scan_meter)
    started = time.perf_counter()
    with tool.scan(Where.PARKING_LOT) as scan:
        items = scan.everything()
        found = group(items)
    groups_seconds = time.perf_counter() - started
    assert sum(g.count for g in found) == size, found

    replay_meter = Meter()
    tool = _tool(aws, replay_meter)
    report = MoveReport()
    started = time.perf_counter()
    replay(
        tool.scan(Where.PARKING_LOT),
        [item.message.message_id for item in items if item.group == GROUPS[0]],  # what `groups` showed
        lambda item: tool.source_for(item),
        table=tool.table,
        now=now,
        bucket=TokenBucket(rate, burst=10),
        report=report,
    )
    replay_seconds = time.perf_counter() - started
    assert report.clean and report.moved == size // 2, report
    return OperatorFigures(
        parked=size,
        groups_seconds=round(groups_seconds, 2),
        groups_requests_per_message=round(scan_meter.calls / size, 3),
        replayed=report.moved,
        replay_rate=rate,
        replay_seconds=round(replay_seconds, 2),
        replay_requests_per_message=round(replay_meter.calls / report.moved, 3),
        replay_write_units=replay_meter.write_units,
    )


def _tool(aws: Any, meter: Meter) -> Tool:
    tool = Tool(
        Connection(),
        Target(
            dlq_url=aws.dlq_url,
            source_urls=(aws.source_url,),
            parking_lot_url=aws.parking_lot_url,
            table=aws.table_name,
        ),
    )
    for service in ("sqs", "dynamodb"):
        meter.attach(tool.client(service))
    return tool


def _park(aws: Any, size: int) -> None:
    """``size`` messages as the re-driver parks them: terminal failures of two bugs."""
    for start in range(0, size, 10):
        entries = []
        for n in range(start, min(start + 10, size)):
            fingerprint = GROUPS[n % 2]
            failure = Failure(FailureKind.TERMINAL, "orders.InvalidOrder", "bad", fingerprint, 1, 1, "arn")
            mark = Mark(f"id-{n}", 1, 1, (2,), failure=failure)
            reason = ParkReason(ParkCause.TERMINAL, "terminal", 1, 1, 3, aws.source_url, f"m-{n}")
            entries.append(
                {
                    "Id": str(n - start),
                    "MessageBody": json.dumps({"order_id": f"o-{n}"}),
                    "MessageAttributes": {
                        MARK_ATTRIBUTE: string_attribute(mark.to_json(parked=reason.to_dict()))
                    },
                }
            )
        aws.sqs.send_message_batch(QueueUrl=aws.parking_lot_url, Entries=entries)


def render(figures: list[OperatorFigures], *, as_json: bool) -> str:
    if as_json:
        return json.dumps([asdict(f) for f in figures], indent=2)
    lines = [
        "| parked | groups: s / requests per message | replayed (one group) | rate "
        "| replay: s / requests per message |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {f.parked} | {f.groups_seconds} / {f.groups_requests_per_message} | {f.replayed} | "
        f"{f.replay_rate:g}/s | {f.replay_seconds} / {f.replay_requests_per_message} |"
        for f in figures
    ]
    return "\n".join(lines)
