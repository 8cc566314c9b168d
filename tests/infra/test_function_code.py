"""What each function's code asset holds: its own packages, copied from where they are imported."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from app import STACK_NAME, build_app
from sqs_redriver.cdk.functions import RUNTIME, package_code, package_folder, package_path, python_function
from sqs_redriver.cdk.stack import RedriverStack
from tests.support.templates import asset_dir, properties


@pytest.fixture(scope="module")
def assembly_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cdk.out")


@pytest.fixture(scope="module")
def stack(assembly_dir: Path) -> RedriverStack:
    app = build_app(outdir=str(assembly_dir))
    found = app.node.find_child(STACK_NAME)
    assert isinstance(found, RedriverStack)
    app.synth()  # writes the bundled assets to assembly_dir
    return found


@pytest.fixture(scope="module")
def template(stack: RedriverStack) -> Template:
    return Template.from_stack(stack)


def files_in(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_redrive_function_code_is_the_runtime_the_core_and_the_protocol_alone_without_bytecode(
    template: Template, stack: RedriverStack, assembly_dir: Path
) -> None:
    code = asset_dir(assembly_dir, template, stack.redriver.function)
    files = files_in(code)

    expected = {"sqs_redriver/runtime/handler.py", "sqs_redriver/core/table.py"}
    expected.add("sqs_redriver/protocol/settings.py")
    assert expected <= files
    assert {p.name for p in code.iterdir()} == {"sqs_redriver"}  # no consumer/
    assert {p.name for p in (code / "sqs_redriver").iterdir()} == {"runtime", "core", "protocol"}  # no kit/
    assert [f for f in files if "__pycache__" in f or f.endswith(".pyc")] == []


@pytest.mark.parametrize("package", ["sqs_redriver.runtime", "sqs_redriver.core", "sqs_redriver.protocol"])
def test_redrive_function_code_is_a_copy_of_the_imported_packages(
    template: Template, stack: RedriverStack, assembly_dir: Path, package: str
) -> None:
    source = package_folder(package)
    copied = asset_dir(assembly_dir, template, stack.redriver.function) / package_path(package)

    assert {f for f in files_in(source) if "__pycache__" not in f} == files_in(copied)
    assert (copied / "__init__.py").read_bytes() == (source / "__init__.py").read_bytes()


def test_example_consumer_code_is_its_own_package_and_the_kit_comes_from_the_layer(
    template: Template, stack: RedriverStack, assembly_dir: Path
) -> None:
    code = asset_dir(assembly_dir, template, stack.consumer)

    assert {"consumer/handler.py", "consumer/orders.py"} <= files_in(code)
    assert {p.name for p in code.iterdir()} == {"consumer"}
    assert len(properties(template, stack.consumer)["Layers"]) == 2  # Powertools, the consumer kit


def test_two_assets_of_the_same_package_laid_out_differently_stay_two(tmp_path: Path) -> None:
    # GIVEN the same package as a function's code and as a layer's (CDK caches bundles by source)
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Code")
    function_code = lambda_.Function(
        stack,
        "Function",
        runtime=RUNTIME,
        handler="sqs_redriver.runtime.handler.lambda_handler",
        code=package_code(("sqs_redriver.runtime",)),
    )
    layer = lambda_.LayerVersion(
        stack, "Layer", code=package_code(("sqs_redriver.runtime",), prefix="python")
    )

    # WHEN
    app.synth()

    # THEN
    template = Template.from_stack(stack)
    assert {p.name for p in asset_dir(tmp_path, template, function_code).iterdir()} == {"sqs_redriver"}
    assert {p.name for p in asset_dir(tmp_path, template, layer).iterdir()} == {"python"}


def test_a_function_without_packages_gets_its_handlers_package(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Default")
    layer = lambda_.LayerVersion.from_layer_version_arn(
        stack, "Layer", "arn:aws:lambda:eu-west-1:111122223333:layer:powertools:1"
    )
    function = python_function(
        stack,
        "Consumer",
        handler="consumer.handler.lambda_handler",
        environment={},
        timeout=cdk.Duration.seconds(30),
        memory_size=256,
        layer=layer,
    )

    app.synth()

    code = asset_dir(tmp_path, Template.from_stack(stack), function)
    assert {p.name for p in code.iterdir()} == {"consumer"}


def test_a_package_that_cannot_be_found_fails_at_synth_naming_it() -> None:
    with pytest.raises(FileNotFoundError, match="no no_such_package package"):
        package_code(("no_such_package",))
