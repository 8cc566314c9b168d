"""The Powertools layer: the pinned release's, from its public SSM parameter, or an override."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from sqs_redriver.cdk.functions import (
    POWERTOOLS_LAYER_ACCOUNT,
    POWERTOOLS_RELEASE,
    powertools_layer_parameter,
)
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.cdk.stack import RedriverStack
from tests.support.stacks import queue_pair

ROOT = Path(__file__).resolve().parents[2]
PINNED_PARAMETER = f"/aws/service/powertools/python/arm64/python3.14/{POWERTOOLS_RELEASE}"


def redriver_stack(**layer: Any) -> tuple[cdk.Stack, SqsRedriver]:
    stack = cdk.Stack(cdk.App(), "Layered")
    source, dlq = queue_pair(stack)
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq, **layer)
    return stack, redriver


def function_layers(template: Template, handler: str) -> list[Any]:
    functions = template.find_resources("AWS::Lambda::Function", {"Properties": {"Handler": handler}})
    [(_, function)] = functions.items()
    return list(function["Properties"]["Layers"])


def test_the_layers_release_is_the_installed_powertools() -> None:
    # requirements-dev.txt pins the release the tests run; the functions must run the same one.
    assert version("aws-lambda-powertools") == POWERTOOLS_RELEASE


@pytest.mark.parametrize("requirements", ["requirements-dev.txt", "bench/runtime-requirements.txt"])
def test_every_pin_of_powertools_is_the_layers_release(requirements: str) -> None:
    lines = (ROOT / requirements).read_text().splitlines()
    pins = [line.split("==")[1].strip() for line in lines if line.startswith("aws-lambda-powertools")]

    assert pins == [POWERTOOLS_RELEASE]


def test_the_parameter_names_the_architecture_the_runtime_and_the_release() -> None:
    assert powertools_layer_parameter() == PINNED_PARAMETER
    assert powertools_layer_parameter("3.40.1") == "/aws/service/powertools/python/arm64/python3.14/3.40.1"


def test_both_functions_of_the_default_stack_resolve_the_pinned_parameter_at_deploy_time() -> None:
    stack = RedriverStack(cdk.App(), "Default", settings=RedriverSettings())
    template = Template.from_stack(stack)
    dynamic_reference = f"{{{{resolve:ssm:{PINNED_PARAMETER}}}}}"

    assert function_layers(template, "sqs_redriver.runtime.handler.lambda_handler") == [dynamic_reference]
    assert function_layers(template, "consumer.handler.lambda_handler")[0] == dynamic_reference
    # a dynamic reference, not a template Parameter that every deployment would have to carry
    assert set(template.to_json().get("Parameters", {})) <= {"BootstrapVersion"}


def test_a_layer_version_builds_the_public_layers_arn_in_the_stacks_partition_and_region() -> None:
    stack, _ = redriver_stack(powertools_layer_version=79)

    [layer] = function_layers(Template.from_stack(stack), "sqs_redriver.runtime.handler.lambda_handler")

    assert layer == {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":lambda:",
                {"Ref": "AWS::Region"},
                f":{POWERTOOLS_LAYER_ACCOUNT}:layer:AWSLambdaPowertoolsPythonV3-python314-arm64:79",
            ],
        ]
    }


def test_a_layer_arn_is_used_as_given() -> None:
    arn = "arn:aws-cn:lambda:cn-north-1:123456789012:layer:OurPowertools:3"
    stack, redriver = redriver_stack(powertools_layer_arn=arn)

    assert function_layers(Template.from_stack(stack), "sqs_redriver.runtime.handler.lambda_handler") == [arn]
    assert redriver.powertools_layer.layer_version_arn == arn


def test_a_layer_version_and_a_layer_arn_together_fail_naming_both() -> None:
    with pytest.raises(SettingsError, match="powertools_layer_version and powertools_layer_arn both given"):
        redriver_stack(powertools_layer_version=79, powertools_layer_arn="arn:aws:lambda:::layer:x:1")


@pytest.mark.parametrize("bad", [0, -3, True])
def test_a_layer_version_that_is_no_version_fails_naming_it(bad: int) -> None:
    with pytest.raises(SettingsError, match="powertools_layer_version must be a positive integer"):
        redriver_stack(powertools_layer_version=bad)
