"""``sqs-redriver ui``: prints a sign-in URL on 127.0.0.1, good once, serves it, prints a fresh one
at each Enter typed in its terminal, and Ctrl-C (SIGINT) stops it with exit 0 and no traceback. Its
own process, as the operator runs it (its terminal a pseudo-terminal)."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

URL = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{43})")
FRESH = re.compile(r"^sign in: (http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]{43})$")
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


def test_ui_serves_a_sign_in_url_good_once_prints_a_fresh_one_at_enter_and_stops_on_ctrl_c() -> None:
    keyboard, terminal = pty.openpty()
    ui = subprocess.Popen(
        [sys.executable, "-m", "sqs_redriver.console.cli", *EXPLICIT, "ui", "--no-browser"],
        stdin=terminal,
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
        exchanged = exchange(found.group(0))
        again = exchange(found.group(0))
        os.write(keyboard, b"\n")
        fresh = FRESH.match(ui.stdout.readline().strip())
        assert fresh, "no fresh sign-in URL after Enter"
        exchanged_fresh = exchange(fresh.group(1))
    finally:
        ui.send_signal(signal.SIGINT)
        _out, errors = ui.communicate(timeout=30)
        os.close(keyboard)
        os.close(terminal)

    assert (without_token, stale, exchanged, again, exchanged_fresh) == (403, 403, 303, 403, 303)
    assert ui.returncode == 0 and "Traceback" not in errors, errors


def exchange(url: str) -> int:
    """The status of a sign-in (urllib does not follow the 303 with the cookie: it is the answer)."""
    try:
        with urllib.request.build_opener(NoRedirect()).open(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_args: object, **_kwargs: object) -> None:
        return None
