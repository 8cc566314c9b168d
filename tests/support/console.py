"""The web console on moto: a Flask test client signed in with a token the console issued, the
form token its pages carry, and a page's requests as (status, text), sent as a browser sends them
from the console's own pages. The console's clock is a ``Clock`` the test moves."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flask import Flask
from flask.testing import FlaskClient

from sqs_redriver.console.tool import Tool
from sqs_redriver.console.web.guard import ACCESS, Access
from sqs_redriver.console.web.server import create_app
from tests.support.aws import Aws
from tests.support.operator import operator_tool

PORT = 8765
ORIGIN = f"http://127.0.0.1:{PORT}"
ROOT = "/the-pages-of-this-console"
BASE_URL = f"{ORIGIN}{ROOT}"  # where the pages are
COOKIE = f"sqs-redriver-{PORT}"
# What a browser sends with a form of the console's own page.
FROM_THE_CONSOLE = {"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"}
AUDIT_LOG_GROUP = "orders-redriver-audit"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
PREVIEWED_ID = re.compile(r'name="message_id" value="([^"]+)"')
SIGN_IN_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=[A-Za-z0-9_-]{43}")
NOWHERE = "http://127.0.0.1:9"
# ``sqs-redriver ui`` over resources named on its command line, at an endpoint where nothing
# listens: the pages its tests ask for make no AWS call.
UI = [
    sys.executable, "-m", "sqs_redriver.console.cli", "--endpoint-url", NOWHERE, "--region", "us-east-1",
    "--dlq-url", f"{NOWHERE}/123456789012/orders-dlq", "--source-url", f"{NOWHERE}/123456789012/orders",
    "--parking-lot-url", f"{NOWHERE}/123456789012/orders-parking-lot", "--table", "redriver-state",
    "ui", "--no-browser",
]  # fmt: skip


def console_tool(aws: Aws, *, audited: bool = True) -> Tool:
    """A tool over ``aws``'s resources, named explicitly, with its archive bucket (and an audit trail
    unless told)."""
    tool = operator_tool(aws, audit_log_group=AUDIT_LOG_GROUP if audited else None)
    if audited:
        tool.client("logs").create_log_group(logGroupName=AUDIT_LOG_GROUP)
    return tool


@dataclass
class Clock:
    """The console's clock, in seconds; a test moves it."""

    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now


def console_app(tool: Tool, clock: Clock | None = None) -> Flask:
    return create_app(tool, access=Access(clock or Clock(), root=ROOT), port=PORT)


def access_of(app: Flask) -> Access:
    found: Access = app.extensions[ACCESS]
    return found


def sign_in_path(app: Flask) -> str:
    """The path of a fresh sign-in URL of ``app`` (at ``ORIGIN``)."""
    return f"/?token={access_of(app).issue()}"


def signed_in(app: Flask) -> FlaskClient:
    """A client that opened a sign-in URL (and so holds the session cookie)."""
    client = app.test_client()
    opened = client.get(sign_in_path(app), base_url=ORIGIN)
    assert opened.status_code == 303, opened.status_code
    return client


def csrf_of(page: str) -> str:
    found = CSRF.search(page)
    assert found, "the page has no form"
    return found.group(1)


def previewed_ids(page: str) -> list[str]:
    """The MessageIds a replay's preview page carries to its confirmation."""
    return PREVIEWED_ID.findall(page)


def open_console(aws: Aws, *, audited: bool = True) -> tuple[FlaskClient, Tool]:
    """A signed-in client of a console over ``aws``, and the console's tool."""
    tool = console_tool(aws, audited=audited)
    return signed_in(console_app(tool)), tool


def get(client: FlaskClient, path: str) -> tuple[int, str]:
    response = client.get(path, base_url=BASE_URL)
    return response.status_code, response.get_data(as_text=True)


def post(client: FlaskClient, path: str, form_page: str, **fields: str | list[str]) -> tuple[int, str]:
    """Submit ``fields`` with the form token of ``form_page``, the page the form was on."""
    response = client.post(
        path, data={**fields, "csrf": csrf_of(form_page)}, base_url=BASE_URL, headers=FROM_THE_CONSOLE
    )
    return response.status_code, response.get_data(as_text=True)


def parked_id(aws: Aws) -> str:
    """The id of a message in the parking lot (left visible)."""
    received = aws.sqs.receive_message(QueueUrl=aws.parking_lot_url, VisibilityTimeout=0)
    return str(received["Messages"][0]["MessageId"])


@dataclass
class UiCommand:
    """``sqs-redriver ui`` running in its own process, its terminal a pseudo-terminal."""

    process: subprocess.Popen[str]
    keyboard: int

    def printed_url(self) -> str:
        """The next sign-in URL it prints (the first at its start, then one after each Enter)."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = SIGN_IN_URL.search(line)
        assert found, f"no sign-in URL in {line!r}"
        return found.group(0)

    def press_enter(self) -> None:
        os.write(self.keyboard, b"\n")

    def interrupt(self) -> str:
        """Ctrl-C (SIGINT); what it printed on stderr once it ended."""
        self.process.send_signal(signal.SIGINT)
        _out, errors = self.process.communicate(timeout=60)  # a bound for a hang only
        return errors


@contextmanager
def ui_command() -> Iterator[UiCommand]:
    keyboard, terminal = pty.openpty()
    process = subprocess.Popen(UI, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield UiCommand(process, keyboard)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        os.close(keyboard)
        os.close(terminal)
