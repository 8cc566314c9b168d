"""``sqs-redriver ui``: prints a URL on 127.0.0.1 with a token, serves it, and Ctrl-C (SIGINT) stops
it with exit 0 and no traceback. Its own process, as the operator runs it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

URL = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{43})")
NOWHERE = "http://127.0.0.1:9"  # no AWS call is made by what this test asks for
EXPLICIT = [
    "--endpoint-url", NOWHERE, "--region", "us-east-1",
    "--dlq-url", f"{NOWHERE}/123456789012/orders-dlq", "--source-url", f"{NOWHERE}/123456789012/orders",
    "--parking-lot-url", f"{NOWHERE}/123456789012/orders-parking-lot", "--table", "redriver-state",
]  # fmt: skip


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_ui_serves_the_printed_url_on_the_loopback_and_stops_cleanly_on_ctrl_c() -> None:
    ui = subprocess.Popen(
        [sys.executable, "-m", "sqs_redriver.console.cli", *EXPLICIT, "ui", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert ui.stdout is not None
        line = ui.stdout.readline()
        found = URL.search(line)
        assert found, line
        port = found.group(1)

        without_token = status_of(f"http://127.0.0.1:{port}/")
        stale = status_of(f"http://127.0.0.1:{port}/?token=stale")
        # urllib does not follow the 303 with the cookie: the redirect itself is the answer here.
        opener = urllib.request.build_opener(NoRedirect())
        with opener.open(found.group(0), timeout=10) as response:
            exchanged = response.status
    except urllib.error.HTTPError as exc:
        exchanged = exc.code
    finally:
        ui.send_signal(signal.SIGINT)
        _out, errors = ui.communicate(timeout=30)

    assert (without_token, stale, exchanged) == (403, 403, 303)
    assert ui.returncode == 0 and "Traceback" not in errors, errors


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_args: object, **_kwargs: object) -> None:
        return None
