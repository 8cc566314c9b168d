"""Stacks for the construct's tests: a bare source queue and DLQ with a stand-in consumer, or
queues and a consumer that pass cdk-nag, in an app checked by both nag packs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import Validations
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks, ServerlessChecks
from constructs import Construct

from sqs_redriver.cdk.functions import RUNTIME, acknowledge, powertools_layer, python_function
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.storage import secure_queue
from tests.support.templates import properties

ACCOUNT, REGION = "123456789012", "eu-west-1"


def small_stack(app: cdk.App | None = None) -> tuple[cdk.Stack, sqs.Queue, sqs.Queue]:
    """A stack with a source queue (maxReceiveCount 3) and its DLQ."""
    stack = cdk.Stack(app or cdk.App(), "Small")
    return (stack, *queue_pair(stack))


def queue_pair(scope: Construct, suffix: str = "") -> tuple[sqs.Queue, sqs.Queue]:
    """A source queue (``Source<suffix>``, maxReceiveCount 3) and its DLQ (``Dlq<suffix>``, 14 days):
    one pair per re-driver, as the construct requires."""
    dlq = sqs.Queue(scope, f"Dlq{suffix}", retention_period=cdk.Duration.days(14))
    source = sqs.Queue(
        scope, f"Source{suffix}", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
    )
    return source, dlq


def wiring_findings(redriver: SqsRedriver) -> list[str]:
    """What synth reports of ``redriver``'s wiring (the validations on its node), without synthesizing."""
    return list(redriver.node.validate())


def consumer_function(scope: cdk.Stack, construct_id: str = "Consumer") -> lambda_.Function:
    """A consumer of inline code on the re-driver's runtime."""
    return lambda_.Function(
        scope,
        construct_id,
        runtime=RUNTIME,
        architecture=lambda_.Architecture.ARM_64,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
    )


def function_environment(stack: cdk.Stack, function: lambda_.Function) -> dict[str, Any]:
    variables: dict[str, Any] = properties(Template.from_stack(stack), function)["Environment"]["Variables"]
    return variables


def redriver_environment(stack: cdk.Stack, redriver: SqsRedriver) -> dict[str, Any]:
    return function_environment(stack, redriver.function)


def app_with_nag(outdir: Path) -> cdk.App:
    app = cdk.App(outdir=str(outdir))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app))
    return app


def nag_report(app: cdk.App) -> dict[str, Any]:
    """Synthesizes ``app`` (which raises on any unacknowledged finding) and returns the nag report."""
    assembly = app.synth()
    report: dict[str, Any] = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    return report


def assert_nag_clean(report: dict[str, Any]) -> None:
    plugins = {plugin["pluginName"]: plugin for plugin in report["pluginReports"]}
    assert set(plugins) == {"AwsSolutions", "Serverless"}
    for plugin in plugins.values():
        assert (plugin["conclusion"], plugin["violations"]) == ("success", [])
        for suppressed in plugin["suppressedViolations"]:
            assert len(suppressed["reason"]) > 40, suppressed["ruleName"]


def dead_letter_queue(scope: cdk.Stack, key: kms.IKey | None = None) -> sqs.Queue:
    dlq = secure_queue(scope, "Dlq", retention_period=cdk.Duration.days(14), encryption_key=key)
    acknowledge(
        dlq,
        "Serverless::Serverless-SQSRedrivePolicy",
        "The test's DLQ: the re-driver drains it, and its parking lot plays the role of its DLQ.",
    )
    return dlq


def source_queue(scope: cdk.Stack, dlq: sqs.IQueue) -> sqs.Queue:
    return secure_queue(
        scope, "Source", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
    )


def nag_clean_consumer(scope: cdk.Stack) -> lambda_.Function:
    """The example consumer's function, as cdk-nag accepts it."""
    function = python_function(
        scope,
        "Consumer",
        handler="consumer.handler.lambda_handler",
        environment={},
        timeout=cdk.Duration.seconds(30),
        memory_size=256,
        layer=powertools_layer(scope),
    )
    acknowledge(
        function,
        "Serverless::Serverless-LambdaDLQ",
        "The test's consumer would be invoked synchronously by an SQS event source mapping.",
    )
    return function
