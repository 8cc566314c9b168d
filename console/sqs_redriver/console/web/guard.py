"""Who may use the console: the browser that opened the printed URL, and only from this machine.

The URL's token is exchanged, on the first visit, for a session cookie (HttpOnly, SameSite=Strict)
signed with a key that lives as long as the server; the browser is sent on to the same page without
the token. Every request needs the cookie (or the token), every POST the session's CSRF token, and
every Host header must name 127.0.0.1 or localhost on the console's port (against DNS rebinding).
Anything else gets 403. Every response forbids scripts, framing and sniffing."""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlencode

from flask import Flask, abort, redirect, request, session
from werkzeug.wrappers import Response

TOKEN_PARAMETER = "token"
CSRF_FIELD = "csrf"
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def guard(app: Flask, token: str) -> None:
    """Put the rules above in front of every request of ``app``, and the headers on every response."""
    app.secret_key = secrets.token_bytes(32)
    app.config.update(
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        SESSION_COOKIE_PATH="/",
        SESSION_COOKIE_SECURE=False,  # plain HTTP on the loopback interface
    )

    @app.before_request
    def check() -> Response | None:
        if request.host not in app.config["CONSOLE_HOSTS"]:
            abort(403, "this console answers only to 127.0.0.1 and localhost on its own port")
        given = request.args.get(TOKEN_PARAMETER)
        if given is not None:
            return _exchange(given, token)
        if session.get("signed_in") is not True:
            abort(403, "open the console with the URL `sqs-redriver ui` printed (it holds the token)")
        if request.method == "POST" and not _same(request.form.get(CSRF_FIELD, ""), session.get(CSRF_FIELD)):
            abort(403, "this form is stale or did not come from the console: reload the page and try again")
        return None

    @app.after_request
    def harden(response: Response) -> Response:
        response.headers.update(HEADERS)
        return response


def bind(app: Flask, port: int) -> None:
    """Tell ``app`` the port it is served on: the Host headers it accepts and its cookie's name
    (cookies do not tell ports apart: two consoles on one machine must not share one)."""
    app.config["CONSOLE_HOSTS"] = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
    app.config["SESSION_COOKIE_NAME"] = f"sqs-redriver-{port}"


def csrf_token() -> str:
    """The session's CSRF token, for the hidden field of every form."""
    return str(session.get(CSRF_FIELD, ""))


def _exchange(given: str, token: str) -> Response:
    if not _same(given, token):
        abort(
            403, "this token is not the console's (a console started earlier?): use the URL it printed last"
        )
    session.clear()
    session["signed_in"] = True
    session[CSRF_FIELD] = secrets.token_urlsafe(32)
    rest = [(name, value) for name, value in request.args.items(multi=True) if name != TOKEN_PARAMETER]
    return redirect(request.path + (f"?{urlencode(rest)}" if rest else ""), code=303)


def _same(given: str, expected: object) -> bool:
    return isinstance(expected, str) and hmac.compare_digest(given.encode(), expected.encode())
