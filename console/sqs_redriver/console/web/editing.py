"""Edit and retry in the browser, as ``sqs-redriver edit`` does it: the message's document in a
form, a preview of the diff, then a confirmation; nothing is sent without the confirming POST.

The server keeps nothing between the steps: the edited document travels in the preview's hidden
field and is checked again on confirmation, and the message is found again in the queue the
preview showed (gone from there: it moved meanwhile, and nothing is sent)."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from sqs_redriver.console.edit_rules import DocumentError, Unchanged, changed, diff, render
from sqs_redriver.console.editing import document_of, edit_and_retry, original_of
from sqs_redriver.console.finding import find_message
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.console.tool import UsageError
from sqs_redriver.console.web.current import tool

pages = Blueprint("editing", __name__)
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
def preview(message_id: str) -> str | tuple[str, int]:
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
def confirm(message_id: str) -> str | tuple[str, int]:
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
