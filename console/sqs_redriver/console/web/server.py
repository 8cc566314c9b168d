"""The console's app and its server. ``create_app`` wires the pages (views.py, actions.py) behind
the guard (guard.py), one request at a time (__init__.py), each failure a page of one line.

The server: werkzeug on 127.0.0.1 only, a free port unless told. A thread per connection, each with
a timeout, so that a client holding half a request open waits alone (the views still take the tool
one at a time), up to a number of connections at once. Stopping closes every open connection. The
browser it opens signs in through a private file (``SignInPage``)."""

from __future__ import annotations

import contextlib
import html
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError
from flask import Flask, render_template
from werkzeug.exceptions import HTTPException
from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

from sqs_redriver.console.advice import explain
from sqs_redriver.console.errors import AuditUnavailable, Conflict, DeploymentNotFound, NotFound, UsageError
from sqs_redriver.console.safe_text import age, clipped, duration, inert_str, when
from sqs_redriver.console.tool import Tool
from sqs_redriver.console.web import TOOL, actions, one_request_at_a_time, unrecorded, views
from sqs_redriver.console.web.guard import TOKEN_PARAMETER, Access, csrf_token, guard
from sqs_redriver.console.web.guard import bind as bind_port
from sqs_redriver.core.errors import AwsCallError

logger = logging.getLogger(__name__)

# (endpoint, label) of each page the navigation bar links to, in order.
NAVIGATION = (
    ("views.status", "Status"),
    ("views.fleet", "Fleet"),
    ("views.groups", "Groups"),
    ("views.recent_outcomes", "Outcomes"),
    ("views.audit", "Audit"),
)


def create_app(tool: Tool, *, access: Access, port: int) -> Flask:
    """The console over ``tool`` (its deployment, connection and audit trail), for the browsers
    ``access`` signs in, on 127.0.0.1:``port``."""
    app = Flask(__name__)
    app.extensions[TOOL] = tool
    guard(app, access)
    one_request_at_a_time(app)
    bind_port(app, port)
    _failure_pages(app)
    app.register_blueprint(views.pages)
    app.register_blueprint(actions.pages)
    app.jinja_env.autoescape = True
    app.jinja_env.filters.update(inert=_inert, duration=duration, clipped=clipped)
    app.jinja_env.globals.update(csrf_token=csrf_token, navigation=NAVIGATION, when=when, age=age)
    app.context_processor(lambda: {"unrecorded": unrecorded()})
    return app


def _inert(value: object, multiline: bool = False) -> str:
    """Text from outside, with what a browser would hide or act on (bidi overrides, zero-width
    characters, controls) shown as escapes; the template escapes the HTML."""
    return inert_str("" if value is None else str(value), multiline=multiline)


# How a page fails: one line, escaped, with the status it deserves; never a traceback. The library's
# errors are the command line's (cli/app.py maps the same ones to exit codes): each with the status
# it gets and the page's title.
KNOWN: tuple[tuple[type[Exception], int, str], ...] = (
    (UsageError, 400, "Cannot do that"),
    (NotFound, 404, "Not there"),
    (DeploymentNotFound, 404, "No such re-driver"),
    (Conflict, 409, "Changed meanwhile"),
    (AuditUnavailable, 503, "Not recorded, so not done"),
    (AwsCallError, 503, "AWS did not answer"),
    (BotoCoreError, 503, "AWS did not answer"),
    (ResponseParserError, 503, "AWS did not answer"),  # an endpoint that is not AWS's
    (ClientError, 503, "AWS refused"),
)


def _page(title: str, message: str, status: int, *, moved: bool = False) -> tuple[str, int]:
    return render_template("failure.html", title=title, message=message, moved=moved), status


def _failure_pages(app: Flask) -> None:
    """Map every error a page may meet to its page."""
    for error, status, title in KNOWN:
        app.register_error_handler(error, _handler(status, title))

    @app.errorhandler(HTTPException)
    def http(exc: HTTPException) -> tuple[str, int]:
        return _page(exc.name, exc.description or "", exc.code or 500)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> tuple[str, int]:
        logger.exception("the console failed on a request")
        return _page("Something went wrong", "The console failed; the details are in its log.", 500)


def _handler(status: int, title: str) -> Callable[[Exception], tuple[str, int]]:
    def handle(exc: Exception) -> tuple[str, int]:
        return _page(title, explain(exc) or str(exc), status, moved=isinstance(exc, NotFound))

    return handle


HOST = "127.0.0.1"
# How long a connection may keep the server waiting on one read or write.
CONNECTION_SECONDS = 10.0
# Connections served at once (a thread each); one more is closed at once: a client trickling bytes
# into many connections cannot make the server start threads without end.
MAX_CONNECTIONS = 32


