"""``sqs-redriver``: the on-call engineer's command-line tool for the smart DLQ re-driver.

Each command is a verb; ``--json`` prints data for scripts; nothing moves messages without a
preview (``--dry-run`` prints it and stops). Exit codes: 0 done and all well, 1 a problem was found
or something could not be done, 2 the command line was wrong. The commands, by module: ``views``
(status, groups, show, audit, and fleet: every dead-letter queue of the account), ``moves``
(replay, purge, edit, and ``outcome``: what became of each), ``controls`` (group records, pause,
breakers), ``app`` (the options, and ui: the web console).

Without the ``[cli]`` extra the console script says which extra to install, instead of dying on
an ImportError.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

# The package is not on PyPI: the extra comes from a clone or from the wheel of `make dist`.
MISSING_EXTRA = (
    'sqs-redriver needs its [cli] extra: pip install ".[cli]" in a clone of the repository, or the '
    "wheel of make dist with [cli] after its name"
)
# The libraries of the [cli] extra (and click, which Flask and `edit` use), looked for, not
# imported: a command imports what it uses when it runs.
EXTRA = ("typer", "click", "rich", "flask", "boto3", "botocore", "aws_lambda_powertools")


def _missing_extra() -> str | None:
    """The first library of the extra that cannot be found (None: all can)."""
    for name in EXTRA:
        try:
            if find_spec(name) is None:
                return name
        except (ImportError, ValueError):  # set to None in sys.modules, or without a spec
            return name
    return None


# What the [cli] extra brings cannot be imported: main() says which extra to install (nothing else
# here works without it).
_unimportable: ImportError | None = None
try:
    from sqs_redriver.console.cli import controls, moves, views
    from sqs_redriver.console.cli.app import app
except ImportError as exc:
    if (exc.name or "").partition(".")[0] == "sqs_redriver":
        raise  # a broken install of this package, not a missing extra
    _unimportable = exc

__all__ = ["app", "controls", "main", "moves", "views"]


def main() -> None:
    """The console script's entry point: one line and exit code 2 when a library of the ``[cli]``
    extra (typer, click, rich, flask, boto3, Powertools, or what they need) cannot be found or
    imported, at the start or when a command imports it."""
    missing = _missing_extra()
    if _unimportable is not None:
        missing = (_unimportable.name or "").partition(".")[0] or str(_unimportable)
    if missing is not None:
        _say_missing(missing)
    try:
        app()
    except ImportError as exc:
        name = (exc.name or "").partition(".")[0]
        if name == "sqs_redriver":
            raise
        _say_missing(name or str(exc))


def _say_missing(name: str) -> None:
    print(f"error: {MISSING_EXTRA} (cannot import {name})", file=sys.stderr)
    raise SystemExit(2)
