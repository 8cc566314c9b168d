"""The web console on moto: a Flask test client signed in with a token the console issued, the
form token its pages carry, and a page's requests as (status, text), sent as a browser sends them
from the console's own pages. The console's clock is a ``Clock`` the test moves."""

from __future__ import annotations

import re
from dataclasses import dataclass

from flask import Flask
from flask.testing import FlaskClient

from sqs_redriver.console.tool import Tool
from sqs_redriver.console.web import create_app
from sqs_redriver.console.web.access import Access
from sqs_redriver.console.web.guard import ACCESS
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
