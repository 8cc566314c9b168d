"""The web console, ``sqs-redriver ui``: the command line's views and actions as pages, served on
127.0.0.1 to a browser signed in with a token it issued (guard.py). Server-rendered, no JavaScript.

A page is a view function (views.py looks, actions.py acts) and a template; its place in the
navigation is a line of ``server.NAVIGATION``. Every view calls the library the command line calls
(sqs_redriver.console), never logic of its own.

Here: what every view works with, the console's tool (one per server: the command line's
options), held by one request at a time."""

from __future__ import annotations

import threading

from flask import Flask, current_app, g

from sqs_redriver.console.tool import Tool

TOOL = "sqs_redriver.tool"
_HOLDING = "holds_the_tool"


def tool() -> Tool:
    """The tool of the console serving this request."""
    found: Tool = current_app.extensions[TOOL]
    return found


def one_request_at_a_time(app: Flask) -> None:
    """Let a request use the tool once the checks before it (the guard, registered first) let it
    in, and one request at a time: the tool's caches and audit stream are not shared across
    threads. The server reads and writes requests concurrently, so a slow client waits alone."""
    lock = threading.Lock()

    @app.before_request
    def take() -> None:
        lock.acquire()
        setattr(g, _HOLDING, True)

    @app.teardown_request
    def give_back(_error: BaseException | None) -> None:
        if g.pop(_HOLDING, False):
            lock.release()


def unrecorded() -> list[str]:
    """What the operator must be told the audit trail missed; only to a request let in."""
    return tool().take_warnings() if g.get(_HOLDING, False) else []
