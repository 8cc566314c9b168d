"""`sqs-redriver status --watch` in a real terminal: tmux runs it, its pane is captured and read."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from local_aws import REGION
from local_aws.resources import Resources, create_resources
from sqs_redriver.core.table import Pause, StateTable
from sqs_redriver.protocol.keys import RecordKind

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

WIDTH, HEIGHT = 160, 50
# How long to wait for the pane before failing: a bound for a hung tool, not a speed test (it
# passes as soon as the pane shows the text; a busy 2-core CI machine can take seconds to start it).
DEADLINE_SECONDS = 120.0
# moto's threaded server, in a process of its own (the suite's in-process mock_aws must not share
# its backends); it prints its port.
MOTO_SERVER = (
    "from moto.server import ThreadedMotoServer\n"
    "import threading\n"
    "server = ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False)\n"
    "server.start()\n"
    "print(server.get_host_and_port()[1], flush=True)\n"
    "threading.Event().wait()\n"
)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-c", MOTO_SERVER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert server.stdout is not None
        yield f"http://127.0.0.1:{int(server.stdout.readline())}"
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.fixture
def resources(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Resources:
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    return create_resources(name=f"watch-{uuid.uuid4().hex[:8]}")


@dataclass(frozen=True)
class Pane:
    """A detached tmux session of a fixed size on a tmux server of its own."""

    socket: str

    def run(self, *args: str) -> str:
        assert TMUX is not None
        completed = subprocess.run(
            [TMUX, "-L", self.socket, "-f", os.devnull, *args], capture_output=True, text=True, check=True
        )
        return completed.stdout

    def capture(self) -> str:
        return self.run("capture-pane", "-p", "-t", "watch")

    def wait_for(self, predicate: Callable[[str], bool], what: str) -> str:
        """The pane as soon as ``predicate`` holds; fail with the pane after the deadline."""
        deadline = time.monotonic() + DEADLINE_SECONDS
        while True:
            screen = self.capture()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"the pane never showed {what}:\n{screen}")
            time.sleep(0.2)


@pytest.fixture
def pane() -> Iterator[Pane]:
    pane = Pane(socket=f"redriver-test-{uuid.uuid4().hex[:8]}")
    try:
        yield pane
    finally:
        subprocess.run([TMUX or "tmux", "-L", pane.socket, "kill-server"], capture_output=True, check=False)


def depth(screen: str, role: str) -> int | None:
    """The visible count of the queue row with ``role`` in the Queues table."""
    found = re.search(rf"\W{re.escape(role)}\W+(\d+)\W", screen)
    return None if found is None else int(found.group(1))


def test_status_watch_shows_breakers_and_depths_refreshes_and_exits_0_on_ctrl_c(
    endpoint: str, resources: Resources, pane: Pane
) -> None:
    # GIVEN the live status of a re-driver, in a terminal
    tool = [
        sys.executable, "-m", "sqs_redriver.console.cli", "--endpoint-url", endpoint, "--region", REGION,
        "--dlq-url", resources.dlq_url, "--source-url", resources.source_url,
        "--parking-lot-url", resources.parking_lot_url, "--table", resources.table_name,
        "status", "--watch", "--interval", "1",
    ]  # fmt: skip
    environment = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    pane.run(
        "new-session", "-d", "-s", "watch", "-x", str(WIDTH), "-y", str(HEIGHT),
        *(f"-e{name}={value}" for name, value in environment.items()),
        f"{shlex.join(tool)}; echo EXIT=$?; sleep 600",
    )  # fmt: skip
    first = pane.wait_for(lambda s: "Circuit breakers" in s and depth(s, "parking lot") is not None, "status")
    assert "CLOSED" in first and "Queues" in first
    assert (depth(first, "source"), depth(first, "DLQ"), depth(first, "parking lot")) == (0, 0, 0)

    # WHEN a message reaches the DLQ and an operator pauses the re-driver
    resources.sqs.send_message(QueueUrl=resources.dlq_url, MessageBody="failed order")
    table = StateTable(resources.table_name, resources.dynamodb, ttl_seconds=60)
    table.save_pause(
        RecordKind.PAUSE.key(resources.dlq_url), Pause("investigating", "on-call", int(time.time()))
    )

    # THEN a later refresh shows both
    later = pane.wait_for(lambda s: depth(s, "DLQ") == 1 and "PAUSED" in s, "the DLQ message and the pause")
    assert "investigating" in later

    # WHEN Ctrl-C, THEN the watch ends, exit status 0
    pane.run("send-keys", "-t", "watch", "C-c")
    ended = pane.wait_for(lambda s: "EXIT=" in s, "the exit status")
    assert "EXIT=0" in ended and "Traceback" not in ended
