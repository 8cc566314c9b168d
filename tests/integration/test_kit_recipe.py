"""docs/consumer-kit.md's recipe for testing a kit consumer against moto, run as printed: saved as
a test file beside the page's example consumer, in a pytest of its own that imports only what the
kit's extra, moto and pytest install."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs/consumer-kit.md"
RECIPE_SECTION = "## Test your kit consumer locally"
KIT_SECTION = "## Let your consumer speak: the consumer kit"
# What the recipe may import besides the standard library: the kit's extra brings the kit, the
# protocol, boto3 and Powertools; the rest is what the page says to install.
INSTALLED = {"boto3", "moto", "pytest", "sqs_redriver.kit", "sqs_redriver.protocol"}


def python_blocks(section: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(section)
    end = text.find("\n## ", start + 1)
    return re.findall(r"^```python\n(.*?)^```$", text[start : end if end != -1 else None], re.S | re.M)


def run_recipe(tmp_path: Path, consumer: str) -> subprocess.CompletedProcess[str]:
    """The recipe as printed, as test_orders_consumer.py beside ``consumer`` (orders_consumer.py),
    run by pytest with no AWS credentials and no configuration of this repository."""
    [recipe] = python_blocks(RECIPE_SECTION)
    (tmp_path / "test_orders_consumer.py").write_text(recipe, encoding="utf-8")
    (tmp_path / "orders_consumer.py").write_text(consumer, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTEST_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def the_pages_consumer() -> str:
    [consumer] = [block for block in python_blocks(KIT_SECTION) if "def lambda_handler" in block]
    return consumer


def test_the_recipe_passes_against_the_pages_consumer(tmp_path: Path) -> None:
    completed = run_recipe(tmp_path, the_pages_consumer())

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert re.search(r"\b3 passed\b", completed.stdout), completed.stdout


def test_the_recipe_fails_a_consumer_that_dead_letters_an_outage(tmp_path: Path) -> None:
    # GIVEN the page's consumer, but with its outage not declared transient: unknown, so terminal
    consumer = the_pages_consumer()
    wrong = consumer.replace("transient=[DownstreamUnavailable]", "")
    assert wrong != consumer

    completed = run_recipe(tmp_path, wrong)

    assert completed.returncode == 1
    assert re.search(r"\b2 failed, 1 passed\b", completed.stdout), completed.stdout
    assert "::test_an_outage_is_left_to_sqs_to_deliver_again" in completed.stdout


def test_the_recipe_imports_only_the_standard_library_and_what_the_page_installs() -> None:
    [recipe] = python_blocks(RECIPE_SECTION)
    imported: set[str] = set()
    for node in ast.walk(ast.parse(recipe)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)

    outside = {
        name
        for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names
        and not any(name == allowed or name.startswith(f"{allowed}.") for allowed in INSTALLED)
    }
    assert outside == set()
    assert "sqs_redriver.kit" in imported
