"""The console's server: werkzeug on 127.0.0.1 only, a free port unless told, one request at a time
(one operator; the tool's caches and audit stream are not shared across threads)."""

from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import dataclass

from werkzeug.serving import BaseWSGIServer, make_server

from sqs_redriver.console.tool import Tool, UsageError
from sqs_redriver.console.web import create_app
from sqs_redriver.console.web.guard import TOKEN_PARAMETER
from sqs_redriver.console.web.guard import bind as bind_port

HOST = "127.0.0.1"


@dataclass
class ConsoleServer:
    """A console bound to its port, not yet serving; ``url`` opens it (the token included)."""

    server: BaseWSGIServer
    url: str

    @classmethod
    def bind(cls, tool: Tool, port: int = 0) -> ConsoleServer:
        """Bind ``port`` on 127.0.0.1 (0: a free one) with a fresh random token."""
        token = secrets.token_urlsafe(32)
        # The app learns its port once bound: create it for port 0, then bind and tell it.
        app = create_app(tool, token=token, port=port)
        try:
            server = make_server(HOST, port, app, threaded=False)
        except OSError as exc:
            raise UsageError(
                f"cannot serve on {HOST}:{port} ({exc.strerror}): choose another --port"
            ) from exc
        bound = server.server_port
        bind_port(app, bound)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # its access log would print the token
        return cls(server, f"http://{HOST}:{bound}/?{TOKEN_PARAMETER}={token}")

    def serve_until_interrupted(self) -> None:
        """Serve until Ctrl-C (SIGINT), then close the port."""
        try:
            self.server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.server.server_close()

    def serve_in_thread(self) -> threading.Thread:
        """Serve in a daemon thread until ``stop`` (tests, the demo)."""
        thread = threading.Thread(target=self.server.serve_forever, name="sqs-redriver-ui", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
