"""Who is signed in to one console: the sign-in tokens it issued and the sessions they opened.

A token (``secrets.token_urlsafe(32)``) is good once, within ``TOKEN_SECONDS`` of being issued;
exchanging it opens a session, which the browser knows only by a random id (its cookie's value).
The session's CSRF token stays here. A session ends ``SESSION_IDLE_SECONDS`` after its last use or
``SESSION_SECONDS`` after sign-in. The console's pages live under a random path, ``root``, to which
the cookie is scoped: cookies ignore ports, and a cookie for ``/`` would be sent to every server on
127.0.0.1. All of it is in memory and ends with the server. Safe to share between threads."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

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
    """The tokens and sessions of one console, on ``clock`` (seconds; tests move it)."""

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
