"""The web console on moto: a Flask test client signed in with the console's token, and the form
token its pages carry."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient

from sqs_redriver.console.tool import Tool
from sqs_redriver.console.web import create_app
from tests.support.aws import Aws
from tests.support.operator import operator_tool

PORT = 8765
BASE_URL = f"http://127.0.0.1:{PORT}"
TOKEN = "the-token-of-this-console"
AUDIT_LOG_GROUP = "orders-redriver-audit"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def console_tool(aws: Aws, *, audited: bool = True) -> Tool:
    """A tool over ``aws``'s resources, named explicitly, with its archive bucket (and an audit trail
    unless told)."""
    tool = operator_tool(aws, audit_log_group=AUDIT_LOG_GROUP if audited else None)
    if audited:
        tool.client("logs").create_log_group(logGroupName=AUDIT_LOG_GROUP)
    return tool


def console_app(tool: Tool) -> Flask:
    return create_app(tool, token=TOKEN, port=PORT)


def signed_in(app: Flask) -> FlaskClient:
    """A client that opened the printed URL (and so holds the session cookie)."""
    client = app.test_client()
    opened = client.get(f"/?token={TOKEN}", base_url=BASE_URL)
    assert opened.status_code == 303, opened.status_code
    return client


def csrf_of(page: str) -> str:
    found = CSRF.search(page)
    assert found, "the page has no form"
    return found.group(1)
