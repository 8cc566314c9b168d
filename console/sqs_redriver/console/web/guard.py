"""Who may use the console: a browser signed in with a token the console issued, on this machine,
from the console's own pages.

A sign-in URL is ``/?token=...``: the token (good once, for a minute: access.py) is exchanged for
a session cookie holding only the session's random id (HttpOnly, SameSite=Strict, named after the
port, scoped to the random path the pages live under), and the browser is sent on to the pages.
Every request needs that session; every request must name 127.0.0.1 or localhost on the console's
port as its Host (against DNS rebinding); a browser's request from another site or another port
(``Sec-Fetch-Site``) is refused; every request that is not a GET needs the console's own
``Origin`` (or ``Sec-Fetch-Site: same-origin``; without either it is refused) and the session's
CSRF token. Bodies are limited in size (413). Anything else gets 403. Every response forbids
scripts, framing, sniffing and referrers to other sites."""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from typing import TYPE_CHECKING

from flask import Flask, abort, g, make_response, redirect, render_template, request
from werkzeug.wrappers import Response

from sqs_redriver.console.web.access import TOKEN_SECONDS, Access, Session
from sqs_redriver.protocol.limits import SQS_MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

TOKEN_PARAMETER = "token"
CSRF_FIELD = "csrf"
# The largest form is an edit's document: a message of SQS's largest size in JSON, form-encoded; a
# quote, the worst byte SQS allows, takes 6 (\" in JSON, %5C%22 in the form). 8 leaves room.
FORM_BYTES = 8 * SQS_MAX_MESSAGE_BYTES + 65_536
SAFE_METHODS = frozenset({"GET", "HEAD"})
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    # Not no-referrer: with it, a browser sends "Origin: null" on the console's own forms.
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
ACCESS = "sqs_redriver.access"
SIGN_IN_AGAIN = "press Enter in the terminal of `sqs-redriver ui` for a fresh sign-in URL"
_SESSION = "console_session"


def guard(app: Flask, access: Access) -> None:
    """Put the rules above in front of every request of ``app``, and the headers on every response."""
    app.extensions[ACCESS] = access
    app.config["MAX_CONTENT_LENGTH"] = FORM_BYTES
    app.wsgi_app = _rooted(access.root, app.wsgi_app)  # type: ignore[method-assign,assignment]

    @app.before_request
    def check() -> Response | None:
        if request.host not in app.config["CONSOLE_HOSTS"]:
            abort(403, "this console answers only to 127.0.0.1 and localhost on its own port")
        if request.script_root != access.root:
            return _sign_in(access, app.config["CONSOLE_COOKIE"])
        if request.headers.get("Sec-Fetch-Site", "none") not in ("same-origin", "none"):
            abort(403, "a page of another site (or of another port of this machine) asked for this")
        session = access.session(request.cookies.get(app.config["CONSOLE_COOKIE"], ""))
        if session is None:
            abort(403, f"not signed in, or the session expired: {SIGN_IN_AGAIN}")
        setattr(g, _SESSION, session)
        if request.method not in SAFE_METHODS:
            _from_the_console_itself(session)
        return None

    @app.after_request
    def harden(response: Response) -> Response:
        response.headers.update(HEADERS)
        return response


def bind(app: Flask, port: int) -> None:
    """Tell ``app`` the port it is served on: the Host headers it accepts and its cookie's name
    (two consoles on one machine must not overwrite each other's cookie)."""
    app.config["CONSOLE_HOSTS"] = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
    app.config["CONSOLE_COOKIE"] = f"sqs-redriver-{port}"


def csrf_token() -> str:
    """The session's CSRF token, for the hidden field of every form."""
    session: Session | None = g.get(_SESSION)
    return session.csrf if session else ""


def _rooted(root: str, pages: WSGIApplication) -> WSGIApplication:
    """``pages`` served under ``root``: a path in it has ``root`` moved to SCRIPT_NAME (so every URL
    the views make carries it); any other path is handed on whole, for the guard to answer."""

    def serve(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        inside = path == root or path.startswith(f"{root}/")
        environ["SCRIPT_NAME"], environ["PATH_INFO"] = (root, path[len(root) :]) if inside else ("", path)
        return pages(environ, start_response)

    return serve


def _sign_in(access: Access, cookie: str) -> Response:
    """Outside the pages' path only a sign-in URL is answered: a session, and on to the pages."""
    given = request.args.get(TOKEN_PARAMETER)
    if request.method != "GET" or request.path != "/" or given is None:
        abort(403, f"open the console with the sign-in URL `sqs-redriver ui` printed, or {SIGN_IN_AGAIN}")
    session = access.exchange(given)
    if session is None:
        abort(
            403,
            f"this sign-in URL was used already, is more than {TOKEN_SECONDS:.0f} seconds old, or is "
            f"another console's: {SIGN_IN_AGAIN}",
        )
    home = f"{access.root}/"
    if request.headers.get("Sec-Fetch-Site", "none") == "none":
        response = redirect(home, code=303)  # typed or opened by the terminal
    else:
        # A browser does not send a SameSite=Strict cookie along a redirect that began on another
        # site, such as the sign-in file: the console's own page moves it on.
        response = make_response(render_template("signing_in.html", home=home))
    response.set_cookie(cookie, session.id, path=home, httponly=True, samesite="Strict")
    return response


def _from_the_console_itself(session: Session) -> None:
    """A request that changes something: from the console's own page, with its form's token."""
    origin = request.headers.get("Origin")
    fetched_from = request.headers.get("Sec-Fetch-Site")
    if origin is None and fetched_from is None:
        abort(403, "the request does not say where it came from (no Origin or Sec-Fetch-Site header)")
    if origin is not None and origin != f"http://{request.host}":
        abort(403, "this form did not come from the console's own pages")
    if fetched_from is not None and fetched_from != "same-origin":
        abort(403, "this form did not come from the console's own pages")
    if not hmac.compare_digest(request.form.get(CSRF_FIELD, "").encode(), session.csrf.encode()):
        abort(403, "this form is stale or did not come from the console: reload the page and try again")
