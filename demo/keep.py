"""``make demo KEEP=1``: after the story, the demo's local AWS stays up with the web console on it,
and the commands to explore what the story left behind are printed, ready to paste. Ctrl-C (SIGINT)
stops both."""

from __future__ import annotations

import shlex
import sys
from typing import IO, Any

from sqs_redriver.console.connection import Connection
from sqs_redriver.console.tool import Target, Tool
from sqs_redriver.console.web.server import ConsoleServer

# The keys the demo's moto server takes (any would do; the tool needs some).
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "demo", "AWS_SECRET_ACCESS_KEY": "demo"}
TOOL = ".venv/bin/sqs-redriver"
COMMANDS = (
    "status",
    "groups",
    "show ID  # ID: a sample of groups",
    "replay --from parking-lot --all --dry-run",
    "edit ID  # opens $EDITOR on a parked message",
    "outcome  # what became of the story's replay",
    "audit",
    "fleet",
    "ui",
)


def instructions(console_url: str, endpoint: str, region: str, stack: str) -> str:
    """What the demo prints while it keeps its world: the console's URL and the commands."""
    options = shlex.join(["--endpoint-url", endpoint, "--region", region, "--stack", stack])
    environment = " ".join(f"{name}={value}" for name, value in CREDENTIALS.items())
    lines = [
        "",
        "The demo's local AWS and its web console stay up until Ctrl-C.",
        "",
        f"  web console: {console_url}",
        "",
        "  from this repository, in another terminal:",
        f"  unset AWS_PROFILE AWS_SESSION_TOKEN; export {environment}",
        *(f"  {TOOL} {options} {command}" for command in COMMANDS),
        "",
    ]
    return "\n".join(lines)


def keep(endpoint: str, region: str, stack: str, out: IO[str]) -> None:
    """Serve the console over the demo's deployment and print how to reach it; return on Ctrl-C."""
    stop_the_cdk_runtime()
    tool = Tool(Connection(region=region, endpoint_url=endpoint), Target(stack=stack))
    console = ConsoleServer.bind(tool)
    print(instructions(console.url, endpoint, region, stack), file=out, flush=True)
    console.serve_until_interrupted()
    print("stopped: the console and the demo's local AWS are gone", file=out, flush=True)


def stop_the_cdk_runtime() -> None:
    """Stop the CDK's jsii runtime (a node process, idle since the stack was synthesized) the way its
    exit hook would: it is in the terminal's process group, so Ctrl-C would kill it first, and its
    hook would then print a traceback at exit."""
    if "jsii" not in sys.modules:
        return
    from jsii._runtime import kernel  # the runtime's one kernel

    provider: Any = kernel.provider
    provider._process.stop()
