"""``make demo KEEP=1``: after the story, its world stays up until Ctrl-C: the local AWS with every
message where the story left it (the parking lot only looked at, never taken), the Lambda service
(the consumer fed by its event source, the re-driver on its schedule: kept_service.py) and the web
console. The parked messages and the commands to explore them, with their real ids, are printed
ready to paste, and what the consumer and the re-driver do from then on is told line by line.

Ctrl-C (SIGINT) is noted, never raised into the code that is running (a handler, the console's
server, moto's): the main loop wakes at once and stops the Lambda service, the console and the local
AWS, in that order. A second Ctrl-C, while they stop, ends the demo at once.

While the world is kept, a Ctrl-C typed in the terminal reaches the demo alone: it takes the
terminal's foreground in a process group of its own (``ctrl_c_to_this_process``), so the program
that started it (``make demo KEEP=1``) is not interrupted with it and returns the demo's exit
code, 0, instead of make's "Interrupt" and 130."""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType
from typing import IO, Any

from demo.function_act import FunctionAct
from demo.kept_service import KeptService
from demo.kit_act import POLL_SLEEP_SECONDS, KitAct
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.console.tool import Connection, Target, Tool, read_all
from sqs_redriver.console.web.guard import TOKEN_SECONDS
from sqs_redriver.console.web.server import ConsoleServer

# The keys the demo's moto server takes (any would do; the tool needs some).
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "demo", "AWS_SECRET_ACCESS_KEY": "demo"}
TOOL = ".venv/bin/sqs-redriver"
LAST_LINE = "What the consumer and the re-driver do from now on is told here, one line each:"


def instructions(
    console_url: str,
    endpoint: str,
    region: str,
    stack: str,
    parked: list[Inspected],
    *,
    fresh_urls: bool,
    function_act: FunctionAct | None = None,
) -> str:
    """What the demo prints while it keeps its world: the console's URL, what the parking lot
    holds, and the commands to look at it (with the id of a parked message); and what the
    function's parking lot holds (``function_act``), with a command to look at it."""
    connection = ["--endpoint-url", endpoint, "--region", region]
    tool = f"{TOOL} {shlex.join([*connection, '--stack', stack])}"
    environment = " ".join(f"{name}={value}" for name, value in CREDENTIALS.items())
    sign_in = "press Enter here for a fresh one" if fresh_urls else "run `ui` below for a console of your own"
    lines = [
        "",
        "The demo's world stays up until Ctrl-C: its local AWS, the consumer fed by its event source,",
        "the re-driver on its schedule, and the web console.",
        "",
        f"  web console: {console_url}",
        f"  (a sign-in URL works once, within {TOKEN_SECONDS:.0f} s: {sign_in})",
        "",
        *_parked_lines(parked),
        "",
        "  from this repository, in another terminal:",
        f"  unset AWS_PROFILE AWS_SESSION_TOKEN; export {environment}",
        *(f"  {tool} {command}" for command in _commands(parked)),
        *(_function_lines(function_act, connection) if function_act is not None else []),
        "",
        LAST_LINE,
    ]
    return "\n".join(lines)


def _parked_lines(parked: list[Inspected]) -> list[str]:
    if not parked:
        return ["  The parking lot is empty."]
    return [
        f"  The parking lot holds {len(parked)} message(s):",
        *(f"    {item.message.message_id}  {item.label}" for item in parked),
    ]


def _function_lines(act: FunctionAct, connection: list[str]) -> list[str]:
    """The function's parking lot: its re-driver is composed from settings, not in the stack, so
    the console and ``--stack`` do not reach it; the tool does, named by its resources."""
    parked = [event for event in act.events if event.fate == "parked"]
    resources = [
        "--dlq-url", act.dlq_url, "--source-url", act.function_arn,
        "--parking-lot-url", act.parking_lot_url, "--table", act.table_name,
    ]  # fmt: skip
    tool = f"{TOOL} {shlex.join([*connection, *resources])}"
    return [
        "",
        f"  {act.function_name}'s parking lot (its re-driver is not in the stack: the web console and",
        f"  --stack do not show it) holds {len(parked)} record(s):",
        *(
            f"    {event.parked_message_id}  {event.order_id} (request {event.parked_request_id}): "
            f"{event.parked_reason}"
            for event in parked
        ),
        f"  {tool} show {parked[0].parked_message_id if parked else 'ID'}",
    ]


def _commands(parked: list[Inspected]) -> list[str]:
    """The tool's commands, with the first parked message's id where one is needed."""
    some_id = parked[0].message.message_id if parked else "ID"
    where = "" if parked else "  # ID: a sample id of `groups`"
    return [
        "status",
        "groups",
        f"show {some_id}{where}",
        f"edit {some_id}  # in $EDITOR, then back to the consumer",
        f"replay --id {some_id}  # then watch its outcome below, and with `outcome`",
        "replay --from parking-lot --all --dry-run",
        "outcome  # what became of each replay",
        "audit",
        "fleet",
        "ui",
    ]


