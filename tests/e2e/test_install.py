"""The project as a package: its wheel holds sqs_redriver alone, and each extra, installed into a
clean venv with nothing from this repository on the path, gives its audience its part: the kit a
consumer, the command-line tool the operator (neither with the CDK), the construct a user's CDK
app, whose Lambda asset and kit layer are the repository's own sources.

Slow for a test and needs PyPI (pip's cache makes repeats faster); `pytest -m "not install"` leaves
it out of a quick run. One wheel and one venv per extra for the whole run, shared by its workers.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parents[2]
# What the build reads (pyproject.toml names the part folders and the readme). Built from a copy, so
# the build writes nothing into the checkout.
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "infra", "lambdas", "console")
# sqs_redriver's parts, each in the part folder it is built from.
PARTS = {
    "cdk": "infra",
    "runtime": "lambdas",
    "core": "lambdas",
    "kit": "lambdas",
    "protocol": "lambdas",
    "console": "console",
}
NOT_PACKAGED = ("__pycache__", "*.pyc")
STACK = "Orders"
HANDLER = "sqs_redriver.runtime.handler.lambda_handler"

# A user's project, beside nothing of this repository. It has an `infra` package of its own, as CDK
# projects often do: the construct ships as sqs_redriver.cdk and does not clash.
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
    source_queue_arn="arn:aws:sqs:eu-west-1:111122223333:orders",
    dead_letter_queue_arn="arn:aws:sqs:eu-west-1:111122223333:orders-dlq",
)
app.synth()
'''
USER_INFRA = 'ACCOUNT = "111122223333"\nREGION = "eu-west-1"\n'
# Where a venv's python finds a module (without importing it) and what it cannot find.
WHERE_FROM = """
import importlib.util, json, sys, sysconfig
specs = {name: importlib.util.find_spec(name) for name in sys.argv[1:]}
print(json.dumps({
    "site_packages": sysconfig.get_paths()["purelib"],
    "found": {name: spec.origin if spec else None for name, spec in specs.items()},
}))
"""
# What the construct's extra alone installs.
THE_CDK = ("aws_cdk", "jsii", "constructs")
IMPORT_THE_KIT = "from sqs_redriver.kit import ConsumerKit, TerminalError, TransientError, fingerprint"


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


def made_once(shared: Path, name: str, make: Callable[[Path], None]) -> Path:
    """``shared/name``, made by ``make`` by the first worker of the run to ask for it; the others
    wait for it and use it."""
    target = shared / name
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / f"{name}.done").exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            make(target)
            (shared / f"{name}.done").touch()
    return target


def files_of(folder: Path, prefix: str = "") -> dict[str, bytes]:
    """Every file below ``folder``, by its path below it after ``prefix``."""
    return {
        prefix + path.relative_to(folder).as_posix(): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file()
    }


def repository_sources(*parts: str) -> dict[str, bytes]:
    """The files of these parts of sqs_redriver in the repository (bytecode caches left out), by
    their path below the part folder."""
    found: dict[str, bytes] = {}
    for part in parts:
        found |= files_of(ROOT / PARTS[part] / "sqs_redriver" / part, f"sqs_redriver/{part}/")
    return {
        name: data for name, data in found.items() if "__pycache__/" not in name and not name.endswith(".pyc")
    }


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder this run's workers share (each xdist worker has its own base temp folder)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:
        return tmp_path_factory.mktemp("install")
    folder = tmp_path_factory.getbasetemp().parent / f"install-{run_id}"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def wheel(shared: Path) -> Path:
    def build(out: Path) -> None:
        source = out / "source"
        for name in BUILD_INPUTS:
            path = ROOT / name
            if path.is_dir():
                shutil.copytree(path, source / name, ignore=shutil.ignore_patterns(*NOT_PACKAGED))
            else:
                source.mkdir(exist_ok=True)
                shutil.copy2(path, source / name)
        run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", out, source, cwd=out)

    [built] = made_once(shared, "dist", build).glob("sqs_smart_redriver-*.whl")
    return built


def venv_with(shared: Path, wheel: Path, extra: str) -> Path:
    """A fresh venv holding ``wheel[extra]`` and its dependencies from the package index (through
    pip's cache). No pip of its own: this pip installs into it. No byte-compiling: for aws-cdk-lib
    it took longer than the install."""

    def install(directory: Path) -> None:
        run(sys.executable, "-m", "venv", "--without-pip", directory, cwd=directory)
        pip = (sys.executable, "-m", "pip", "--python", directory / "bin" / "python")
        run(*pip, "install", "--quiet", "--no-compile", f"{wheel}[{extra}]", cwd=directory)

    return made_once(shared, f"venv-{extra}", install)


@pytest.fixture(scope="module")
def cdk_venv(shared: Path, wheel: Path) -> Path:
    return venv_with(shared, wheel, "cdk")


def where_from(venv: Path, *modules: str, cwd: Path) -> dict[str, Any]:
    """The venv's site-packages, and the file each of ``modules`` would be imported from (None:
    not installed)."""
    found: dict[str, Any] = json.loads(
        run(venv / "bin" / "python", "-c", WHERE_FROM, *modules, cwd=cwd).stdout
    )
    return found


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("user-project")
    (directory / "app.py").write_text(dedent(USER_APP))
    (directory / "infra").mkdir()
    (directory / "infra" / "__init__.py").write_text(USER_INFRA)
    return directory


@pytest.fixture(scope="module")
def assembly(cdk_venv: Path, user_dir: Path) -> Path:
    outdir = user_dir / "cdk.out"
    run(cdk_venv / "bin" / "python", "app.py", outdir, cwd=user_dir)
    return outdir


@pytest.fixture(scope="module")
def template(assembly: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((assembly / f"{STACK}.template.json").read_text())
    return found


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
    return assembly / str(source["path"])


# --- the wheel ---------------------------------------------------------------------------------


def test_the_wheel_holds_the_five_parts_of_sqs_redriver_as_the_repository_has_them(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = [name for name in archive.namelist() if not name.endswith("/")]
        packaged = {name: archive.read(name) for name in names if ".dist-info/" not in name}
        [entry_points] = [archive.read(name).decode() for name in names if name.endswith("entry_points.txt")]

    assert {name.split("/")[0] for name in packaged} == {"sqs_redriver"}
    assert {name.split("/")[1] for name in packaged} == set(PARTS)
    assert packaged == repository_sources(*PARTS)
    assert "sqs-redriver = sqs_redriver.console.cli:main" in entry_points


def test_the_wheel_names_its_licence_and_carries_its_text(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata] = [archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA")]
        [licence] = [archive.read(n) for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    headers = metadata.split("\n\n", 1)[0].splitlines()

    assert "License-Expression: Apache-2.0" in headers
    assert "License-File: LICENSE" in headers
    assert licence == (ROOT / "LICENSE").read_bytes()
    assert b"Apache License" in licence and b"Version 2.0, January 2004" in licence


# --- each extra in a venv of its own ---------------------------------------------------------------


def test_the_kit_extra_imports_the_kit_from_the_venv_without_the_cdk_or_the_cli(
    shared: Path, wheel: Path, tmp_path: Path
) -> None:
    kit_venv = venv_with(shared, wheel, "kit")
    run(kit_venv / "bin" / "python", "-c", IMPORT_THE_KIT, cwd=tmp_path)
    found = where_from(kit_venv, "sqs_redriver.kit", *THE_CDK, "typer", cwd=tmp_path)

    assert Path(found["found"].pop("sqs_redriver.kit")).is_relative_to(found["site_packages"])
    assert Path(found["site_packages"]).is_relative_to(kit_venv)
    assert found["found"] == dict.fromkeys((*THE_CDK, "typer"))


def test_the_cli_extra_installs_the_command_line_tool_without_the_cdk(
    shared: Path, wheel: Path, tmp_path: Path
) -> None:
    cli_venv = venv_with(shared, wheel, "cli")
    done = run(cli_venv / "bin" / "sqs-redriver", "--help", cwd=tmp_path)
    found = where_from(cli_venv, *THE_CDK, cwd=tmp_path)

    assert "status" in done.stdout
    assert found["found"] == dict.fromkeys(THE_CDK)


def test_the_installed_tool_says_its_version(shared: Path, wheel: Path, tmp_path: Path) -> None:
    cli_venv = venv_with(shared, wheel, "cli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    done = run(cli_venv / "bin" / "sqs-redriver", "--version", cwd=tmp_path)

    assert done.stdout == f"sqs-redriver {project['version']}\n"


def test_the_cdk_extra_imports_the_construct_from_the_venv(cdk_venv: Path, user_dir: Path) -> None:
    found = where_from(cdk_venv, "sqs_redriver.cdk", "sqs_redriver.runtime", cwd=user_dir)

    site_packages = Path(found["site_packages"])
    assert site_packages.is_relative_to(cdk_venv)
    assert {name: Path(origin).is_relative_to(site_packages) for name, origin in found["found"].items()} == {
        "sqs_redriver.cdk": True,
        "sqs_redriver.runtime": True,
    }


# --- a user's CDK app, with the construct from the venv ----------------------------------------------


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


def test_the_redrive_functions_asset_is_the_runtime_the_core_and_the_protocol_as_the_repository_has_them(
    template: dict[str, Any], assembly: Path
) -> None:
    [function] = [f for f in resources(template, "AWS::Lambda::Function") if f["Handler"] == HANDLER]
    code = asset_dir(assembly, function["Code"]["S3Key"])

    assert files_of(code) == repository_sources("runtime", "core", "protocol")


def test_the_kit_layer_is_the_kit_and_the_protocol_under_python_as_the_repository_has_them(
    template: dict[str, Any], assembly: Path
) -> None:
    [layer] = resources(template, "AWS::Lambda::LayerVersion")
    content = asset_dir(assembly, layer["Content"]["S3Key"])

    assert {path.name for path in content.iterdir()} == {"python"}
    assert files_of(content / "python") == repository_sources("kit", "protocol")
