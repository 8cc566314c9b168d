"""Functions a person can hold in mind: none over 60 lines, in every folder of the product and its
tools (tests are left out: a table of cases may be clearer long). Modules are judged by whether they
hold one thing, not by their length (decision 0083 in docs/decisions/)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("infra", "lambdas", "console", "local_aws", "demo", "bench")
MAX_FUNCTION_LINES = 60


def modules() -> list[Path]:
    found = [ROOT / "app.py"]
    for folder in FOLDERS:
        found.extend(sorted((ROOT / folder).rglob("*.py")))
    return found


def long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    functions = (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    return [
        f"{f.name} ({f.end_lineno - f.lineno + 1} lines, line {f.lineno})"
        for f in functions
        if f.end_lineno is not None and f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES
    ]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_function_is_short(path: Path) -> None:
    assert long_functions(path) == []


def test_the_rule_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    long = tmp_path / "long.py"
    long.write_text(f"def f() -> None:\n{body}\n")

    assert long_functions(long) == [f"f ({MAX_FUNCTION_LINES + 1} lines, line 1)"]
