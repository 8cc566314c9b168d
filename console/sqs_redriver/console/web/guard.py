"""Who may use the console: a browser signed in with a token the console issued, on this machine,
from the console's own pages.

A sign-in URL is ``/?token=...``: the token (good once, for a minute: ``Access``) is exchanged for
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
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flask import Flask, abort, g, make_response, redirect, render_template, request
from werkzeug.wrappers import Response

from sqs_redriver.protocol.limits import SQS_MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


TOKEN_SECONDS = 60.0
SESSION_IDLE_SECONDS = 3600.0
SESSION_SECONDS = 12 * 3600.0


@dataclass
class Session:
    """A signed-in browser: its cookie's value, its CSRF token, when it signed in and was last seen."""

    id: str
    csrf: str
    started: float
    seen: float


@dataclass(frozen=True)
class _Issued:
    expires: float
    on_use: Callable[[], object] | None


class Access:
    """Who is signed in to one console: the sign-in tokens it issued and the sessions they opened,
    on ``clock`` (seconds; tests move it).

    A token (``secrets.token_urlsafe(32)``) is good once, within ``TOKEN_SECONDS`` of being issued;
    exchanging it opens a session, which the browser knows only by a random id (its cookie's value).
    The session's CSRF token stays here. A session ends ``SESSION_IDLE_SECONDS`` after its last use
    or ``SESSION_SECONDS`` after sign-in. The console's pages live under a random path, ``root``, to
    which the cookie is scoped: cookies ignore ports, and a cookie for ``/`` would be sent to every
    server on 127.0.0.1. All of it is in memory and ends with the server. Safe to share between
    threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, root: str | None = None) -> None:
        self.clock = clock
        self.root = root or "/" + secrets.token_urlsafe(16)
        self._tokens: dict[str, _Issued] = {}
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def issue(self, on_use: Callable[[], object] | None = None) -> str:
        """A new sign-in token; ``on_use`` is called when it is exchanged."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[token] = _Issued(self.clock() + TOKEN_SECONDS, on_use)
        return token

    def exchange(self, token: str) -> Session | None:
        """The session ``token`` opens, once; None for a token used, expired or never issued."""
        with self._lock:
            now = self.clock()
            self._forget_expired(now)
            issued = self._tokens.pop(token, None)
            if issued is None:
                return None
            session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now, now)
            self._sessions[session.id] = session
        if issued.on_use is not None:
            issued.on_use()
        return session

    def session(self, session_id: str) -> Session | None:
        """The live session of that id, now seen; None when there is none or it expired."""
        with self._lock:
            now = self.clock()
            self._forget_expired(now)
            found = self._sessions.get(session_id)
            if found is not None:
                found.seen = now
            return found

    def _forget_expired(self, now: float) -> None:
        self._tokens = {token: issued for token, issued in self._tokens.items() if now < issued.expires}
        self._sessions = {
            id_: session
            for id_, session in self._sessions.items()
            if now < session.seen + SESSION_IDLE_SECONDS and now < session.started + SESSION_SECONDS
        }


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
