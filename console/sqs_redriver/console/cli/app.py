"""The ``sqs-redriver`` application: its options (before the command or after it), its consoles,
how failures end a command, the order ``--help`` lists the commands in, and ``ui``, the web console
on 127.0.0.1 (for the browser it opens and the sign-in URLs it prints).

It starts at once: ``--version`` and ``--help`` import typer alone. What a command uses (boto3, the
library, rich, Flask) it imports when it runs; the tool is built from the options on first use
(``tool_of``), and help is click's plain text (typer's rich help imports rich whole)."""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from sqs_redriver.console.errors import (
    AuditUnavailable,
    BadConnection,
    Conflict,
    DeploymentNotFound,
    NotFound,
    UsageError,
)
from sqs_redriver.core.errors import AwsCallError

if TYPE_CHECKING:
    from rich.console import Console

    from sqs_redriver.console.tool import Tool

# The order --help lists the commands in (each command module registers its own; a command not
# listed here comes after these).
HELP_ORDER = (
    "edit",
    "fleet",
    "status",
    "groups",
    "show",
    "replay",
    "purge",
    "outcome",
    "retry-group",
    "park-group",
    "clear-group",
    "rules",
    "pause",
    "resume",
    "audit",
    "ui",
    "breaker",
)
# The tool's errors that end a command with one line and exit code 1 (AWS's too: _reported).
REPORTED: tuple[type[Exception], ...] = (
    NotFound,
    DeploymentNotFound,
    Conflict,
    AuditUnavailable,
    AwsCallError,
)
# Help is as wide as the terminal, up to this (click's default stops at 80).
HELP_WIDTH = 120


@cache
def out() -> Console:
    """The console of what a command prints (made on first use: rich costs a tenth of a second to
    import, which ``--help`` need not pay)."""
    from rich.console import Console

    return Console()


@cache
def err() -> Console:
    """The console of warnings and errors (stderr)."""
    from rich.console import Console

    return Console(stderr=True)


@dataclass
class GlobalOptions:
    """The options that name the re-driver and the connection, as given before the command and
    after it (``status --region x``): given after, a value replaces the one before (a list
    option's values add up, as when it is repeated); and the tool built from them on first use."""

    values: dict[str, Any]
    tool: Tool | None = field(default=None, init=False)

    def given_after(self, name: str, value: Any) -> None:
        if isinstance(value, list | tuple):
            self.values[name] = [*(self.values.get(name) or ()), *value]
        else:
            self.values[name] = value

    def built(self) -> Tool:
        if self.tool is None:
            from sqs_redriver.console.tool import Connection, Target, Tool

            given = self.values
            self.tool = Tool(
                Connection(
                    profile=given["profile"], region=given["region"], endpoint_url=given["endpoint_url"]
                ),
                Target(
                    stack=given["stack"],
                    redriver=given["redriver"],
                    dlq_url=given["dlq_url"],
                    source_urls=tuple(given["source_url"] or ()),
                    parking_lot_url=given["parking_lot_url"],
                    table=given["table"],
                    audit_log_group=given["audit_log_group"],
                    archive_bucket=given["archive_bucket"],
                ),
            )
        return self.tool


def tool_of(ctx: typer.Context) -> Tool:
    """The tool of the command being run, built from the options given before and after it."""
    options = ctx.find_object(GlobalOptions)
    if options is None:
        raise RuntimeError("a command of sqs-redriver runs without its application's options")
    return options.built()


def _tool_built(ctx: Any) -> Tool | None:
    options = ctx.find_object(GlobalOptions)
    return options.tool if options is not None else None


