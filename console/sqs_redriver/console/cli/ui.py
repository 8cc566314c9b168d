"""``ui``: the web console on 127.0.0.1, for the browser that opens the printed URL."""

from __future__ import annotations

import webbrowser
from typing import Annotated

import typer

from sqs_redriver.console.cli.app import app, err, out
from sqs_redriver.console.tool import Tool
from sqs_redriver.console.web.server import ConsoleServer


@app.command()
def ui(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: a free one).", min=0, max=65535)] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print the URL.")] = False,
) -> None:
    """The same views and actions in a browser: status with a depth chart, the fleet, groups,
    messages, replay, edit and retry, group rules, pause, outcomes and the audit trail. Serves
    127.0.0.1 only, to the URL's token; Ctrl-C stops."""
    tool: Tool = ctx.obj
    name = tool.deployment.name  # a wrong stack or options fail here, on one line, before serving
    console = ConsoleServer.bind(tool, port)
    out.print(f"console of {name}: {console.url}", markup=False, highlight=False, soft_wrap=True)
    err.print("Ctrl-C stops it. The URL holds the console's token: do not share it.", markup=False)
    if not no_browser:
        webbrowser.open(console.url)
    console.serve_until_interrupted()
    err.print("stopped", markup=False)
