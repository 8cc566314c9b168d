"""The consumer kit's examples, run exactly as printed: the README's short one and
docs/consumer-kit.md's, each a consumer against moto and the CDK wiring (the event source, the
grant) against a re-driver, its source queue and a consumer function."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match, Template

from local_aws.events import LambdaContext, sqs_event
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.protocol.settings import ENV_MAX_RECEIVE_COUNT
from tests.support.aws import Aws, mark_of
from tests.support.kit import kit_environment, receive, send

ROOT = Path(__file__).resolve().parents[2]
# Each page, and the heading of its kit section (which ends at the next heading of its level or higher).
KIT_SECTIONS = {
    "README.md": "### Adopt the consumer kit",
    "docs/consumer-kit.md": "## Let your consumer speak: the consumer kit",
}
MODULE = "readme_consumer"
pages = pytest.mark.parametrize("page", sorted(KIT_SECTIONS))


def section(text: str, heading: str) -> str:
    """The lines of ``text`` from the line ``heading`` to the next heading of its level or higher
    (a line in a fenced block is no heading)."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines(keepends=True)
    start = lines.index(heading + "\n")
    fenced = False
    for end in range(start + 1, len(lines)):
        fenced ^= lines[end].startswith("```")
        if not fenced and re.match(rf"#{{1,{level}}} ", lines[end]):
            return "".join(lines[start:end])
    return "".join(lines[start:])


def kit_section_blocks(page: str) -> list[str]:
    """The fenced python blocks of ``page``'s consumer kit section, in order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found = section(text, KIT_SECTIONS[page])
    return re.findall(r"^```python\n(.*?)^```$", found, flags=re.DOTALL | re.MULTILINE)


def block_with(page: str, marker: str) -> str:
    [block] = [b for b in kit_section_blocks(page) if marker in b]
    return block


def run_block(page: str, block: str, namespace: dict[str, Any]) -> dict[str, Any]:
    exec(compile(block, f"{page} ({MODULE})", "exec"), namespace)
    return namespace


@pages
def test_the_kit_section_has_the_consumer_and_the_cdk_wiring_and_nothing_else(page: str) -> None:
    blocks = kit_section_blocks(page)

    assert len(blocks) == 2
    assert "def lambda_handler(event, context):" in blocks[0]
    assert "report_batch_item_failures=True" in blocks[1]
    assert blocks[1].rstrip().splitlines()[-1].startswith("redriver.grant_consumer(orders_consumer)")


@pages
def test_the_printed_consumer_dead_letters_an_invalid_order_and_fulfils_the_other(
    page: str, aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the environment grant_consumer sets, and one valid and one invalid order in the queue
    for name, value in kit_environment(aws).items():
        monkeypatch.setenv(name, value)
    send(aws, json.dumps({"id": "o-1", "lines": [{"sku": "tea", "quantity": 1}]}))
    send(aws, json.dumps({"id": "o-2", "lines": []}))
    event = sqs_event(receive(aws), aws.source_arn)

    # WHEN the page's consumer, as printed, handles the batch
    consumer = run_block(page, block_with(page, "def lambda_handler"), {"__name__": MODULE})
    response = consumer["lambda_handler"](event, LambdaContext())

    # THEN no record is failed, and the invalid order is in the DLQ with the reason in its mark
    assert response == {"batchItemFailures": []}
    [dead] = aws.sqs.receive_message(QueueUrl=aws.dlq_url, MessageAttributeNames=["All"])["Messages"]
    assert json.loads(dead["Body"])["id"] == "o-2"
    mark = mark_of(dead)
    assert mark.failure is not None
    assert (mark.failure.error_class, mark.failure.message) == (
        f"{MODULE}.InvalidOrder",
        "order 'o-2' has no lines",
    )


def printed_wiring(page: str, block: str) -> cdk.Stack:
    """Run ``block`` against a re-driver, its source queue and a consumer function, under the names
    the page uses; their stack."""
    stack = cdk.Stack(cdk.App(), "Readme")
    dlq = sqs.Queue(stack, "Dlq", retention_period=cdk.Duration.days(14))
    orders_queue = sqs.Queue(
        stack, "Orders", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=4)
    )
    redriver = SqsRedriver(stack, "Redriver", source_queue=orders_queue, dead_letter_queue=dlq)
    orders_consumer = lambda_.Function(
        stack,
        "OrdersConsumer",
        runtime=lambda_.Runtime.PYTHON_3_12,
        architecture=lambda_.Architecture.X86_64,
        handler="consumer.lambda_handler",
        code=lambda_.Code.from_inline("def lambda_handler(event, context): pass"),
    )
    names = {"redriver": redriver, "orders_consumer": orders_consumer, "orders_queue": orders_queue}
    run_block(page, block, names)
    return stack


@pages
def test_the_printed_wiring_gives_the_consumer_its_configuration_and_an_event_source_that_reports(
    page: str,
) -> None:
    # GIVEN a re-driver, its source queue and a consumer function, under the names the page uses
    # WHEN the page's wiring runs as printed
    stack = printed_wiring(page, block_with(page, "grant_consumer"))

    # THEN the consumer has the kit's configuration and both layers, its event source reports batch
    # item failures, and synth has nothing to warn about
    template = Template.from_stack(stack)
    [function] = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": "consumer.lambda_handler"}}
    ).values()
    assert function["Properties"]["Environment"]["Variables"][ENV_MAX_RECEIVE_COUNT] == "4"
    assert len(function["Properties"]["Layers"]) == 2
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping", {"FunctionResponseTypes": ["ReportBatchItemFailures"]}
    )
    Annotations.from_stack(stack).has_no_warning("*", Match.string_like_regexp("grant_consumer"))


@pages
def test_the_printed_wiring_without_report_batch_item_failures_fails_synth(page: str) -> None:
    printed = block_with(page, "grant_consumer")
    forgotten = printed.replace(", report_batch_item_failures=True", "")
    assert forgotten != printed
    stack = printed_wiring(page, forgotten)

    with pytest.raises(RuntimeError, match="does not report batch item failures: set report_batch_item"):
        Template.from_stack(stack)
