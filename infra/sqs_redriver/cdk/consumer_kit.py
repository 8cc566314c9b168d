"""What a consumer function needs to run the consumer kit: its environment's names, and its layers.

The layer holds ``python/sqs_redriver/kit/`` (the kit) and ``python/sqs_redriver/protocol/`` (what the
kit and the re-driver agree on; the kit imports nothing else of the re-driver). It is built with a
local bundler that copies the packages from wherever they are imported (``functions.package_code``),
so synth needs no Docker and works from an installed package; one layer per stack is shared by
every ``SqsRedriver.grant_consumer`` in it. The kit is pure Python: the layer is declared for every
Python runtime Lambda and Powertools both support (KIT_RUNTIMES), on both architectures.

The kit imports Powertools, so the consumer also gets the public Powertools layer of the release
the re-driver runs (POWERTOOLS_RELEASE) for its own runtime and architecture, read from its public
SSM parameter at deploy time, as the re-driver's is; unless it already has a Powertools layer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from aws_cdk import Annotations, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from sqs_redriver.cdk.functions import POWERTOOLS_RELEASE, package_code, powertools_layer_parameter
from sqs_redriver.cdk.settings import SettingsError

__all__ = [
    "KIT_RUNTIMES",
    "add_consumer_layers",
    "consumer_kit_layer",
]

KIT_PACKAGE = "sqs_redriver.kit"
PROTOCOL_PACKAGE = "sqs_redriver.protocol"
LAYER_ID = "RedriverConsumerKitLayer"
# Where Lambda's Python runtime finds a layer's modules: /opt/python.
LAYER_PREFIX = "python"
# The Python runtimes Lambda supports (not deprecated in the CDK) and Powertools POWERTOOLS_RELEASE
# supports (requires-python >= 3.10, a public layer for each); a test keeps this list in step with
# the CDK's runtimes.
KIT_RUNTIMES = (
    lambda_.Runtime.PYTHON_3_10,
    lambda_.Runtime.PYTHON_3_11,
    lambda_.Runtime.PYTHON_3_12,
    lambda_.Runtime.PYTHON_3_13,
    lambda_.Runtime.PYTHON_3_14,
)
KIT_ARCHITECTURES = (lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64)
# Lambda's limit on a function's layers.
MAX_LAYERS = 5
# What names a Powertools for AWS Lambda (Python) layer: its public SSM parameters and layer names.
POWERTOOLS_LAYER_MARKS = ("/aws/service/powertools/python/", "AWSLambdaPowertoolsPython")


def consumer_kit_code(source_dir: Path | None = None) -> lambda_.AssetCode:
    """The layer's content: the kit and the protocol, from where they are imported
    (lambdas/ in the repository, site-packages when installed) or from ``source_dir``.

    Hashed by its output, so the layer changes only when the copied files do, not when a consumer's
    handler next to them does.
    """
    return package_code((KIT_PACKAGE, PROTOCOL_PACKAGE), prefix=LAYER_PREFIX, source_dir=source_dir)


def consumer_kit_layer(scope: Construct) -> lambda_.LayerVersion:
    """The consumer kit layer of ``scope``'s stack, created on first use.

    One per stack: every re-driver and consumer of the stack shares it, and a consumer in another
    stack gets its own stack's layer rather than a cross-stack reference to a layer version.
    """
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(LAYER_ID)
    if isinstance(existing, lambda_.LayerVersion):
        return existing
    layer = lambda_.LayerVersion(
        stack,
        LAYER_ID,
        code=consumer_kit_code(),
        compatible_runtimes=list(KIT_RUNTIMES),
        compatible_architectures=list(KIT_ARCHITECTURES),
        description="SQS smart re-driver: the consumer kit (sqs_redriver.kit) and its protocol (redriver)",
        # Code only, no data; Lambda keeps a deleted version's copy for the functions still using it.
        removal_policy=RemovalPolicy.DESTROY,
    )
    return layer


def add_consumer_layers(function: lambda_.Function) -> None:
    """Give ``function`` what the kit imports: the stack's kit layer and, unless it already has a
    Powertools layer, the public Powertools layer for its runtime and architecture. A container
    image takes no layers: a synth note says what to install into it instead.

    Raises SettingsError, saying what to do, for a runtime the kit does not run on (not Python, a
    Python older than the oldest of KIT_RUNTIMES) or a function whose layers would then exceed
    Lambda's five.
    """
    runtime = function.runtime
    if runtime.runtime_equals(lambda_.Runtime.FROM_IMAGE):
        Annotations.of(function).add_info(
            f"grant_consumer: {function.node.path} runs a container image, which takes no layers: "
            f"install sqs-smart-redriver[kit] and aws-lambda-powertools=={POWERTOOLS_RELEASE} into it"
        )
        return
    supported = ", ".join(r.name for r in KIT_RUNTIMES)
    if not any(runtime.runtime_equals(r) for r in KIT_RUNTIMES):
        raise SettingsError(
            f"grant_consumer: {function.node.path} runs {runtime.name}, and the consumer kit (with "
            f"Powertools {POWERTOOLS_RELEASE}, which it imports) runs on {supported}: give the function "
            "one of these runtimes, or a container image with the kit installed"
        )
    cfn = function.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction), "a Function's default child is its CfnFunction"
    current = Stack.of(function).resolve(cfn.layers) or []
    needs_powertools = not any(mark in json.dumps(current) for mark in POWERTOOLS_LAYER_MARKS)
    needed = "the kit and Powertools" if needs_powertools else "the kit"
    if len(current) + 1 + needs_powertools > MAX_LAYERS:
        raise SettingsError(
            f"grant_consumer: {function.node.path} has {len(current)} layers, and the consumer kit needs "
            f"{1 + needs_powertools} more ({needed}), over Lambda's limit of {MAX_LAYERS}: merge some "
            "of its layers, or give it fewer"
        )
    function.add_layers(consumer_kit_layer(function))
    if needs_powertools:
        function.add_layers(consumer_powertools_layer(function))


def consumer_powertools_layer(function: lambda_.Function) -> lambda_.ILayerVersion:
    """The public Powertools layer of POWERTOOLS_RELEASE for ``function``'s runtime and architecture,
    one per stack and combination, read from its public SSM parameter by a dynamic reference."""
    stack = Stack.of(function)
    runtime, architecture = function.runtime, function.architecture
    tag = f"{runtime.name}{architecture.name}".replace(".", "").replace("_", "").title()
    construct_id = f"ConsumerPowertoolsLayer{tag}"
    existing = stack.node.try_find_child(construct_id)
    if existing is not None:
        # The layer made below on first use; a jsii interface cannot be isinstance-checked.
        return cast(lambda_.ILayerVersion, existing)
    arn = ssm.StringParameter.from_string_parameter_attributes(
        stack,
        f"ConsumerPowertoolsParameter{tag}",
        parameter_name=powertools_layer_parameter(runtime=runtime, architecture=architecture),
        force_dynamic_reference=True,
    ).string_value
    return lambda_.LayerVersion.from_layer_version_arn(stack, construct_id, arn)
