"""A module imported afresh, as a new Lambda environment imports the handler at its cold start."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


def import_fresh(name: str) -> ModuleType:
    sys.modules.pop(name, None)
    return importlib.import_module(name)
