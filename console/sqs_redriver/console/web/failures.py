"""How a page fails: one line, escaped, with the status it deserves; never a traceback. The library's
errors are the command line's (cli/app.py maps the same ones to exit codes)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError
from flask import Flask, render_template
from werkzeug.exceptions import HTTPException

from sqs_redriver.console.advice import explain
from sqs_redriver.console.audit import AuditUnavailable
from sqs_redriver.console.deployment import DeploymentNotFound
from sqs_redriver.console.steering import Conflict
from sqs_redriver.console.tool import NotFound, UsageError
from sqs_redriver.runtime.adapters import AwsCallError

logger = logging.getLogger(__name__)

# The library's errors, the status each gets, and the page's title.
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


def page(title: str, message: str, status: int, *, moved: bool = False) -> tuple[str, int]:
    return render_template("failure.html", title=title, message=message, moved=moved), status


def register(app: Flask) -> None:
    """Map every error a page may meet to its page."""
    for error, status, title in KNOWN:
        app.register_error_handler(error, _handler(status, title))

    @app.errorhandler(HTTPException)
    def http(exc: HTTPException) -> tuple[str, int]:
        return page(exc.name, exc.description or "", exc.code or 500)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> tuple[str, int]:
        logger.exception("the console failed on a request")
        return page("Something went wrong", "The console failed; the details are in its log.", 500)


def _handler(status: int, title: str) -> Callable[[Exception], tuple[str, int]]:
    def handle(exc: Exception) -> tuple[str, int]:
        return page(title, explain(exc) or str(exc), status, moved=isinstance(exc, NotFound))

    return handle
