"""Pages that act: replay (preview, then confirm), a group's retry or park record, pause and resume.
Each POST carries the session's CSRF token (guard.py) and runs inside the library's audit record.

A replay runs within its request, as the command line's does within its command: the page answers
when it is done, with the same summary."""

from __future__ import annotations

from flask import Blueprint, redirect, render_template, request, url_for
from werkzeug.datastructures import MultiDict
from werkzeug.wrappers import Response

from sqs_redriver.console import steering
from sqs_redriver.console.inventory import Selection, Where
from sqs_redriver.console.moves import MoveReport
from sqs_redriver.console.moving import DEFAULT_RATE, choose, parse_selection, replay_chosen
from sqs_redriver.console.tool import UsageError
from sqs_redriver.console.web.current import tool
from sqs_redriver.runtime.model.groups import GroupAction

pages = Blueprint("acting", __name__)
MAX_RATE = 500.0


@pages.get("/replay")
def replay_preview() -> str:
    """What a replay would move, by group; the form that confirms it."""
    console = tool()
    where, selection = _wanted()
    chosen = choose(console, where, selection, None)
    return render_template(
        "replay_preview.html",
        chosen=chosen,
        where=where,
        groups_wanted=request.args.getlist("group"),
        ids_wanted=request.args.getlist("id"),
        rate=DEFAULT_RATE,
        recorded=console.audit_log is not None,
        now=console.now(),
    )


@pages.post("/replay")
def replay() -> str:
    """Replay what the preview showed (chosen again: what moved meanwhile is said, not guessed)."""
    console = tool()
    where, selection = _wanted()
    rate = _rate(request.form.get("rate", ""))
    chosen = choose(console, where, selection, None)
    report = MoveReport()
    if chosen.items:
        replay_chosen(console, where, selection, rate=rate, report=report)
    return render_template(
        "moved.html",
        chosen=len(chosen.items),
        report=report,
        lines=report.summary_lines("replayed"),
        recorded=console.audit_log is not None,
    )


@pages.get("/group-rule")
def group_rule_form() -> str:
    """What retrying or parking a group on sight means, and the form that records it."""
    fingerprint, action = _rule()
    return render_template(
        "group_rule.html", fingerprint=fingerprint, action=action, recorded=tool().audit_log is not None
    )


@pages.post("/group-rule")
def group_rule() -> str:
    """Record a group's retry or park rule (`retry-group`, `park-group`)."""
    fingerprint, action = _rule()
    line = steering.mark_group(tool(), fingerprint, action, _reason(), force=False)
    return render_template("done.html", line=line)


@pages.post("/pause")
def pause() -> Response:
    steering.pause(tool(), _reason())
    return redirect(url_for("looking.status"), code=303)


@pages.post("/resume")
def resume() -> Response:
    steering.resume(tool())
    return redirect(url_for("looking.status"), code=303)


def _fields() -> MultiDict[str, str]:
    """The form's fields on a POST, the query's on a GET."""
    return request.form if request.method == "POST" else request.args


def _wanted() -> tuple[Where, Selection]:
    source = _fields()
    try:
        where = Where(source.get("from", Where.PARKING_LOT.value))
    except ValueError as exc:
        raise UsageError("replay from takes dlq or parking-lot") from exc
    return where, parse_selection(source.getlist("group"), (), None, None, source.getlist("id"))


def _rate(text: str) -> float:
    try:
        rate = float(text) if text else DEFAULT_RATE
    except ValueError as exc:
        raise UsageError(f"rate {text!r} is not a number of messages per second") from exc
    if not 0.1 <= rate <= MAX_RATE:
        raise UsageError(f"rate must be between 0.1 and {MAX_RATE:g} messages per second")
    return rate


def _rule() -> tuple[str, GroupAction]:
    values = _fields()
    try:
        action = GroupAction(values.get("action", ""))
    except ValueError as exc:
        raise UsageError("action takes retry or park") from exc
    return values.get("fingerprint", ""), action


def _reason() -> str:
    reason = request.form.get("reason", "").strip()
    if not reason:
        raise UsageError("say why (the reason is recorded, and every run logs it)")
    return reason
