"""grant_consumer's layers: the kit on every runtime it runs on, Powertools for the consumer's own
runtime and architecture, and a sentence saying what to do where it cannot."""

from __future__ import annotations

import inspect
import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from sqs_redriver.cdk.consumer import KIT_RUNTIMES
from sqs_redriver.cdk.functions import POWERTOOLS_RELEASE, powertools_layer
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import SettingsError
from tests.support.stacks import small_stack
from tests.support.templates import logical_id, properties


def python_consumer(
    stack: cdk.Stack,
    runtime: lambda_.Runtime,
    architecture: lambda_.Architecture,
    construct_id: str = "Consumer",
    **props: Any,
) -> lambda_.Function:
    return lambda_.Function(
        stack,
        construct_id,
        runtime=runtime,
        architecture=architecture,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
        **props,
    )


def granted(
    *consumers: tuple[lambda_.Runtime, lambda_.Architecture],
) -> tuple[cdk.Stack, SqsRedriver, list[Any]]:
    """A re-driver whose consumers (one per runtime and architecture given) are granted; their
    synthesized layers."""
    stack, source, dlq = small_stack()
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)
    functions = [
        python_consumer(stack, runtime, architecture, f"Consumer{index}")
        for index, (runtime, architecture) in enumerate(consumers)
    ]
    for function in functions:
        redriver.grant_consumer(function)
    template = Template.from_stack(stack)
    return stack, redriver, [properties(template, function)["Layers"] for function in functions]


def powertools_reference(architecture: str, runtime: str) -> str:
    return f"{{{{resolve:ssm:/aws/service/powertools/python/{architecture}/{runtime}/{POWERTOOLS_RELEASE}}}}}"


@pytest.mark.parametrize(
    ("runtime", "architecture"),
    [
        (lambda_.Runtime.PYTHON_3_12, lambda_.Architecture.X86_64),
        (lambda_.Runtime.PYTHON_3_13, lambda_.Architecture.ARM_64),
    ],
    ids=["python3.12-x86_64", "python3.13-arm64"],
)
def test_a_consumer_on_another_runtime_and_architecture_gets_the_kit_and_its_own_powertools(
    runtime: lambda_.Runtime, architecture: lambda_.Architecture
) -> None:
    # WHEN a consumer on neither the re-driver's runtime nor (for the first) its architecture is granted
    _, redriver, [layers] = granted((runtime, architecture))

    # THEN it synthesizes, with the kit layer and the pinned Powertools release for its own combination
    assert layers == [
        {"Ref": logical_id(redriver.consumer_kit_layer)},
        powertools_reference(architecture.name, runtime.name),
    ]


def test_consumers_of_one_combination_share_one_powertools_reference_and_others_get_theirs() -> None:
    x86 = (lambda_.Runtime.PYTHON_3_12, lambda_.Architecture.X86_64)
    arm = (lambda_.Runtime.PYTHON_3_12, lambda_.Architecture.ARM_64)

    _, _, [first, second, third] = granted(x86, x86, arm)

    assert first[1] == second[1] == powertools_reference("x86_64", "python3.12")
    assert third[1] == powertools_reference("arm64", "python3.12")


def test_a_consumer_that_already_has_a_powertools_layer_keeps_it_and_gets_no_second_one() -> None:
    stack, source, dlq = small_stack()
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)
    consumer = python_consumer(
        stack, lambda_.Runtime.PYTHON_3_14, lambda_.Architecture.ARM_64, layers=[redriver.powertools_layer]
    )

    redriver.grant_consumer(consumer)

    assert properties(Template.from_stack(stack), consumer)["Layers"] == [
        powertools_reference("arm64", "python3.14"),
        {"Ref": logical_id(redriver.consumer_kit_layer)},
    ]


def test_a_consumer_with_a_powertools_layer_given_by_version_keeps_it() -> None:
    stack, source, dlq = small_stack()
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)
    own = powertools_layer(cdk.Stack(cdk.App(), "Elsewhere"), version=79)
    consumer = python_consumer(stack, lambda_.Runtime.PYTHON_3_14, lambda_.Architecture.ARM_64, layers=[own])

    redriver.grant_consumer(consumer)

    layers = properties(Template.from_stack(stack), consumer)["Layers"]
    assert len(layers) == 2 and "AWSLambdaPowertoolsPythonV3" in json.dumps(layers[0])


@pytest.mark.parametrize(
    ("runtime", "says"),
    [
        (lambda_.Runtime.PYTHON_3_9, "runs python3.9, and the consumer kit .* runs on python3.10, "),
        (lambda_.Runtime.NODEJS_22_X, "runs nodejs22.x, and the consumer kit"),
    ],
)
def test_a_runtime_the_kit_does_not_run_on_fails_at_synth_saying_which_do(
    runtime: lambda_.Runtime, says: str
) -> None:
    stack, source, dlq = small_stack()
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)
    consumer = python_consumer(stack, runtime, lambda_.Architecture.ARM_64)

    with pytest.raises(SettingsError, match=f"grant_consumer: Small/Consumer {says}.*give the function"):
        redriver.grant_consumer(consumer)


def test_a_consumer_with_no_room_for_the_kits_layers_fails_at_synth_saying_so() -> None:
    stack, source, dlq = small_stack()
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)
    own = [
        lambda_.LayerVersion.from_layer_version_arn(
            stack, f"Own{n}", f"arn:aws:lambda:eu-west-1:1:layer:own{n}:1"
        )
        for n in range(4)
    ]
    consumer = python_consumer(stack, lambda_.Runtime.PYTHON_3_12, lambda_.Architecture.ARM_64, layers=own)

    with pytest.raises(SettingsError, match="has 4 layers, and the consumer kit needs 2 more .* limit of 5"):
        redriver.grant_consumer(consumer)


def test_kit_runtimes_are_every_python_runtime_the_cdk_does_not_call_deprecated_from_3_10() -> None:
    # A new CDK release with a new Python runtime fails this test until KIT_RUNTIMES (and the
    # README) name it; one AWS Lambda deprecates is dropped the same way.
    documented = {
        name: inspect.getdoc(vars(lambda_.Runtime)[name].fget) or ""  # the class property's own doc
        for name in vars(lambda_.Runtime)
        if name.startswith("PYTHON_3_")
    }
    current = {
        getattr(lambda_.Runtime, name).name
        for name, doc in documented.items()
        if "deprecated" not in doc.lower() and int(name.removeprefix("PYTHON_3_")) >= 10
    }

    assert {r.name for r in KIT_RUNTIMES} == current
