"""Editing: ``edit``, a dead or parked message corrected in $EDITOR, shown as a diff, confirmed, and
sent back to its source with its original archived."""

from __future__ import annotations

from typing import Annotated

import click
import typer
from rich.text import Text

from sqs_redriver.console.cli import render
from sqs_redriver.console.cli.app import JsonOption, QueueChoice, YesOption, app, audited, err, fail, out
from sqs_redriver.console.cli.inert import inert
from sqs_redriver.console.edit_rules import DocumentError, Edited, Unchanged, changed, diff
from sqs_redriver.console.edit_rules import render as render_document
from sqs_redriver.console.editing import document_of, edit_and_retry, original_of
from sqs_redriver.console.finding import BOTH_QUEUES, find_message
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.console.tool import UsageError

DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}


@app.command("edit")
def edit_command(
    ctx: typer.Context,
    message: Annotated[str, typer.Argument(help="A MessageId (or its first 8+ characters) or identity.")],
    source: Annotated[
        QueueChoice, typer.Option("--from", help="Look in the parking lot, the DLQ, or both.")
    ] = QueueChoice.BOTH,
    yes: YesOption = False,
    json: JsonOption = False,
) -> None:
    """Edit a message's body and attributes in $EDITOR, then send it back to its source queue.

    JSON stays JSON; SQS's limits are checked before anything is sent; the original is archived
    first (its key is printed) and deleted only after the edited message arrived."""
    if json and not yes:
        raise UsageError("edit --json needs --yes: there is no one to ask")
    tool = audited(ctx)
    queues = BOTH_QUEUES if source is QueueChoice.BOTH else (Where(source.value),)
    item = find_message(tool, message, queues)
    before = document_of(item)
    edit = _edited(item, before)
    if edit is None:
        out.print("no change: nothing sent", markup=False)
        return
    after, edited = edit
    if not json:
        out.print(_diff_view(diff(before, render_document(edited))))
    if not yes:
        typer.confirm(f"send the edited message from the {item.where.value} to its source queue?", abort=True)
    report = edit_and_retry(tool, item, after)
    if json:
        render.print_json(out, report.to_dict())
    else:
        out.print(inert(report.summary()), style="green" if report.clean else "yellow", soft_wrap=True)
    if not report.clean:
        raise typer.Exit(1)


def _edited(item: Inspected, before: str) -> tuple[str, Edited] | None:
    """The operator's edit of ``before``, as typed and as checked; re-opened with the error shown
    until it is valid (or the operator gives up: exit 1). None when nothing changed."""
    text = before
    while True:
        try:
            edited = click.edit(text, extension=".json", require_save=False)
        except click.ClickException as exc:
            fail(f"cannot open the editor ($EDITOR, $VISUAL): {exc.format_message()}", code=1)
        if edited is None:
            return None
        text = edited
        try:
            return text, changed(text, original_of(item))
        except Unchanged:
            return None
        except DocumentError as exc:
            err.print(Text.assemble(("not sendable: ", "red"), inert(str(exc))), soft_wrap=True)
            if not typer.confirm("edit again?", default=True, err=True):
                raise typer.Exit(1) from None


def _diff_view(lines: str) -> Text:
    """The diff, inert, each line coloured by what it does."""
    view = Text()
    for line in lines.splitlines():
        view.append_text(inert(line, style=DIFF_STYLES.get(line[:1], "")))
        view.append("\n")
    return view
