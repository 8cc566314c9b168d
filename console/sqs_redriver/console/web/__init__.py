"""The web console, ``sqs-redriver ui``: the command line's views and actions as pages, served on
127.0.0.1 to a browser signed in with a token it issued (guard.py). Server-rendered, no JavaScript.

A page is a view function in a blueprint module and a template; its place in the navigation is a
line of ``NAVIGATION``. Every view calls the library the command line calls (sqs_redriver.console),
never logic of its own."""

from __future__ import annotations

from flask import Flask

from sqs_redriver.console.shown import age, duration, inert_str, when
from sqs_redriver.console.tool import Tool
from sqs_redriver.console.web import acting, editing, failures, looking
from sqs_redriver.console.web.access import Access
from sqs_redriver.console.web.current import TOOL, one_request_at_a_time, unrecorded
from sqs_redriver.console.web.guard import bind, csrf_token, guard

# (endpoint, label) of each page the navigation bar links to, in order.
NAVIGATION = (
    ("looking.status", "Status"),
    ("looking.fleet", "Fleet"),
    ("looking.groups", "Groups"),
    ("looking.recent_outcomes", "Outcomes"),
    ("looking.audit", "Audit"),
)


def create_app(tool: Tool, *, access: Access, port: int) -> Flask:
    """The console over ``tool`` (its deployment, connection and audit trail), for the browsers
    ``access`` signs in, on 127.0.0.1:``port``."""
    app = Flask(__name__)
    app.extensions[TOOL] = tool
    guard(app, access)
    one_request_at_a_time(app)
    bind(app, port)
    failures.register(app)
    app.register_blueprint(looking.pages)
    app.register_blueprint(acting.pages)
    app.register_blueprint(editing.pages)
    app.jinja_env.autoescape = True
    app.jinja_env.filters.update(inert=_inert, duration=duration)
    app.jinja_env.globals.update(csrf_token=csrf_token, navigation=NAVIGATION, when=when, age=age)
    app.context_processor(lambda: {"unrecorded": unrecorded()})
    return app


def _inert(value: object, multiline: bool = False) -> str:
    """Text from outside, with what a browser would hide or act on (bidi overrides, zero-width
    characters, controls) shown as escapes; the template escapes the HTML."""
    return inert_str("" if value is None else str(value), multiline=multiline)
