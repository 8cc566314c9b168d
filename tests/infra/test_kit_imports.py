"""The kit layer imports where a consumer runs: in an interpreter that has only the layer, Powertools
and boto3 (what Lambda's runtime and the Powertools layer give), on every Python of KIT_RUNTIMES
this machine has; it loads the re-driver's protocol modules, never its runtime or the CDK."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from sqs_redriver.cdk.consumer import KIT_RUNTIMES, consumer_kit_code
from tests.support.templates import asset_dir

# What Lambda gives a consumer besides its layers (boto3) and what the Powertools layer holds.
RUNTIME_DISTRIBUTIONS = ("aws-lambda-powertools", "boto3")
# Top-level names that must not be loaded: the CDK and the operator's tool's libraries.
FOREIGN_PACKAGES = ("aws_cdk", "jsii", "constructs", "infra", "typer", "rich")
# The parts of sqs_redriver a consumer may load: the kit and the protocol it shares with the
# re-driver (never the re-driver's runtime, the construct or the operator's tool).
KIT_PARTS = ("kit", "protocol")

IMPORT_THE_KIT = """
import json, sys
import sqs_redriver.kit
from sqs_redriver.kit import ConsumerKit, TerminalError, fingerprint
from sqs_redriver.kit import aws, classify, config, consumer, errors, records
from sqs_redriver.protocol import redact
try:
    import aws_cdk
    cdk = True
except ImportError:
    cdk = False
print(json.dumps({"modules": sorted(sys.modules), "cdk_importable": cdk}))
"""


def distribution_closure(names: tuple[str, ...]) -> set[str]:
    """The installed distributions ``names`` need, themselves included (extras left out)."""
    seen: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(key)
        pending += [re.match(r"[A-Za-z0-9._-]+", r)[0] for r in requires if "extra ==" not in r]  # type: ignore[index]
    return seen


def top_level_paths(distribution: str) -> set[Path]:
    """The packages and modules ``distribution`` installed, as paths."""
    dist = metadata.distribution(distribution)
    tops = set()
    for file in dist.files or []:
        first = file.parts[0]
        if first.endswith((".dist-info", ".egg-info")) or first in ("..", "__pycache__"):
            continue
        tops.add(Path(str(dist.locate_file(first))))
    return tops


@pytest.fixture(scope="module")
def runtime_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only Powertools, boto3 and what they need (links to the installed copies)."""
    site = tmp_path_factory.mktemp("site")
    for distribution in distribution_closure(RUNTIME_DISTRIBUTIONS):
        for path in top_level_paths(distribution):
            (site / path.name).symlink_to(path)
    return site


@pytest.fixture(scope="module")
def kit_layer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The kit layer's /opt/python, as synth bundles it."""
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "KitOnly")
    layer = lambda_.LayerVersion(stack, "Layer", code=consumer_kit_code())
    app.synth()
    return asset_dir(outdir, Template.from_stack(stack), layer) / "python"


def interpreters() -> Iterator[tuple[str, str | None]]:
    """(runtime name, an interpreter of that Python on this machine or None) for each KIT_RUNTIME."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for runtime in KIT_RUNTIMES:
        version = runtime.name.removeprefix("python")
        if version == f"{sys.version_info.major}.{sys.version_info.minor}":
            yield runtime.name, sys.executable
            continue
        found = sorted(pyenv.glob(f"{version}.*/bin/python"), reverse=True)
        yield runtime.name, str(found[0]) if found else None


@pytest.mark.parametrize(("runtime", "python"), list(interpreters()), ids=[r.name for r in KIT_RUNTIMES])
def test_the_kit_imports_with_only_powertools_and_boto3(
    runtime: str, python: str | None, runtime_site: Path, kit_layer: Path, tmp_path: Path
) -> None:
    if python is None:
        pytest.skip(f"no {runtime} interpreter on this machine")

    # WHEN the kit is imported by an interpreter with no site-packages, no other environment and no
    # bytecode written next to the linked packages, that sees only the layer and the runtime site
    # (on PYTHONPATH, as Lambda's runtime puts /opt/python there), from an empty folder
    result = subprocess.run(
        [python, "-S", "-B", "-c", IMPORT_THE_KIT],
        env={"PYTHONPATH": os.pathsep.join((str(kit_layer), str(runtime_site)))},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    # THEN it imports, without the CDK (which that interpreter cannot even see) or the re-driver's runtime
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["cdk_importable"] is False
    loaded = set(report["modules"])
    assert {m for m in loaded if m.partition(".")[0] in FOREIGN_PACKAGES} == set()
    parts = {m.split(".")[1] for m in loaded if m.startswith("sqs_redriver.")}
    assert parts == set(KIT_PARTS)
    # boto3: on its first call
    assert {"sqs_redriver.kit.consumer", "aws_lambda_powertools", "botocore"} <= loaded