class Interruption:
    """Ctrl-C, noted: ``requested`` turns true, and ``wait`` returns at once. A second Ctrl-C
    raises KeyboardInterrupt. SIGINT left ignored (a background job) stays ignored."""

    def __init__(self) -> None:
        self.requested = False
        self._reader, self._writer = socket.socketpair()
        self._previous: Any = None
        self._previous_fd = -1

    def __enter__(self) -> Interruption:
        for end in (self._reader, self._writer):
            end.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            self._previous = signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        signal.set_wakeup_fd(self._previous_fd)
        self._reader.close()
        self._writer.close()

    def _note(self, _signal: int, _frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def wait(self, seconds: float, descriptors: list[int]) -> list[int]:
        """Up to ``seconds``, less if Ctrl-C comes or one of ``descriptors`` can be read: those."""
        woken = self._reader.fileno()
        ready, _, _ = select.select([woken, *descriptors], [], [], seconds)
        if woken in ready:
            while True:
                try:
                    self._reader.recv(64)
                except BlockingIOError:
                    break
        return [descriptor for descriptor in ready if descriptor != woken]


def keep(
    act: KitAct,
    endpoint: str,
    region: str,
    stack: str,
    out: IO[str],
    *,
    function_act: FunctionAct | None = None,
) -> None:
    """Keep the story's world, print how to reach it (the function act's parked records too),
    tell what happens in it; return on Ctrl-C."""

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    typed = _terminal_input()
    with ctrl_c_to_this_process(typed), Interruption() as interruption:
        stop_the_cdk_runtime()
        tool = Tool(Connection(region=region, endpoint_url=endpoint), Target(stack=stack))
        parked = read_all(tool, Where.PARKING_LOT).items
        console = ConsoleServer.bind(tool)
        console.serve_in_thread()
        try:
            fresh_urls = typed is not None
            say(
                instructions(
                    console.url,
                    endpoint,
                    region,
                    stack,
                    parked,
                    fresh_urls=fresh_urls,
                    function_act=function_act,
                )
            )
            service = KeptService(
                act,
                lambda line: say(f"  {time.strftime('%H:%M:%S')}  {line}"),
                lambda: interruption.requested,
            )
            while not interruption.requested:
                service.step()
                ready = interruption.wait(POLL_SLEEP_SECONDS, [] if typed is None else [typed])
                if typed is not None and typed in ready:
                    typed = _fresh_url_asked(typed, console.sign_in_url, say)
        finally:
            console.stop()


def _terminal_input() -> int | None:
    """Standard input's descriptor when it is the terminal this process runs in the foreground of
    (where Enter asks for a fresh sign-in URL); None otherwise."""
    try:
        descriptor = sys.stdin.fileno()
        if not os.isatty(descriptor) or os.tcgetpgrp(descriptor) != os.getpgrp():
            return None
    except (AttributeError, OSError, ValueError):
        return None
    return descriptor


@contextlib.contextmanager
def ctrl_c_to_this_process(terminal: int | None) -> Iterator[None]:
    """Make this process, in a process group of its own, the foreground of ``terminal`` (None:
    no terminal, nothing to do), and give the foreground back to the group it came from on the
    way out. The terminal sends Ctrl-C's SIGINT to its foreground group: make, which would die
    of it once the demo had ended (exit 130), is in the group left behind."""
    if terminal is None:
        yield
        return
    came_from = os.getpgrp()
    # A group in the background that sets the foreground, or writes to a terminal with `stty
    # tostop`, is sent SIGTTOU, which stops it: ignored from now on, as the demo still says
    # "stopped" after it gave the foreground back.
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        _take_the_foreground(terminal, came_from)
        yield
    finally:
        with contextlib.suppress(OSError):  # the terminal is gone
            os.tcsetpgrp(terminal, came_from)


def _take_the_foreground(terminal: int, came_from: int) -> None:
    """Into a group of its own, made the terminal's foreground; where it was if that fails (a
    session leader cannot move; a terminal can refuse)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        return
    try:
        os.tcsetpgrp(terminal, os.getpgrp())
    except OSError:
        with contextlib.suppress(OSError):
            os.setpgid(0, came_from)


def _fresh_url_asked(typed: int, sign_in_url: Callable[[], str], say: Callable[[str], None]) -> int | None:
    """A line was typed: answer with a fresh sign-in URL. The descriptor to go on reading (None
    once the input has ended)."""
    if not os.read(typed, 4096):
        return None
    say(f"  sign in: {sign_in_url()}")
    return typed


def stop_the_cdk_runtime() -> None:
    """Stop the CDK's jsii runtime (a node process, idle since the stack was synthesized) the way its
    exit hook would, and take the hook away: the process is in the terminal's process group, so
    Ctrl-C kills it too, and the hook would then print a traceback at exit."""
    if "jsii" not in sys.modules:
        return
    from jsii._runtime import kernel  # the runtime's one kernel

    provider: Any = kernel.provider
    with contextlib.suppress(OSError):  # Ctrl-C ended it already (its stop unhooks itself first)
        provider._process.stop()
