"""docs/security.md's table of what a sender can do, per kind: every line names its tests, and each
test it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECURITY = ROOT / "docs" / "security.md"
TEST_REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def per_kind_lines() -> list[str]:
    """The rows of the table under "What a sender can do, per kind" (its header and rule left out)."""
    section = SECURITY.read_text().split("## What a sender can do, per kind", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return rows[1:]


def test_every_line_of_what_a_sender_can_do_names_a_test() -> None:
    lines = per_kind_lines()

    assert len(lines) == 3  # an SQS consumer's DLQ, a function's, a rule target's or a subscription's
    assert [line for line in lines if not TEST_REFERENCE.search(line.rsplit("|", 2)[1])] == []


def test_every_test_security_md_names_exists() -> None:
    named = TEST_REFERENCE.findall(SECURITY.read_text())
    missing = []
    for path, name in named:
        tree = ast.parse((ROOT / path).read_text())
        functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        if name not in functions:
            missing.append(f"{path}::{name}")

    assert named and missing == []
