"""Pages that look: status (with the depth chart), the account's fleet of DLQs, groups, one message,
what became of each replay, the audit trail. None of them consumes a message: the library gives
back everything it reads.

The depth chart is inline SVG drawn on the server (``depth_chart``): points in, markup out. Pure,
and made of numbers and fixed words only (no label of a queue or a message reaches it: the page's
legend, autoescaped, names the lines), so the page may include it as markup."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from flask import Blueprint, render_template, request
from markupsafe import Markup

from sqs_redriver.console import outcomes
from sqs_redriver.console.audit import AuditedAction
from sqs_redriver.console.aws import DEPTH_WINDOW_SECONDS, depth_history
from sqs_redriver.console.fleet import read_connection_fleet, regions_to_read
from sqs_redriver.console.inventory import Where, group, is_fingerprint
from sqs_redriver.console.outcomes import BACK, Fate, explain
from sqs_redriver.console.safe_text import some
from sqs_redriver.console.status import EXPIRY_WARNING_SECONDS
from sqs_redriver.console.tool import find_message, read_all
from sqs_redriver.console.web import tool
from sqs_redriver.core.errors import AwsCallError

pages = Blueprint("views", __name__)
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
        # Numbers and fixed words only (depth_chart): safe as markup. The legend's labels are escaped.
        chart=Markup(chart),  # noqa: S704
        legend=[(Markup(swatch(index)), series.label) for index, series in enumerate(history)],  # noqa: S704
        has_points=any(series.points for series in history),
        chart_problem=chart_problem,
        now=now,
    )


@pages.get("/fleet")
def fleet() -> str:
    """What `sqs-redriver fleet` shows: every DLQ of the account in the regions asked
    (``?region=a&region=b``; the connection's by default), what dead-letters into each, the
    dead-letter destinations that are not queues, and what could not be read."""
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
    reads = [read_all(console, where) for where in (Where.PARKING_LOT, Where.DLQ)]
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
    found = find_message(console, message_id)
    recorded = console.table.load_marks([found.counted_under]).get(found.counted_under)
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


# The depth chart.
WIDTH = 720
HEIGHT = 220
# Room for the axis labels: left (depths), bottom (times), and a little on top and right.
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 12, 28
# One colour per line, in order; the legend uses the same order (CSS classes line-0, line-1, ...).
COLOURS = ("#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")
Points = Sequence[tuple[float, float]]


def depth_chart(series: Sequence[Points], start: float, end: float) -> str:
    """An SVG of each series of (epoch seconds, depth) between ``start`` and ``end``: points
    outside the window, or not finite, are left out; an empty chart says so."""
    if not math.isfinite(end - start) or end <= start:
        start, end = 0.0, 1.0
    kept = [[(t, v) for t, v in points if _shown(t, v, start, end)] for points in series]
    top = _scale_top(max((v for points in kept for _t, v in points), default=0.0))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="queue depth over time">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        *_axes(start, end, top),
    ]
    for index, points in enumerate(kept):
        colour = COLOURS[index % len(COLOURS)]
        coordinates = " ".join(f"{_x(t, start, end):.1f},{_y(v, top):.1f}" for t, v in points)
        if len(points) == 1:
            x, y = _x(points[0][0], start, end), _y(points[0][1], top)
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
        elif points:
            parts.append(f'<polyline points="{coordinates}" fill="none" stroke="{colour}" stroke-width="2"/>')
    if not any(kept):
        parts.append(
            f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT / 2:.0f}" text-anchor="middle" '
            'font-size="14" fill="#666666">no datapoints yet</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _shown(t: float, v: float, start: float, end: float) -> bool:
    return math.isfinite(t) and math.isfinite(v) and start <= t <= end and v >= 0


def _scale_top(highest: float) -> float:
    """A round number at or above ``highest`` (at least 1), for the vertical axis."""
    if highest <= 1:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(highest))
    for step in (1, 2, 5, 10):
        top = step * magnitude
        if highest <= top:
            return top if math.isfinite(top) else highest  # near float's limit: no rounder number
    return highest


def _x(t: float, start: float, end: float) -> float:
    return LEFT + (t - start) / (end - start) * (WIDTH - LEFT - RIGHT)


def _y(v: float, top: float) -> float:
    return HEIGHT - BOTTOM - min(v, top) / top * (HEIGHT - TOP - BOTTOM)


def _axes(start: float, end: float, top: float) -> list[str]:
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    parts = [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#999999"/>',
        f'<line x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#999999"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end" font-size="11" fill="#333333">{top:g}</text>',
        f'<text x="{LEFT - 6}" y="{bottom}" text-anchor="end" font-size="11" fill="#333333">0</text>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        t = start + fraction * (end - start)
        anchor = ("start", "middle", "end")[int(fraction * 2)]
        parts.append(
            f'<text x="{_x(t, start, end):.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}" font-size="11" '
            f'fill="#333333">{_clock(t)}</text>'
        )
    return parts


def _clock(epoch: float) -> str:
    """``14:05Z``; a time outside what datetime can show, as a number."""
    try:
        return datetime.fromtimestamp(epoch, UTC).strftime("%H:%MZ")
    except (OverflowError, OSError, ValueError):
        return f"{epoch:.0f}"


def swatch(index: int) -> str:
    """A small square in the colour of line ``index``, for the page's legend."""
    colour = COLOURS[index % len(COLOURS)]
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="12" height="12">'
        f'<rect width="12" height="12" fill="{colour}"/></svg>'
    )
