"""The suite's layout: what tests share lives in tests/support, and no module of the suite imports
anything else of tests/, neither a test module nor a conftest (pytest finds fixtures by itself)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SUPPORT = "tests.support"


def imports_in(text: str, package: str) -> set[str]:
    """What the code ``text`` of a module in ``package`` imports, at any depth, as dotted names:
    ``import a.b`` as a.b, ``from a import b`` as a.b (b a module or a name of a), relative
    imports made absolute."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def is_allowed(name: str) -> bool:
    """Anything outside tests/; inside it, only tests/support."""
    inside_tests = name == "tests" or name.startswith("tests.")
    return not inside_tests or name == SUPPORT or name.startswith(f"{SUPPORT}.")


def forbidden_imports(text: str, package: str) -> list[str]:
    return sorted(name for name in imports_in(text, package) if not is_allowed(name))


@pytest.mark.parametrize("source", sorted(TESTS.rglob("*.py")), ids=lambda path: str(path.relative_to(TESTS)))
def test_a_module_of_the_suite_imports_nothing_of_tests_but_tests_support(source: Path) -> None:
    package = ".".join(source.relative_to(TESTS.parent).parent.parts)

    assert forbidden_imports(source.read_text(), package) == []


def test_every_way_of_importing_a_test_module_or_a_conftest_is_found() -> None:
    text = (
        "import tests.unit.test_plan\n"
        "from tests.conftest import aws\n"
        "from tests.integration import test_kit\n"
        "from . import test_fifo\n"
        "from .test_plan import NOW\n"
        "from ..integration.test_kit import receive\n"
        "from tests.support.aws import Aws\n"
        "from tests import support\n"
        "from local_aws import REGION\n"
        "def later():\n"
        "    from tests.integration.test_kit import send\n"
    )

    assert forbidden_imports(text, "tests.unit") == [
        "tests.conftest.aws",
        "tests.integration.test_kit",
        "tests.integration.test_kit.receive",
        "tests.integration.test_kit.send",
        "tests.unit.test_fifo",
        "tests.unit.test_plan",
        "tests.unit.test_plan.NOW",
    ]