class ReportingGroup(TyperGroup):
    """Runs a command and turns the failures it may meet into one line and an exit code (2: the
    command line is wrong, an endpoint or region not of a usable form too; 1: something not found,
    or AWS refused, could not be reached, or an endpoint answered as AWS does not), never a
    traceback: the one place where they are mapped. Every command below it also takes the
    application's options that name the re-driver and the connection (hidden in its help, said
    in its epilog)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        globals_ = [param for param in self.params if param.expose_value and not param.is_eager]
        for command in _commands_below(self):
            _accept_after(command, globals_)

    def list_commands(self, ctx: Any) -> list[str]:
        listed = {name: place for place, name in enumerate(HELP_ORDER)}
        return sorted(super().list_commands(ctx), key=lambda name: listed.get(name, len(HELP_ORDER)))

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context (typer.Context is narrower)
        try:
            result = super().invoke(ctx)
        except (UsageError, BadConnection) as exc:
            fail(str(exc), code=2)
        except Exception as exc:
            if not isinstance(exc, _reported()):
                raise
            from sqs_redriver.console.advice import explain

            tool = _tool_built(ctx)
            fail(explain(exc, tool.connection if tool else None) or str(exc), code=1)
        finally:
            unrecorded = _unrecorded(ctx)
        if unrecorded:
            raise typer.Exit(1)
        return result


def _reported() -> tuple[type[BaseException], ...]:
    """What a command may raise that ends it with one line and exit code 1: the tool's errors, and
    AWS's (botocore's, once a command imported it: before that none can be raised)."""
    if "botocore" not in sys.modules:
        return REPORTED
    from sqs_redriver.console.aws import AWS_FAILURES

    return (*REPORTED, *AWS_FAILURES)


def _commands_below(group: TyperGroup) -> Iterable[Any]:
    for command in group.commands.values():
        yield command
        if isinstance(command, TyperGroup):
            yield from _commands_below(command)


def _accept_after(command: Any, globals_: list[Any]) -> None:
    """Give ``command`` a hidden copy of each global option it does not have an option of its own
    by that name (``fleet --region`` is the regions it reads), which records the value given after
    the command in the ``GlobalOptions``."""
    taken = {opt for param in command.params for opt in param.opts}
    added = []
    for param in globals_:
        if taken.intersection(param.opts):
            continue
        after = copy.copy(param)
        after.hidden, after.expose_value, after.is_eager = True, False, False
        after.envvar, after.default, after.show_envvar = None, None, False
        after.callback = _record_after
        command.params.append(after)
        added.append(param.opts[0])
    if added:
        said = f"The options {', '.join(added)} may also come after the command (see sqs-redriver --help)."
        command.epilog = f"{command.epilog}\n\n{said}" if command.epilog else said


def _record_after(ctx: Any, param: Any, value: Any) -> Any:
    if value not in (None, (), []) and not ctx.resilient_parsing:
        options = ctx.find_object(GlobalOptions)
        if options is not None:
            options.given_after(param.name, value)
    return value


def _unrecorded(ctx: Any) -> list[str]:
    """Say (on stderr) each action done whose end the audit trail could not record."""
    tool = _tool_built(ctx)
    taken = tool.take_warnings() if tool is not None else []
    if taken:
        from rich.text import Text

        from sqs_redriver.console.safe_text import inert

        for warning in taken:
            err().print(Text.assemble(("warning: ", "yellow"), inert(warning)), soft_wrap=True)
    return taken


def fail(message: str, *, code: int) -> NoReturn:
    """Print ``message`` on one line (inert: it may quote what a message or AWS said) and exit with
    ``code``."""
    from rich.text import Text

    from sqs_redriver.console.safe_text import inert

    err().print(Text.assemble(("error: ", "red"), inert(message)), soft_wrap=True)
    raise typer.Exit(code)


app = typer.Typer(
    cls=ReportingGroup,
    name="sqs-redriver",
    help="See and steer the smart SQS DLQ re-driver: status, groups, show, replay, pause, breaker.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": HELP_WIDTH},
)
breaker_app = typer.Typer(
    help="Open or close a source's circuit breaker by hand.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(breaker_app, name="breaker")

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
ReasonOption = Annotated[str, typer.Option("--reason", "-r", help="Why (recorded, and logged by every run).")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DISTRIBUTION = "sqs-smart-redriver"


def show_version(asked: bool) -> None:
    """``--version``: the installed package's version, then exit."""
    if not asked:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version(DISTRIBUTION)
    except PackageNotFoundError:
        fail(f"the package {DISTRIBUTION} is not installed: its version is unknown", code=1)
    typer.echo(f"sqs-redriver {found}")
    raise typer.Exit()


class QueueChoice(StrEnum):
    DLQ = "dlq"
    PARKING_LOT = "parking-lot"
    BOTH = "both"


