"""What a consumer function needs to run the consumer kit: its environment's names, and its layer.

The layer holds ``python/redriver_kit/`` (the kit) and ``python/redriver/`` (the whole re-driver
package: the kit imports its protocol modules, ``redriver.model.*`` and ``redriver.sqs_limits``, and
taking the package whole keeps the layer right when the kit imports one more). It is built with a
local bundler that copies the packages from wherever they are imported (``functions.package_code``),
so synth needs no Docker and works from an installed package; one layer per stack is shared by
every ``SqsRedriver.grant_consumer`` in it.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

# The consumer's environment, as the kit reads it.
from redriver_kit.config import ENV_DLQ_URL, ENV_MAX_RECEIVE_COUNT, ENV_TABLE_NAME

from .functions import RUNTIME, package_code

__all__ = ["ENV_DLQ_URL", "ENV_MAX_RECEIVE_COUNT", "ENV_TABLE_NAME", "consumer_kit_layer"]

KIT_PACKAGE = "redriver_kit"
PROTOCOL_PACKAGE = "redriver"
LAYER_ID = "RedriverConsumerKitLayer"
# Where Lambda's Python runtime finds a layer's modules: /opt/python.
LAYER_PREFIX = "python"


def consumer_kit_code(source_dir: Path | None = None) -> lambda_.AssetCode:
    """The layer's content: the kit and the re-driver package, from where they are imported
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
        compatible_runtimes=[RUNTIME],
        compatible_architectures=[lambda_.Architecture.ARM_64],
        description="SQS smart re-driver: the consumer kit (redriver_kit) and its protocol (redriver)",
        # Code only, no data; Lambda keeps a deleted version's copy for the functions still using it.
        removal_policy=RemovalPolicy.DESTROY,
    )
    return layer
