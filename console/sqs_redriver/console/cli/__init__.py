"""``sqs-redriver``: the on-call engineer's command-line tool for the smart DLQ re-driver.

Each command is a verb; ``--json`` prints data for scripts; nothing moves messages without a
preview (``--dry-run`` prints it and stops). Exit codes: 0 done and all well, 1 a problem was found
or something could not be done, 2 the command line was wrong. The commands: ``looking`` (status,
groups, show), ``moving`` (replay, purge), ``editing`` (edit), ``outcome`` (what became of each
replay), ``steering`` (group records, pause, breakers), ``trail`` (audit), ``fleet`` (every
dead-letter queue of the account), ``ui`` (the web console).
"""

from __future__ import annotations

from sqs_redriver.console.cli import editing, fleet, looking, moving, outcome, steering, trail, ui
from sqs_redriver.console.cli.app import app

__all__ = ["app", "editing", "fleet", "looking", "main", "moving", "outcome", "steering", "trail", "ui"]


def main() -> None:
    """The console script's entry point."""
    app()