@app.callback()
def options(
    ctx: typer.Context,
    _version: Annotated[
        bool,
        typer.Option("--version", callback=show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    stack: Annotated[
        str | None, typer.Option(envvar="SQS_REDRIVER_STACK", help="CloudFormation stack of the re-driver.")
    ] = None,
    redriver: Annotated[
        str | None, typer.Option(help="Which re-driver of the stack (its construct id), if it has several.")
    ] = None,
    dlq_url: Annotated[str | None, typer.Option(help="Without --stack: the DLQ's URL.")] = None,
    source_url: Annotated[
        list[str] | None,
        typer.Option(help="Without --stack: a source queue URL (or a Lambda function's ARN: its re-driver)."),
    ] = None,
    parking_lot_url: Annotated[
        str | None, typer.Option(help="Without --stack: the parking lot's URL.")
    ] = None,
    table: Annotated[str | None, typer.Option(help="Without --stack: the state table's name.")] = None,
    audit_log_group: Annotated[
        str | None, typer.Option(help="Without --stack: the log group that records operator actions.")
    ] = None,
    archive_bucket: Annotated[
        str | None, typer.Option(help="Without --stack: the archive bucket (where edits keep originals).")
    ] = None,
    profile: Annotated[str | None, typer.Option(envvar="AWS_PROFILE", help="AWS profile.")] = None,
    region: Annotated[str | None, typer.Option(envvar="AWS_REGION", help="AWS region.")] = None,
    endpoint_url: Annotated[
        str | None, typer.Option(envvar="AWS_ENDPOINT_URL", help="Another endpoint (e.g. the local demo's).")
    ] = None,
) -> None:
    ctx.obj = GlobalOptions(
        {
            "stack": stack,
            "redriver": redriver,
            "dlq_url": dlq_url,
            "source_url": source_url,
            "parking_lot_url": parking_lot_url,
            "table": table,
            "audit_log_group": audit_log_group,
            "archive_bucket": archive_bucket,
            "profile": profile,
            "region": region,
            "endpoint_url": endpoint_url,
        }
    )


def audited(ctx: typer.Context) -> Tool:
    """The tool of a command that acts; warns on stderr when its actions cannot be recorded."""
    tool = tool_of(ctx)
    if tool.audit_log is None:
        err().print(
            "warning: this re-driver has no audit log group (a construct older than the audit trail, "
            "or --audit-log-group not given): the action is not recorded",
            markup=False,
        )
    return tool


@app.command()
def ui(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: a free one).", min=0, max=65535)] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print a sign-in URL.")] = False,
) -> None:
    """The same views and actions in a browser: status with a depth chart, the fleet, groups,
    messages, replay, edit and retry, group rules, pause, outcomes and the audit trail. Serves
    127.0.0.1 only, to browsers signed in with a URL it printed or the browser it opened; Enter
    prints a fresh sign-in URL, Ctrl-C stops."""
    from sqs_redriver.console.web.guard import TOKEN_SECONDS
    from sqs_redriver.console.web.server import ConsoleServer

    tool = tool_of(ctx)
    name = tool.deployment.name  # a wrong stack or options fail here, on one line, before serving
    console = ConsoleServer.bind(tool, port)
    out().print(f"console of {name}: {console.url}", markup=False, highlight=False, soft_wrap=True)
    err().print(
        f"A sign-in URL works once, within {TOKEN_SECONDS:.0f} s: press Enter for a fresh one. "
        "Ctrl-C stops the console.",
        markup=False,
        soft_wrap=True,
    )
    if not no_browser:
        # A browser confined to its own /tmp (a snap, a flatpak) shows "file not found" for the
        # private sign-in file, and the opener cannot know it.
        opened = console.open_browser()
        err().print(
            'If the browser shows "file not found", press Enter here and open the new URL.'
            if opened
            else "No browser could be started: open the URL above.",
            markup=False,
        )
    console.serve_until_interrupted(on_enter=_print_url)
    err().print("stopped", markup=False)


def _print_url(url: str) -> None:
    out().print(f"sign in: {url}", markup=False, highlight=False, soft_wrap=True)
