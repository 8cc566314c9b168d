"""The ``sqs-redriver`` application: its options, its consoles, how failures end a command, the
order ``--help`` lists the commands in, and ``ui``, the web console on 127.0.0.1 (for the browser it
opens and the sign-in URLs it prints)."""

from __future__ import annotations

from enum import StrEnum
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from sqs_redriver.console.advice import explain
from sqs_redriver.console.aws import AWS_FAILURES
from sqs_redriver.console.errors import (
    AuditUnavailable,
    BadConnection,
    Conflict,
    DeploymentNotFound,
    NotFound,
    UsageError,
)
from sqs_redriver.console.safe_text import inert
from sqs_redriver.console.tool import Connection, Target, Tool
from sqs_redriver.console.web.guard import TOKEN_SECONDS
from sqs_redriver.console.web.server import ConsoleServer
from sqs_redriver.core.errors import AwsCallError

out = Console()
err = Console(stderr=True)
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


class ReportingGroup(TyperGroup):
    """Runs a command and turns the failures it may meet into one line and an exit code (2: the
    command line is wrong, an endpoint or region not of a usable form too; 1: something not found,
    or AWS refused, could not be reached, or an endpoint answered as AWS does not), never a
    traceback: the one place where they are mapped."""

    def list_commands(self, ctx: Any) -> list[str]:
        listed = {name: place for place, name in enumerate(HELP_ORDER)}
        return sorted(super().list_commands(ctx), key=lambda name: listed.get(name, len(HELP_ORDER)))

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context (typer.Context is narrower)
        try:
            result = super().invoke(ctx)
        except (UsageError, BadConnection) as exc:
            fail(str(exc), code=2)
        except (NotFound, DeploymentNotFound, Conflict, AuditUnavailable, AwsCallError, *AWS_FAILURES) as exc:
            tool = ctx.obj if isinstance(ctx.obj, Tool) else None
            fail(explain(exc, tool.connection if tool else None) or str(exc), code=1)
        finally:
            unrecorded = _unrecorded(ctx)
        if unrecorded:
            raise typer.Exit(1)
        return result


def _unrecorded(ctx: Any) -> list[str]:
    """Say (on stderr) each action done whose end the audit trail could not record."""
    tool = ctx.obj if isinstance(ctx.obj, Tool) else None
    taken = tool.take_warnings() if tool is not None else []
    for warning in taken:
        err.print(Text.assemble(("warning: ", "yellow"), inert(warning)), soft_wrap=True)
    return taken


def fail(message: str, *, code: int) -> NoReturn:
    """Print ``message`` on one line (inert: it may quote what a message or AWS said) and exit with
    ``code``."""
    err.print(Text.assemble(("error: ", "red"), inert(message)), soft_wrap=True)
    raise typer.Exit(code)


app = typer.Typer(
    cls=ReportingGroup,
    name="sqs-redriver",
    help="See and steer the smart SQS DLQ re-driver: status, groups, show, replay, pause, breaker.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
breaker_app = typer.Typer(help="Open or close a source's circuit breaker by hand.", no_args_is_help=True)
app.add_typer(breaker_app, name="breaker")

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
ReasonOption = Annotated[str, typer.Option("--reason", "-r", help="Why (recorded, and logged by every run).")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DISTRIBUTION = "sqs-smart-redriver"


def show_version(asked: bool) -> None:
    """``--version``: the installed package's version, then exit."""
    if not asked:
        return
    try:
        out.print(f"sqs-redriver {version(DISTRIBUTION)}", markup=False, highlight=False)
    except PackageNotFoundError:
        fail(f"the package {DISTRIBUTION} is not installed: its version is unknown", code=1)
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
    source_url: Annotated[list[str] | None, typer.Option(help="Without --stack: a source queue URL.")] = None,
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
    ctx.obj = Tool(
        Connection(profile=profile, region=region, endpoint_url=endpoint_url),
        Target(
            stack=stack,
            redriver=redriver,
            dlq_url=dlq_url,
            source_urls=tuple(source_url or ()),
            parking_lot_url=parking_lot_url,
            table=table,
            audit_log_group=audit_log_group,
            archive_bucket=archive_bucket,
        ),
    )


def audited(ctx: typer.Context) -> Tool:
    """The tool of a command that acts; warns on stderr when its actions cannot be recorded."""
    tool: Tool = ctx.obj
    if tool.audit_log is None:
        err.print(
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
    tool: Tool = ctx.obj
    name = tool.deployment.name  # a wrong stack or options fail here, on one line, before serving
    console = ConsoleServer.bind(tool, port)
    out.print(f"console of {name}: {console.url}", markup=False, highlight=False, soft_wrap=True)
    err.print(
        f"A sign-in URL works once, within {TOKEN_SECONDS:.0f} s: press Enter for a fresh one. "
        "Ctrl-C stops the console.",
        markup=False,
        soft_wrap=True,
    )
    if not no_browser:
        # A browser confined to its own /tmp (a snap, a flatpak) shows "file not found" for the
        # private sign-in file, and the opener cannot know it.
        opened = console.open_browser()
        err.print(
            'If the browser shows "file not found", press Enter here and open the new URL.'
            if opened
            else "No browser could be started: open the URL above.",
            markup=False,
        )
    console.serve_until_interrupted(on_enter=_print_url)
    err.print("stopped", markup=False)


def _print_url(url: str) -> None:
    out.print(f"sign in: {url}", markup=False, highlight=False, soft_wrap=True)
