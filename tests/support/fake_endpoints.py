"""Local HTTP servers that stand where an AWS endpoint should be: a web server that answers every
request with a page (not AWS at all), or one that answers as AWS does when it refuses a request
(an AWS error code, in the JSON or the XML form the calling API reads). Each serves 127.0.0.1 on a
free port in a thread until its ``with`` ends: a request is answered before the call returns."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# What a server answers a request with: status, Content-Type, body.
Answer = Callable[[BaseHTTPRequestHandler], tuple[int, str, bytes]]
NOT_FOUND_PAGE = (
    b'<!DOCTYPE HTML>\n<html lang="en">\n<head><meta charset="utf-8"><title>404</title></head>\n'
    b"<body><h1>Not Found</h1><p>Nothing here.</p></body>\n</html>\n"
)


@contextmanager
def web_server(status: int = 404, page: bytes = NOT_FOUND_PAGE) -> Iterator[str]:
    """A plain web server answering every request with ``status`` and an HTML ``page``; its URL."""

    def answer(_handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        return status, "text/html; charset=utf-8", page

    with _serving(answer) as url:
        yield url


@contextmanager
def aws_refusing(code: str, message: str = "refused", status: int = 400) -> Iterator[str]:
    """An endpoint answering every request as AWS refuses one, with error ``code``; its URL."""

    def answer(handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        content_type = handler.headers.get("Content-Type", "")
        if "json" in content_type:  # the JSON APIs (SQS, DynamoDB, Logs)
            body = json.dumps({"__type": f"com.amazonaws.coral#{code}", "message": message})
            return status, content_type, body.encode()
        xml = (  # the query APIs (CloudFormation, STS, CloudWatch)
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message>"
            "</Error><RequestId>fake</RequestId></ErrorResponse>"
        )
        return status, "text/xml", xml.encode()

    with _serving(answer) as url:
        yield url


@contextmanager
def _serving(answer: Answer) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, content_type, body = answer(self)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:  # no access log on the test's stderr
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
