"""Pages that act: replay (preview, then confirm), edit and retry, a group's retry or park record,
pause and resume. Each POST carries the session's CSRF token (guard.py) and runs inside the
library's audit record.

A replay moves exactly what its preview showed, as the command line's does: the preview's form
carries the MessageIds it chose (a hidden field each, at most ``MAX_REPLAY_MESSAGES``), and the
confirmation moves those and no others (replay.replay_by_id); one gone meanwhile is reported, never
replaced. The posted ids are input like any other: checked, and a bad one is a 400 naming the
field. The replay runs within its request: the page answers when it is done, with the summary the
command line prints.

Edit and retry works as ``sqs-redriver edit`` does: the message's document in a form, a preview of
the diff, then a confirmation; nothing is sent without the confirming POST. The server keeps
nothing between the steps: the edited document travels in the preview's hidden field and is
checked again on confirmation, and the message is found again in the queue the preview showed
(gone from there: it moved meanwhile, and nothing is sent)."""

from __future__ import annotations

import re

from flask import Blueprint, redirect, render_template, request, url_for
from werkzeug.datastructures import MultiDict
from werkzeug.wrappers import Response

from sqs_redriver.console import controls
from sqs_redriver.console.editing import changed, diff, document_of, edit_and_retry, original_of, render
from sqs_redriver.console.errors import DocumentError, Unchanged, UsageError
from sqs_redriver.console.inventory import Inspected, Selection, Where
from sqs_redriver.console.replay import (
    DEFAULT_RATE,
    MoveReport,
    choose,
    describe,
    parse_selection,
    replay_by_id,
)
from sqs_redriver.console.safe_text import some
from sqs_redriver.console.tool import find_message
from sqs_redriver.console.web import tool
from sqs_redriver.core.table import GroupAction

pages = Blueprint("actions", __name__)
MAX_RATE = 500.0
# The most one replay from the console moves. Its preview's form names each by MessageId: at the
# longest MessageId that is 10,000 x len("&message_id=" + 100 characters) = 1.1 MB, far within the
# guard's body limit (guard.FORM_BYTES, 8.5 MB). A preview that chose more offers the first ones.
MAX_REPLAY_MESSAGES = 10_000
MESSAGE_ID_FIELD = "message_id"
# An SQS MessageId: AWS documents at most 100 characters (today each is a UUID, which AWS says not
# to rely on); letters, digits, - and _ keep markup and control characters out.
MESSAGE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
SHOWN_CHARS = 40


@pages.get("/replay")
def replay_preview() -> str:
    """What a replay would move, by group (at most ``MAX_REPLAY_MESSAGES``); the form that confirms
    it, carrying the MessageIds of exactly those messages."""
    console = tool()
    where, selection = _wanted()
    matched = choose(console, where, selection, None)
    chosen = matched.first(MAX_REPLAY_MESSAGES)
    return render_template(
        "replay_preview.html",
        chosen=chosen,
        matched=len(matched.items),
        message_id_field=MESSAGE_ID_FIELD,
        where=where,
        groups_wanted=request.args.getlist("group"),
        ids_wanted=request.args.getlist("id"),
        rate=DEFAULT_RATE,
        recorded=console.audit_log is not None,
        now=console.now(),
        dead_letters=", ".join(
            f"{source.target_kind.value} {source.target_arn}"
            for source in console.deployment.dead_letter_sources
        ),
    )


