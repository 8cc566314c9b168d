"""Pages that look: status (with the depth chart), the account's fleet of DLQs, groups, one message,
what became of each replay, the audit trail. None of them consumes a message: the library gives
back everything it reads."""

from __future__ import annotations

from flask import Blueprint, render_template, request
from markupsafe import Markup

from sqs_redriver.console import finding, outcomes
from sqs_redriver.console.audit import AuditedAction
from sqs_redriver.console.depth_history import DEPTH_WINDOW_SECONDS, depth_history
from sqs_redriver.console.fleet import read_connection_fleet, regions_to_read
from sqs_redriver.console.inventory import Where, group, is_fingerprint
from sqs_redriver.console.outcome_rules import BACK, Fate, explain
from sqs_redriver.console.shown import some
from sqs_redriver.console.status import EXPIRY_WARNING_SECONDS
from sqs_redriver.console.web.chart import depth_chart, swatch
from sqs_redriver.console.web.current import tool
from sqs_redriver.runtime.adapters import AwsCallError

pages = Blueprint("looking", __name__)
AUDIT_DAYS = 7
AUDIT_SHOWN = 100
LAST_RUNS_SHOWN = 10


@pages.get("/")
def status() -> str:
    """What `sqs-redriver status` shows, and the depth of each queue over the last hours."""
    console = tool()
    current = outcomes.status_with_latest_replay(console)
    now = current.at
    queues = [(f"source {d.name}", d.name) for d in current.sources]
    queues += [(f"DLQ {current.dlq.name}", current.dlq.name), ("parking lot", current.parking_lot.name)]
    try:
        history, chart_problem = depth_history(console.client("cloudwatch"), queues, now), ""
    except AwsCallError as exc:  # the chart is an extra: the status is still worth showing
        history, chart_problem = [], str(exc)
    chart = depth_chart([s.points for s in history], now - DEPTH_WINDOW_SECONDS, now)
    return render_template(
        "status.html",
        status=current,
        runs=[run.to_dict() for run in current.runs[:LAST_RUNS_SHOWN]],
        # Numbers and fixed words only (chart.py): safe as markup. The legend's labels are escaped.
        chart=Markup(chart),  # noqa: S704
        legend=[(Markup(swatch(index)), series.label) for index, series in enumerate(history)],  # noqa: S704
        has_points=any(series.points for series in history),
        chart_problem=chart_problem,
        now=now,
    )


@pages.get("/fleet")
def fleet() -> str:
    """What `sqs-redriver fleet` shows: every DLQ of the account in the regions asked
    (``?region=a&region=b``; the connection's by default), and what could not be read."""
    console = tool()
    asked = [region.strip() for region in request.args.getlist("region") if region.strip()]  # a blank field
    regions = regions_to_read(asked, console.connection.region_name)
    found = read_connection_fleet(console.connection, regions, now=console.now())
    return render_template(
        "fleet.html",
        fleet=found,
        holding=sum(1 for row in found.rows if row.depth is not None and row.depth.total),
        expiring=EXPIRY_WARNING_SECONDS,
        some=some,
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


@pages.get("/outcomes")
def recent_outcomes() -> str:
    """What `sqs-redriver outcome` lists: the recent replays, edits and group retries, each in a line."""
    console = tool()
    found, seen = outcomes.recent_outcomes(console)
    return render_template("outcomes.html", recent=found, gaps=seen.gaps if seen else "", now=console.now())


@pages.get("/outcomes/<replay_id>")
def outcome(replay_id: str) -> str:
    """What `sqs-redriver outcome ID` shows: one replay's identities, grouped by what became of them."""
    console = tool()
    record = outcomes.find(console, replay_id)
    seen = outcomes.snapshot(console)
    judged = outcomes.judge_replay(console, record, seen)
    return render_template(
        "outcome.html",
        record=record,
        judged=judged,
        gaps=seen.gaps,
        explain=explain,
        findable={*BACK, Fate.PARKED, Fate.NOT_SENT_YET},
        now=judged.now,
    )
