"""``make demo KEEP=1``: a short act 1, then the console on its kept local AWS answers the printed
URL, and Ctrl-C (SIGINT) ends it all cleanly, with no traceback."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHORT_STORY = [
    "--orders", "6", "--poison", "2", "--produce-seconds", "1", "--outage-start", "0.5",
    "--outage-seconds", "3", "--tick-seconds", "1", "--time-limit", "60",
]  # fmt: skip
URL = re.compile(r"http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]+")
COMMAND = re.compile(
    r"\.venv/bin/sqs-redriver --endpoint-url http://127\.0\.0\.1:\d+ --region \S+ --stack \S+ status"
)
STORY_SECONDS = 240


def lines_of(stream: object) -> queue.Queue[str]:
    """The lines of ``stream`` as they come (a reader thread, which ends at the stream's end, "" in
    the queue), so that a wait can time out."""
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            found.put(line)
        found.put("")

    threading.Thread(target=read, daemon=True).start()
    return found


def all_of(lines: queue.Queue[str]) -> str:
    """What a stream's reader read, up to the stream's end."""
    return "".join(iter(lambda: lines.get(timeout=60), ""))


def test_the_kept_demo_serves_the_console_and_stops_cleanly_on_ctrl_c() -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    demo = subprocess.Popen(
        [sys.executable, "-m", "demo", "--kit-only", "--keep", *SHORT_STORY],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    printed, errors_printed = lines_of(demo.stdout), lines_of(demo.stderr)
    try:
        seen: list[str] = []
        while not any(URL.search(line) for line in seen):
            line = printed.get(timeout=STORY_SECONDS)
            assert line, "the demo ended without printing the console's URL:\n" + "".join(seen)
            seen.append(line)
        while not seen[-1].rstrip().endswith(" ui"):  # the commands follow, the console's last
            seen.append(printed.get(timeout=10))
            assert seen[-1], "the demo ended while printing the commands:\n" + "".join(seen)
        url = next(match.group(0) for line in seen if (match := URL.search(line)))
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

        with browser.open(url, timeout=30) as page:  # the token, exchanged for a cookie, then the page
            assert page.status == 200 and b"Circuit breakers" in page.read()
        assert any(COMMAND.search(line) for line in seen), "".join(seen)
    finally:
        demo.send_signal(signal.SIGINT)
        demo.wait(timeout=60)  # both readers drain their pipes meanwhile, and end at their close
        errors = all_of(errors_printed)

    assert demo.returncode == 0, errors
    assert "Traceback" not in errors, errors
