#!/usr/bin/env python3
"""CDK entry point: the default re-driver stack, checked by cdk-nag."""

import os

import aws_cdk as cdk
from aws_cdk import Validations
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from infra.settings import CONTEXT_KEY, RedriverSettings
from infra.stack import RedriverStack


def build_app(outdir: str | None = None) -> cdk.App:
    app = cdk.App(outdir=outdir or os.environ.get("CDK_OUTDIR", "cdk.out"))
    settings = RedriverSettings.from_context(app.node.try_get_context(CONTEXT_KEY))
    RedriverStack(app, "SqsSmartRedriver", settings=settings)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app))
    return app


if __name__ == "__main__":
    build_app().synth()
