"""The smart SQS dead-letter-queue re-driver, as a package: the CDK construct and the operator's tool.

``from sqs_redriver import SqsRedriver`` gives the construct. It is imported on first use, so the
command-line tool (``sqs_redriver.cli``) starts without loading the CDK. In the repository (not
installed), the Lambda packages it uses (``redriver``) are in lambdas/: put on the path here, as
infra/ does.
"""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

_REPOSITORY_LAMBDAS = Path(__file__).resolve().parent.parent / "lambdas"
if (_REPOSITORY_LAMBDAS / "redriver").is_dir() and str(_REPOSITORY_LAMBDAS) not in sys.path:
    sys.path.append(str(_REPOSITORY_LAMBDAS))

if TYPE_CHECKING:
    from infra.redriver import SqsRedriver
    from infra.settings import RedriverSettings, SettingsError

__all__ = ["RedriverSettings", "SettingsError", "SqsRedriver"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "redriver" if name == "SqsRedriver" else "settings"
    try:  # installed: the wheel carries infra/ as sqs_redriver.infra
        return getattr(import_module(f"sqs_redriver.infra.{module}"), name)
    except ModuleNotFoundError as exc:  # the repository: infra/ beside this package
        if exc.name not in ("sqs_redriver.infra", f"sqs_redriver.infra.{module}"):
            raise
        return getattr(import_module(f"infra.{module}"), name)
