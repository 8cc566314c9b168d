"""``make demo KEEP=1``: a short act 1, then its world kept. The parking lot still holds the parked
message (counted with the operator's library, the printed ``show ID`` finds it), the console's
pages show it, a replay of it is consumed and parked again by the kept consumer and schedule (told
on the demo's output), the function act's parked record is listed with its reason and its printed
``show`` finds it, and Ctrl-C ends it all cleanly, with no traceback and exit 0: typed in the
terminal make and the demo run in (a pseudo-terminal, their controlling terminal), as a person
types it, so that it reaches make too unless the demo keeps it to itself.

Every wait is for a line the demo prints; each has a generous bound that only detects a hang (the
story itself ends when it has settled, not at a time: demo/kit_act.py)."""

from __future__ import annotations

import fcntl
import html
import os
import pty
import queue
import re
import shlex
import subprocess
import sys
import termios
import threading
import urllib.request
from collections.abc import Callable
from http.cookiejar import CookieJar
from pathlib import Path

from local_aws.environment import environment
from sqs_redriver.console.inventory import Where
from sqs_redriver.console.tool import Connection, Target, Tool, read_all

ROOT = Path(__file__).resolve().parents[2]
# Two poison orders, one per bug: the story fixes the quantity-0 one and replays it; the order
# without a customer stays parked.
SHORT_STORY = [
    "--orders", "6", "--poison", "2", "--produce-seconds", "1", "--outage-start", "0.5",
    "--outage-seconds", "3", "--tick-seconds", "1", "--time-limit", "600",
]  # fmt: skip
PARKED_REASON = "missing field 'customer_id'"
FUNCTION_PARKED_REASON = "source's error NoEmailAddress: order p-0001 has no e-mail address to notify"
URL = re.compile(r"http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]+")
TOOL_LINE = re.compile(r"^  \.venv/bin/sqs-redriver (--endpoint-url .*)$")
LAST_LINE = "What the consumer and the re-driver do from now on is told here, one line each:"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "demo", "AWS_SECRET_ACCESS_KEY": "demo"}
STORY_HANG_SECONDS = 1500  # the synth, the deployment and the story (each part bounded by 600 s)
HANG_SECONDS = 300  # then the longest a printed line or a command may take on a busy machine
CTRL_C = b"\x03"  # what the keyboard sends; the terminal turns it into SIGINT to its foreground group


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


def read_until(
    lines: queue.Queue[str],
    wanted: Callable[[str], bool],
    seen: list[str],
    hang_seconds: float = HANG_SECONDS,
) -> str:
    """The first line ``wanted`` takes (each line read is added to ``seen``)."""
    while True:
        line = lines.get(timeout=hang_seconds)
        assert line, "the demo ended early:\n" + "".join(seen)
        seen.append(line)
        if wanted(line):
            return line


def all_of(lines: queue.Queue[str]) -> str:
    """What a stream's reader read, up to the stream's end."""
    return "".join(iter(lambda: lines.get(timeout=HANG_SECONDS), ""))


def parking_lot(options: list[str]) -> list[str]:
    """The labels of the parking lot's messages, read with the operator's library (nothing taken)."""
    endpoint, region, stack = (
        options[options.index(name) + 1] for name in ("--endpoint-url", "--region", "--stack")
    )
    with environment(CREDENTIALS, unset=["AWS_PROFILE", "AWS_SESSION_TOKEN"]):
        tool = Tool(Connection(region=region, endpoint_url=endpoint), Target(stack=stack))
        return [item.label for item in read_all(tool, Where.PARKING_LOT).items]


