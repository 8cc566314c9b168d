"""Pages that look: status (with the depth chart), groups, one message, the audit trail. None of
them consumes a message: the library gives back everything it reads."""

from __future__ import annotations

from flask import Blueprint, render_template
from markupsafe import Markup

from sqs_redriver.console import finding
from sqs_redriver.console.audit import AuditedAction
from sqs_redriver.console.depth_history import DEPTH_WINDOW_SECONDS, depth_history
from sqs_redriver.console.inventory import Where, group, is_fingerprint
from sqs_redriver.console.status import read_status
from sqs_redriver.console.web.chart import depth_chart, swatch
from sqs_redriver.console.web.current import tool

pages = Blueprint("looking", __name__)
AUDIT_DAYS = 7
AUDIT_SHOWN = 100
LAST_RUNS_SHOWN = 10


@pages.get("/")
def status() -> str:
    """What `sqs-redriver status` shows, and the depth of each queue over the last hours."""
    console = tool()
    now = console.now()
    current = read_status(
        console.deployment,
        sqs=console.client("sqs"),
        cloudwatch=console.client("cloudwatch"),
        table=console.table,
        now=now,
    )
    queues = [(f"source {d.name}", d.name) for d in current.sources]
    queues += [(f"DLQ {current.dlq.name}", current.dlq.name), ("parking lot", current.parking_lot.name)]
    history = depth_history(console.client("cloudwatch"), queues, now)
    chart = depth_chart([s.points for s in history], now - DEPTH_WINDOW_SECONDS, now)
    return render_template(
        "status.html",
        status=current,
        runs=[run.to_dict() for run in current.runs[:LAST_RUNS_SHOWN]],
        # Numbers and fixed words only (chart.py): safe as markup. The legend's labels are escaped.
        chart=Markup(chart),  # noqa: S704
        legend=[(Markup(swatch(index)), series.label) for index, series in enumerate(history)],  # noqa: S704
        has_points=any(series.points for series in history),
        now=now,
    )


@pages.get("/groups")
def groups() -> str:
    """What sits in the DLQ and the parking lot, by error fingerprint or park reason."""
    console = tool()
    reads = [finding.read_all(console, where) for where in (Where.PARKING_LOT, Where.DLQ)]
    found = group(item for read in reads for item in read.items)
    return render_template(
        "groups.html",
        groups=found,
        total=sum(len(read.items) for read in reads),
        gaps=[read.gaps for read in reads if read.gaps],
        is_fingerprint=is_fingerprint,
        now=console.now(),
    )


@pages.get("/messages/<message_id>")
def message(message_id: str) -> str:
    """One message: body, attributes, mark and history, failure, parking reason."""
    console = tool()
    found = finding.find_message(console, message_id)
    recorded = console.table.load_marks([found.identity]).get(found.identity)
    return render_template("message.html", item=found, recorded=recorded, now=console.now())


@pages.get("/audit")
def audit() -> str:
    """The latest operator actions, from the deployment's audit trail."""
    console = tool()
    now = console.now()
    trail = console.audit_log
    actions: list[AuditedAction] = []
    unreadable = 0
    if trail is not None:
        actions, unreadable = trail.read(now - AUDIT_DAYS * 86_400, now + 60, AUDIT_SHOWN)
    return render_template(
        "audit.html", trail=trail, actions=actions, unreadable=unreadable, days=AUDIT_DAYS, now=now
    )
