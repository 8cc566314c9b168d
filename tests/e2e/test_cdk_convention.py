"""The CDK way, on a fresh clone: what every CDK Python project's README says,

    python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && cdk synth

synthesizes the default stack. The clone is what a commit of this working tree would hold: its
tracked and untracked files, without what .gitignore leaves out (no venv, no cdk.out). `cdk synth`
runs the app as cdk.json says, `python3 app.py` with the venv first on the PATH: here
`.venv/bin/python app.py`. Needs PyPI (pip's cache makes repeats faster), like test_install.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parents[2]
STACK = "SqsSmartRedriver"  # app.py's
REDRIVER_HANDLER = "sqs_redriver.runtime.handler.lambda_handler"
CONSUMER_HANDLER = "consumer.handler.lambda_handler"


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ``command`` in ``cwd`` with nothing of this repository or its venv in the environment;
    its stdout, or a failure with its output."""
    keep = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env={**keep, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def fresh_clone(target: Path) -> Path:
    """The working tree's files that git does not ignore, copied into ``target``."""
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not in the clone
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone after `python3 -m venv .venv && .venv/bin/pip install -r requirements.txt`.
    No byte-compiling (PIP_NO_COMPILE): for aws-cdk-lib it takes longer than the install."""
    directory = fresh_clone(tmp_path_factory.mktemp("clone"))
    run(sys.executable, "-m", "venv", ".venv", cwd=directory)
    run(
        ".venv/bin/pip",
        "install",
        "--quiet",
        "-r",
        "requirements.txt",
        cwd=directory,
        env={"PIP_NO_COMPILE": "1"},
    )
    return directory


@pytest.fixture(scope="module")
def template(clone: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    outdir = tmp_path_factory.mktemp("cdk.out")
    run(
        clone / ".venv" / "bin" / "python",
        "app.py",
        cwd=clone,
        env={"CDK_OUTDIR": str(outdir), "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"},
    )
    found: dict[str, Any] = json.loads((outdir / f"{STACK}.template.json").read_text())
    return found


def test_requirements_install_the_project_from_the_clone_itself(clone: Path) -> None:
    where = run(
        clone / ".venv" / "bin" / "python",
        "-c",
        "import consumer, sqs_redriver.cdk; print(sqs_redriver.cdk.__file__); print(consumer.__file__)",
        cwd=clone.parent,  # not the clone's root: found through the install, not the working directory
    )

    assert [Path(line).relative_to(clone).parts[0] for line in where.splitlines()] == ["infra", "lambdas"]


def test_the_app_synthesizes_the_default_stack_with_the_redriver_and_the_example_consumer(
    template: dict[str, Any],
) -> None:
    handlers = {
        resource["Properties"]["Handler"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function" and "Handler" in resource["Properties"]
    }
    queues = [r for r in template["Resources"].values() if r["Type"] == "AWS::SQS::Queue"]

    assert {REDRIVER_HANDLER, CONSUMER_HANDLER} <= handlers
    assert len(queues) == 3  # the orders queue, its DLQ and the parking lot