def run_printed(command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """One of the printed commands, as a person pastes it (with ``extra`` arguments)."""
    arguments = shlex.split(command, comments=True)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | CREDENTIALS
    return subprocess.run(
        [sys.executable, "-m", "sqs_redriver.console.cli", *arguments, *extra],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )


def sign_in(url: str) -> tuple[urllib.request.OpenerDirector, str, str]:
    """A browser signed in with ``url``: it, the status page's text, and where the pages are."""
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    with browser.open(url, timeout=HANG_SECONDS) as page:
        assert page.status == 200
        return browser, page.read().decode(), page.geturl().rstrip("/")


def make_demo_keep(terminal: int) -> subprocess.Popen[str]:
    """``make demo KEEP=1`` with the short story, as started from ``terminal`` (a pseudo-terminal's
    end: its standard input and controlling terminal, make in its foreground process group), its
    output read through pipes. The venv is this interpreter's, taken as installed; the make running
    the suite is not this one's parent (its flags would sync the output until the demo ends)."""
    command = [
        "make", "--no-print-directory", "-o", ".venv/.installed", f"BIN={Path(sys.executable).parent}",
        "demo", "KEEP=1", f"ARGS={shlex.join(['--kit-only', *SHORT_STORY])}",
    ]  # fmt: skip
    outside = ("AWS_", "MAKE", "MFLAGS")
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith(outside)},
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # after setsid: stdin controls
    )


def test_the_kept_demo_keeps_its_world_running_and_stops_cleanly_on_ctrl_c() -> None:
    keyboard, terminal = pty.openpty()
    demo = make_demo_keep(terminal)
    os.close(terminal)
    printed, errors_printed = lines_of(demo.stdout), lines_of(demo.stderr)
    seen: list[str] = []
    try:
        read_until(printed, lambda line: line.rstrip() == LAST_LINE, seen, STORY_HANG_SECONDS)
        # First, as the sign-in URL works once and within a minute.
        url = next(match.group(0) for line in seen if (match := URL.search(line)))
        browser, status_page, pages = sign_in(url)
        assert "Circuit breakers" in status_page
        with browser.open(f"{pages}/groups", timeout=HANG_SECONDS) as groups_page:
            assert PARKED_REASON in html.unescape(groups_page.read().decode())

        # The story looked at the parking lot, it did not take it.
        commands = [match.group(1) for line in seen if (match := TOOL_LINE.match(line.rstrip()))]
        show = next(command for command in commands if " show " in command)
        replay = next(command for command in commands if " replay --id " in command)
        parked_id = show.split(" show ")[1].split()[0]
        assert parking_lot(shlex.split(show)) == [f"consumer.orders.InvalidOrder: {PARKED_REASON}"]
        assert any(parked_id in line and PARKED_REASON in line for line in seen), "".join(seen)
        shown = run_printed(show)
        assert shown.returncode == 0, shown.stderr
        assert parked_id in shown.stdout and PARKED_REASON in shown.stdout

        # The function's parked record is listed with its reason, and its printed `show` finds it.
        [function_show] = [command for command in commands if "--dlq-url" in command]
        function_parked_id = function_show.split(" show ")[1]
        assert any(function_parked_id in line and FUNCTION_PARKED_REASON in line for line in seen), "".join(
            seen
        )
        shown = run_printed(function_show)
        assert shown.returncode == 0, shown.stderr
        unwrapped = "".join(shown.stdout.split())  # the body is wrapped at the terminal's width
        assert function_parked_id in shown.stdout and '"errorType":"NoEmailAddress"' in unwrapped

        # The consumer and the schedule still run: a replay is delivered, refused and parked again.
        replayed = run_printed(replay, "--yes")
        assert replayed.returncode == 0, replayed.stderr
        delivered = read_until(printed, lambda line: "consumer: " in line, seen)
        assert "refused: the consumer kit sent it to the DLQ" in delivered, "".join(seen)
        read_until(printed, lambda line: re.search(r"re-driver: .*parked 1", line) is not None, seen)
        assert parking_lot(shlex.split(show)) == [f"consumer.orders.InvalidOrder: {PARKED_REASON}"]
    finally:
        os.write(keyboard, CTRL_C)
        try:
            demo.wait(timeout=HANG_SECONDS)  # a hang detector: both readers drain their pipes meanwhile
        except subprocess.TimeoutExpired:
            demo.kill()  # make, the terminal's controlling process: the demo gets its SIGHUP
            raise
        finally:
            os.close(keyboard)
        errors = all_of(errors_printed)

    # make returns the demo's exit code: it was not interrupted ("make: *** [demo] Interrupt", 130)
    assert demo.returncode == 0, errors
    assert "Traceback" not in errors and "Interrupt" not in errors, errors
    assert "stopped: the consumer, the schedule, the web console and the demo's local AWS" in all_of(printed)
