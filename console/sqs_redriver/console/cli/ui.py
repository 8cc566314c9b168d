"""``ui``: the web console on 127.0.0.1, for the browser it opens and the sign-in URLs it prints."""

from __future__ import annotations

from typing import Annotated

import typer

from sqs_redriver.console.cli.app import app, err, out
from sqs_redriver.console.tool import Tool
from sqs_redriver.console.web.access import TOKEN_SECONDS
from sqs_redriver.console.web.server import ConsoleServer


@app.command()
def ui(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: a free one).", min=0, max=65535)] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print a sign-in URL.")] = False,
) -> None:
    """The same views and actions in a browser: status with a depth chart, the fleet, groups,
    messages, replay, edit and retry, group rules, pause, outcomes and the audit trail. Serves
    127.0.0.1 only, to browsers signed in with a URL it printed or the browser it opened; Enter
    prints a fresh sign-in URL, Ctrl-C stops."""
    tool: Tool = ctx.obj
    name = tool.deployment.name  # a wrong stack or options fail here, on one line, before serving
    console = ConsoleServer.bind(tool, port)
    out.print(f"console of {name}: {console.url}", markup=False, highlight=False, soft_wrap=True)
    err.print(
        f"A sign-in URL works once, within {TOKEN_SECONDS:.0f} s: press Enter for a fresh one. "
        "Ctrl-C stops the console.",
        markup=False,
        soft_wrap=True,
    )
    if not no_browser:
        # A browser confined to its own /tmp (a snap, a flatpak) shows "file not found" for the
        # private sign-in file, and the opener cannot know it.
        opened = console.open_browser()
        err.print(
            'If the browser shows "file not found", press Enter here and open the new URL.'
            if opened
            else "No browser could be started: open the URL above.",
            markup=False,
        )
    console.serve_until_interrupted(on_enter=_print_url)
    err.print("stopped", markup=False)


def _print_url(url: str) -> None:
    out.print(f"sign in: {url}", markup=False, highlight=False, soft_wrap=True)
