#!/usr/bin/env python3
"""CDK entry point: the default re-driver stack, checked by cdk-nag."""

import json
import os
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import Validations
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from sqs_redriver.cdk.settings import RedriverSettings
from sqs_redriver.cdk.stack import RedriverStack

CDK_JSON = Path(__file__).resolve().parent / "cdk.json"
STACK_NAME = "SqsSmartRedriver"


def build_app(outdir: str | None = None, context: dict[str, Any] | None = None) -> cdk.App:
    """The app. cdk.json's context is read here too, so `python app.py` synthesizes what `cdk synth`
    does; the CLI's own context (and `-c` options) still take precedence over it."""
    defaults = json.loads(CDK_JSON.read_text())["context"]
    app = cdk.App(
        outdir=outdir or os.environ.get("CDK_OUTDIR", "cdk.out"), context={**defaults, **(context or {})}
    )
    RedriverStack(app, STACK_NAME, settings=RedriverSettings.from_app_context(app.node))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app))
    return app


if __name__ == "__main__":
    build_app().synth()
