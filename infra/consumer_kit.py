"""What a consumer function needs to run the consumer kit: its environment's names, and its layer.

The layer holds ``python/redriver_kit/`` (the kit) and ``python/redriver/`` (the whole re-driver
package: the kit imports its protocol modules, ``redriver.model.*`` and ``redriver.sqs_limits``, and
taking the package whole keeps the layer right when the kit imports one more). It is built with a
local bundler that copies the packages, so synth needs no Docker; one layer per stack is shared by
every ``SqsRedriver.grant_consumer`` in it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

# The consumer's environment, as the kit reads it.
from redriver_kit.config import ENV_DLQ_URL, ENV_MAX_RECEIVE_COUNT, ENV_TABLE_NAME

from . import LAMBDAS_DIR
from .functions import RUNTIME

__all__ = ["ENV_DLQ_URL", "ENV_MAX_RECEIVE_COUNT", "ENV_TABLE_NAME", "consumer_kit_layer"]

KIT_PACKAGE = "redriver_kit"
PROTOCOL_PACKAGE = "redriver"
LAYER_ID = "RedriverConsumerKitLayer"
_NOT_PACKAGED = ("__pycache__", "*.pyc")


@jsii.implements(ILocalBundling)
class _CopyPackages:
    """Copies ``packages`` of ``source_dir`` to ``python/<package>`` of the bundle, where Lambda's
    Python runtime finds a layer's modules (/opt/python); bytecode caches stay out."""

    def __init__(self, source_dir: Path, packages: tuple[str, ...]) -> None:
        self.source_dir = source_dir
        self.packages = packages

    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:
        # jsii passes the BundlingOptions positionally; copying needs none of them.
        python = Path(output_dir) / "python"
        for package in self.packages:
            shutil.copytree(
                self.source_dir / package,
                python / package,
                ignore=shutil.ignore_patterns(*_NOT_PACKAGED),
            )
        return True


def consumer_kit_code(source_dir: Path = LAMBDAS_DIR) -> lambda_.AssetCode:
    """The layer's content from ``source_dir``: the kit and the re-driver package.

    Hashed by its output, so the layer changes only when the copied files do, not when a consumer's
    handler next to them does.
    """
    packages = (KIT_PACKAGE, PROTOCOL_PACKAGE)
    for package in packages:
        if not (source_dir / package / "__init__.py").is_file():
            raise FileNotFoundError(f"no {package} package in {source_dir}")
    return lambda_.Code.from_asset(
        str(source_dir),
        asset_hash_type=AssetHashType.OUTPUT,
        exclude=[f"**/{pattern}" for pattern in _NOT_PACKAGED],
        bundling=BundlingOptions(
            # Never run: the local bundler always succeeds. Docker would only be the fallback.
            image=RUNTIME.bundling_image,
            local=_CopyPackages(source_dir, packages),
        ),
    )


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