class _Handler(WSGIRequestHandler):
    """Werkzeug's handler, with its server's timeout on each connection; what a client got wrong (a
    request that timed out or was malformed) is logged as information, not as the server's error."""

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(cast(_Server, self.server).connection_seconds)

    def log_error(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        self.log("info", format, *args)


class _Server(ThreadedWSGIServer):
    """A thread per connection; the connections still open are known, to be closed at the stop."""

    def __init__(self, port: int, app: Any, connection_seconds: float, max_connections: int) -> None:
        self.connection_seconds = connection_seconds
        self.max_connections = max_connections
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(HOST, port, app, handler=_Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            full = len(self._open) >= self.max_connections
            if not full:
                self._open.add(request)
        if full:
            super().shutdown_request(request)
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End every open connection (its thread reads the end and finishes)."""
        with self._open_lock:
            still_open = list(self._open)
        for connection in still_open:
            with contextlib.suppress(OSError):  # closed meanwhile by its thread
                connection.shutdown(socket.SHUT_RDWR)


# The browser is opened on a private file that signs it in, so that the sign-in URL never appears
# on a command line (``ps`` shows every process's command line to every user of the machine).
PAGE = """<!doctype html>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0;url={url}">
<title>Signing in · sqs-redriver</title>
<p><a href="{url}">Open the console</a></p>
"""


class SignInPage:
    """A page that sends the browser to a sign-in URL, in a directory of its own (mode 0700),
    readable by this user alone (0600); ``remove`` takes both away."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="sqs-redriver-ui-"))
        self.path = self.directory / "sign-in.html"

    def write(self, url: str) -> str:
        """Write the page for ``url``; the ``file:`` URL to open it by."""
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as page:
            page.write(PAGE.format(url=html.escape(url, quote=True)))
        return self.path.as_uri()

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class ConsoleServer:
    """A console bound to its port, not yet serving. ``url`` signs a browser in, as does each URL
    ``sign_in_url`` makes: once, within a minute (guard.Access)."""

    server: _Server
    access: Access
    url: str = ""
    _pages: list[SignInPage] = field(default_factory=list)
    _serving: threading.Thread | None = None

    @classmethod
    def bind(
        cls,
        tool: Tool,
        port: int = 0,
        *,
        clock: Callable[[], float] = time.monotonic,
        connection_seconds: float = CONNECTION_SECONDS,
        max_connections: int = MAX_CONNECTIONS,
    ) -> ConsoleServer:
        """Bind ``port`` on 127.0.0.1 (0: a free one); ``clock`` times its tokens and sessions."""
        access = Access(clock)
        # The app learns its port once bound: create it for port 0, then bind and tell it.
        app = create_app(tool, access=access, port=port)
        try:
            server = _Server(port, app, connection_seconds, max_connections)
        except OSError as exc:
            raise UsageError(
                f"cannot serve on {HOST}:{port} ({exc.strerror}): choose another --port"
            ) from exc
        bind_port(app, server.server_port)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # its access log would print tokens
        console = cls(server, access)
        console.url = console.sign_in_url()
        return console

    def sign_in_url(self, on_use: Callable[[], object] | None = None) -> str:
        """A fresh sign-in URL; ``on_use`` is called when it is used."""
        token = self.access.issue(on_use)
        return f"http://{HOST}:{self.server.server_port}/?{TOKEN_PARAMETER}={token}"

    def open_browser(self, opener: Callable[[str], bool] = webbrowser.open) -> bool:
        """Open a browser on a private file that signs it in (removed once used, or at the stop);
        False when no browser could be started."""
        page = SignInPage()
        self._pages.append(page)
        opened = opener(page.write(self.sign_in_url(on_use=page.remove)))
        if not opened:
            page.remove()
        return opened

    def serve_until_interrupted(self, on_enter: Callable[[str], object] | None = None) -> None:
        """Serve until Ctrl-C (SIGINT), then stop. With ``on_enter``, each Enter typed in this
        process's terminal hands it a fresh sign-in URL."""
        try:
            serving = self.serve_in_thread()  # a Ctrl-C may land while the thread starts
            if on_enter is not None and _typed_here(sys.stdin):
                for _line in sys.stdin:
                    on_enter(self.sign_in_url())
            serving.join()
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def serve_in_thread(self) -> threading.Thread:
        """Serve in a daemon thread until ``stop`` (tests, the demo)."""
        self._serving = threading.Thread(
            target=self.server.serve_forever, name="sqs-redriver-ui", daemon=True
        )
        self._serving.start()
        return self._serving

    def stop(self) -> None:
        """Stop at once: no new connection, every open one closed, the port and sign-in files gone
        (a request in the middle of an AWS call is left to its daemon thread)."""
        if self._serving is not None and self._serving.is_alive():
            self.server.shutdown()  # waits for serve_forever: never call it if it will not run
        self.server.close_connections()
        self.server.server_close()
        for page in self._pages:
            page.remove()


def _typed_here(stream: IO[str] | None) -> bool:
    """Whether ``stream`` is a terminal this process may read: a background job that reads its
    terminal is stopped (SIGTTIN)."""
    try:
        if stream is None or not stream.isatty():
            return False
        descriptor = stream.fileno()
    except (OSError, ValueError):
        return False
    try:
        return os.tcgetpgrp(descriptor) == os.getpgrp()
    except OSError:
        return True  # a terminal, but not this process's controlling one: reading cannot stop it
