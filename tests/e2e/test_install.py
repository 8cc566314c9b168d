"""The project as a package: its wheel, installed into a fresh venv, gives a user's CDK app the
construct, a consumer the kit, and the operator the command-line tool, with nothing from this
repository on the path.

Slow for a test (the venv installs aws-cdk-lib; pip's cache makes repeats faster) and needs PyPI;
`pytest -m "not install"` leaves it out of a quick run. One wheel, one venv and one synthesis for
the whole module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from sqs_redriver.protocol.deployment import OUTPUT_DESCRIPTION

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parents[2]
# What the build reads. Built from a copy: setuptools' build/ would carry a deleted module into the
# wheel, and the build writes nothing into the checkout.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "sqs_redriver", "infra", "lambdas")
STACK = "Orders"
SOURCE_ARN = "arn:aws:sqs:eu-west-1:111122223333:orders"
DLQ_ARN = "arn:aws:sqs:eu-west-1:111122223333:orders-dlq"
HANDLER = "sqs_redriver.runtime.handler.lambda_handler"

# A user's project, beside nothing of this repository. It has an `infra` package of its own, as CDK
# projects often do: the construct's own infra ships as sqs_redriver.cdk and does not clash.
USER_APP = f'''
import sys

import aws_cdk as cdk
from infra import ACCOUNT, REGION
from sqs_redriver.cdk import SqsRedriver

app = cdk.App(outdir=sys.argv[1])
stack = cdk.Stack(app, "{STACK}", env=cdk.Environment(account=ACCOUNT, region=REGION))
SqsRedriver.from_queue_arns(
    stack,
    "Redriver",
    source_queue_arn="{SOURCE_ARN}",
    dead_letter_queue_arn="{DLQ_ARN}",
)
app.synth()
'''
USER_INFRA = 'ACCOUNT = "111122223333"\nREGION = "eu-west-1"\n'
WHERE_FROM = """
import json, sysconfig
import sqs_redriver.runtime, sqs_redriver.kit, sqs_redriver, sqs_redriver.cdk
from sqs_redriver.kit import ConsumerKit, TerminalError, TransientError

print(json.dumps({
    "site_packages": sysconfig.get_paths()["purelib"],
    "modules": {m.__name__: m.__file__ for m in (redriver, sqs_redriver.kit, sqs_redriver, sqs_redriver.cdk)},
    "kit": [ConsumerKit.__name__, TerminalError.__name__, TransientError.__name__],
}))
"""


def run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``cwd`` with nothing of the repository on the path; fail with its output."""
    keep = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env = {
        **keep,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, source / name)
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", out, source, cwd=out)
    [built] = out.glob("sqs_smart_redriver-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    """A fresh venv with the wheel and its dependencies from the package index. No pip of its own:
    this pip installs into it. No byte-compiling: for aws-cdk-lib it took longer than the install."""
    directory = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", "--without-pip", directory, cwd=directory)
    python = directory / "bin" / "python"
    pip = (sys.executable, "-m", "pip", "--python", python)
    run(*pip, "install", "--quiet", "--no-compile", wheel, cwd=directory)
    return directory


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("user-project")
    (directory / "app.py").write_text(dedent(USER_APP))
    (directory / "infra").mkdir()
    (directory / "infra" / "__init__.py").write_text(USER_INFRA)
    return directory


@pytest.fixture(scope="module")
def assembly(venv: Path, user_dir: Path) -> Path:
    outdir = user_dir / "cdk.out"
    run(venv / "bin" / "python", "app.py", outdir, cwd=user_dir)
    return outdir


@pytest.fixture(scope="module")
def template(assembly: Path) -> dict[str, Any]:
    return json.loads((assembly / f"{STACK}.template.json").read_text())


def resources(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r.get("Properties", {}) for r in template["Resources"].values() if r["Type"] == kind]


def asset_dir(assembly: Path, s3_key: str) -> Path:
    """The folder in the cloud assembly that the asset manifest zips to ``s3_key``."""
    manifest = json.loads((assembly / f"{STACK}.assets.json").read_text())
    [source] = [
        asset["source"]
        for asset in manifest["files"].values()
        if any(d["objectKey"] == s3_key for d in asset["destinations"].values())
    ]
    return assembly / source["path"]


def test_wheel_holds_the_construct_the_kit_and_the_lambda_code_and_not_the_repositorys_tools(
    wheel: Path,
) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}

    assert top_level == {"sqs_redriver", "redriver", "sqs_redriver.kit"}
    assert {
        "sqs_redriver/__init__.py",
        "sqs_redriver/infra/redriver.py",
        "redriver/handler.py",
        "redriver/settings/schema.py",
        "sqs_redriver.kit/kit.py",
    } <= names


def test_installed_packages_and_the_kit_come_from_the_venv(venv: Path, user_dir: Path) -> None:
    found = json.loads(run(venv / "bin" / "python", "-c", WHERE_FROM, cwd=user_dir).stdout)

    site_packages = Path(found["site_packages"])
    assert site_packages.is_relative_to(venv)
    assert {name: Path(file).is_relative_to(site_packages) for name, file in found["modules"].items()} == {
        "redriver": True,
        "sqs_redriver.kit": True,
        "sqs_redriver": True,
        "sqs_redriver.cdk": True,
    }
    assert found["kit"] == ["ConsumerKit", "TerminalError", "TransientError"]


def test_user_app_synthesizes_the_redriver_on_queues_imported_by_arn(template: dict[str, Any]) -> None:
    [function] = [f for f in resources(template, "AWS::Lambda::Function") if f["Handler"] == HANDLER]
    [table] = resources(template, "AWS::DynamoDB::Table")
    queues = resources(template, "AWS::SQS::Queue")
    outputs = [o for o in template["Outputs"].values() if o.get("Description") == OUTPUT_DESCRIPTION]

    assert function["Runtime"].startswith("python3.")
    assert table["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert len(queues) == 1  # the parking lot: the source queue and its DLQ are imported
    assert queues[0]["MessageRetentionPeriod"] == 14 * 86_400
    assert len(outputs) == 1


def test_redrive_function_asset_is_the_installed_redriver_package(
    template: dict[str, Any], assembly: Path
) -> None:
    [function] = [f for f in resources(template, "AWS::Lambda::Function") if f["Handler"] == HANDLER]
    code = asset_dir(assembly, function["Code"]["S3Key"])

    assert (code / "redriver" / "handler.py").is_file()
    assert {p.name for p in code.iterdir()} == {"redriver"}


def test_consumer_kit_layer_is_built_from_the_installed_packages(
    template: dict[str, Any], assembly: Path
) -> None:
    [layer] = resources(template, "AWS::Lambda::LayerVersion")
    content = asset_dir(assembly, layer["Content"]["S3Key"])

    assert (content / "python" / "sqs_redriver.kit" / "kit.py").is_file()
    assert {p.name for p in (content / "python").iterdir()} == {"redriver", "sqs_redriver.kit"}


def test_command_line_tool_is_installed_and_lists_its_commands(venv: Path, user_dir: Path) -> None:
    done = run(venv / "bin" / "sqs-redriver", "--help", cwd=user_dir)

    assert "status" in done.stdout
