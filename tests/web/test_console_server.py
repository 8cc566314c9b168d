"""The console's server on a real socket: a client holding half a request open keeps no one else
waiting, an idle connection is closed after the timeout, the stop closes every open connection at
once, a body announced over the limit is refused before it is sent; and the browser is opened on a
private file, never with a token on its command line. Each wait on the server is bounded by
``PATIENCE`` only so that a broken server fails the test rather than hanging it."""

from __future__ import annotations

import os
import re
import socket
import stat
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from sqs_redriver.console.web.guard import FORM_BYTES
from sqs_redriver.console.web.server import ConsoleServer
from tests.support.aws import Aws
from tests.support.console import console_tool

PATIENCE = 60.0
FOREVER = 3600.0  # a connection timeout no test outlives


def serving(aws: Aws, connection_seconds: float = FOREVER) -> ConsoleServer:
    console = ConsoleServer.bind(console_tool(aws, audited=False), connection_seconds=connection_seconds)
    console.serve_in_thread()
    return console


@pytest.fixture
def console(aws: Aws) -> Iterator[ConsoleServer]:
    server = serving(aws)
    yield server
    server.stop()


class Browser:
    """A client signed in to ``console`` by its ``url``: its cookie, its pages' root."""

    def __init__(self, console: ConsoleServer) -> None:
        jar = CookieJar()
        with urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)).open(
            console.url, timeout=PATIENCE
        ) as page:
            self.root = urlparse(page.url).path.rstrip("/")
        [cookie] = list(jar)
        self.cookie = f"{cookie.name}={cookie.value}"
        self.port = console.server.server_port

    def connect(self) -> socket.socket:
        connection = socket.create_connection(("127.0.0.1", self.port), timeout=PATIENCE)
        return connection

    def head(self, method: str, path: str, *extra: str) -> bytes:
        """A request's head, as the browser sends it from the console's own page."""
        lines = [
            f"{method} {self.root}{path} HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            f"Cookie: {self.cookie}",
            f"Origin: http://127.0.0.1:{self.port}",
            *extra,
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def answer(self, request: bytes) -> bytes:
        """The whole answer to ``request`` on a connection of its own (the server closes it)."""
        with self.connect() as connection:
            connection.sendall(request)
            return read_to_the_end(connection)


def read_to_the_end(connection: socket.socket) -> bytes:
    received = b""
    while chunk := connection.recv(65_536):
        received += chunk
    return received


def test_a_client_holding_half_a_request_keeps_no_one_else_waiting(console: ConsoleServer) -> None:
    browser = Browser(console)
    half_a_head = browser.connect()
    half_a_head.sendall(browser.head("GET", "/")[:-4])  # the blank line never comes
    half_a_body = browser.connect()
    form = "Content-Type: application/x-www-form-urlencoded"
    half_a_body.sendall(browser.head("POST", "/pause", form, "Content-Length: 100") + b"reason=")

    answer = browser.answer(browser.head("GET", "/audit"))

    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    half_a_head.close()
    half_a_body.close()


def test_a_connection_that_sends_nothing_is_closed_after_the_timeout(aws: Aws) -> None:
    console = serving(aws, connection_seconds=0.2)
    try:
        with socket.create_connection(("127.0.0.1", console.server.server_port), timeout=PATIENCE) as idle:
            assert idle.recv(1) == b""
    finally:
        console.stop()


def test_the_stop_closes_every_open_connection_at_once(aws: Aws) -> None:
    console = serving(aws)
    browser = Browser(console)
    waiting = browser.connect()
    waiting.sendall(browser.head("GET", "/")[:-4])
    # Connections are accepted in order: once a later one is answered, this one is being served.
    assert browser.answer(browser.head("GET", "/audit")).startswith(b"HTTP/1.1 200")

    console.stop()

    assert waiting.recv(1) == b""
    waiting.close()


def test_a_connection_past_the_limit_is_closed_at_once_and_served_once_one_ends(aws: Aws) -> None:
    console = ConsoleServer.bind(
        console_tool(aws, audited=False), connection_seconds=FOREVER, max_connections=2
    )
    console.serve_in_thread()
    port = console.server.server_port
    request = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()

    def answer() -> bytes:
        """The answer, or nothing when the server closed the connection unread (a reset, or not)."""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as connection:
                connection.sendall(request)
                return read_to_the_end(connection)
        except ConnectionResetError:
            return b""

    try:
        held = [socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) for _ in range(2)]
        for connection in held:
            connection.sendall(request[:-4])  # served, and waiting for the rest
        # Connections are accepted in order: the third finds both places taken.
        assert answer() == b""

        held.pop().close()

        deadline = time.monotonic() + PATIENCE  # only a hang reaches it
        while not (answered := answer()) and time.monotonic() < deadline:
            pass
        assert answered.startswith(b"HTTP/1.1 403"), answered[:200]  # served: no sign-in token
        held[0].close()
    finally:
        console.stop()


def test_a_body_announced_over_the_limit_is_refused_before_it_is_sent(console: ConsoleServer) -> None:
    browser = Browser(console)

    answer = browser.answer(browser.head("POST", "/pause", f"Content-Length: {FORM_BYTES + 1}"))

    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_the_browser_is_opened_on_a_private_file_that_signs_it_in_once(console: ConsoleServer) -> None:
    launched: list[str] = []

    assert console.open_browser(opener=lambda url: launched.append(url) is None)

    [argument] = launched  # what the browser's command line would hold
    page = Path(unquote(urlparse(argument).path))
    assert argument.startswith("file:///") and "token" not in argument
    assert stat.S_IMODE(page.stat().st_mode) == 0o600 and stat.S_IMODE(page.parent.stat().st_mode) == 0o700
    assert page.stat().st_uid == os.getuid()
    found = re.search(
        r'content="0;url=(http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]{43})"', page.read_text()
    )
    assert found, page.read_text()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    with opener.open(found.group(1), timeout=PATIENCE) as signed_in:
        assert signed_in.status == 200
    assert not page.exists() and not page.parent.exists()


def test_a_sign_in_file_no_browser_opened_is_removed_at_once_and_an_unused_one_at_the_stop(aws: Aws) -> None:
    console = serving(aws)
    launched: list[str] = []

    assert not console.open_browser(opener=lambda url: launched.append(url) is not None)
    assert console.open_browser(opener=lambda url: launched.append(url) is None)
    not_opened, unused = (Path(unquote(urlparse(url).path)) for url in launched)
    assert not not_opened.parent.exists() and unused.exists()

    console.stop()

    assert not unused.parent.exists()


def test_a_ctrl_c_while_the_serving_thread_starts_stops_the_console_without_waiting_on_it(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    console = ConsoleServer.bind(console_tool(aws, audited=False))
    start = threading.Thread.start

    def interrupted_for_the_console(thread: threading.Thread) -> None:
        if thread.name == "sqs-redriver-ui":
            raise KeyboardInterrupt  # as a Ctrl-C landing in Thread.start
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", interrupted_for_the_console)
    done = threading.Event()
    runner = threading.Thread(target=lambda: (console.serve_until_interrupted(), done.set()), daemon=True)
    runner.start()
    runner.join(PATIENCE)

    assert done.is_set(), "the stop waited for a serving thread that never ran"