@pages.post("/replay")
def replay() -> str:
    """Replay exactly the messages the preview showed, named by the MessageIds its form carried (a
    message gone meanwhile is reported, and nothing moves in its place)."""
    console = tool()
    where, selection = _wanted()
    rate = _rate(request.form.get("rate", ""))
    message_ids = _previewed_ids(request.form.getlist(MESSAGE_ID_FIELD))
    report = replay_by_id(
        console, where, message_ids, selection=describe(selection), rate=rate, report=MoveReport()
    )
    return render_template(
        "moved.html",
        previewed=len(message_ids),
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
    line = controls.mark_group(tool(), fingerprint, action, _reason(), force=False)
    return render_template("done.html", line=line)


@pages.post("/pause")
def pause() -> Response:
    controls.pause(tool(), _reason())
    return redirect(url_for("views.status"), code=303)


@pages.post("/resume")
def resume() -> Response:
    controls.resume(tool())
    return redirect(url_for("views.status"), code=303)


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


def _previewed_ids(posted: list[str]) -> list[str]:
    """The MessageIds the preview's form carried, checked: a form can be forged or cut short."""
    field = MESSAGE_ID_FIELD
    if not posted:
        raise UsageError(f"{field}: the form names no previewed message; open the replay's preview again")
    if len(posted) > MAX_REPLAY_MESSAGES:
        raise UsageError(
            f"{field}: {len(posted)} messages named; a replay from the console moves at most "
            f"{MAX_REPLAY_MESSAGES}"
        )
    malformed = [value for value in posted if not MESSAGE_ID.fullmatch(value)]
    if malformed:
        shown = [value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "..." for value in malformed]
        raise UsageError(
            f"{field}: not an SQS MessageId (letters, digits, - and _, at most 100 characters): "
            + some(shown, shown=3)
        )
    if len(set(posted)) < len(posted):
        raise UsageError(f"{field}: a message is named more than once; open the replay's preview again")
    return posted


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


# Edit and retry.


# The CSS class of a diff line, by how it starts (the file headers before the +/- lines).
DIFF_CLASSES = (
    ("+++", "diff-file"),
    ("---", "diff-file"),
    ("+", "diff-add"),
    ("-", "diff-del"),
    ("@", "diff-hunk"),
)


@pages.get("/messages/<message_id>/edit")
def edit_form(message_id: str) -> str:
    """The message's body and attributes as the document to edit."""
    item = find_message(tool(), message_id)
    return _form(item, document_of(item))


@pages.post("/messages/<message_id>/edit")
def edit_preview(message_id: str) -> str | tuple[str, int]:
    """The edit checked and shown as a diff, with the form that confirms it; a document SQS or the
    re-driver would refuse comes back in the form with the reason (400), as typed."""
    item = _found_again(message_id)
    document = request.form.get("document", "")
    try:
        edited = changed(document, original_of(item))
    except Unchanged as exc:
        return _form(item, document, notice=str(exc))
    except DocumentError as exc:
        return _form(item, document, error=str(exc)), 400
    return render_template(
        "edit_preview.html",
        item=item,
        document=document,
        lines=_classified(diff(document_of(item), render(edited))),
        rows=_rows(document),
        recorded=tool().audit_log is not None,
    )


@pages.post("/messages/<message_id>/edit/confirm")
def edit_confirm(message_id: str) -> str | tuple[str, int]:
    """Send the previewed edit: the original archived, the edit sent to its source, the original
    deleted last (editing.edit_and_retry); the page says what happened and links its outcome."""
    item = _found_again(message_id)
    document = request.form.get("document", "")
    try:
        report = edit_and_retry(tool(), item, document)
    except Unchanged as exc:
        return _form(item, document, notice=str(exc))
    except DocumentError as exc:
        return _form(item, document, error=str(exc)), 400
    return render_template("edited.html", report=report, recorded=tool().audit_log is not None)


def _form(item: Inspected, document: str, *, error: str = "", notice: str = "") -> str:
    return render_template(
        "edit.html", item=item, document=document, error=error, notice=notice, rows=_rows(document)
    )


def _found_again(message_id: str) -> Inspected:
    """The message, in the queue the form was made for (NotFound when it moved meanwhile)."""
    try:
        where = Where(request.form.get("from", ""))
    except ValueError as exc:
        raise UsageError("from takes dlq or parking-lot") from exc
    return find_message(tool(), message_id, (where,))


def _classified(text: str) -> list[tuple[str, str]]:
    """Each line of a unified diff with its CSS class."""
    return [
        (next((css for start, css in DIFF_CLASSES if line.startswith(start)), ""), line)
        for line in text.splitlines()
    ]


def _rows(document: str) -> int:
    """A textarea tall enough for the document, within reason."""
    return max(8, min(40, document.count("\n") + 2))
