"""The audit trail's log group: kept for ``audit_retention`` (a period CloudWatch Logs offers),
named in the deployment output, and its latest actions on the dashboard."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.cdk.storage import RETENTION_DAYS
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from tests.support.stacks import queue_pair, small_stack
from tests.support.templates import logical_id


@pytest.fixture(scope="module")
def synthesized() -> tuple[SqsRedriver, Template]:
    stack, source, dlq = small_stack()
    redriver = SqsRedriver(
        stack, "Redriver", source_queue=source, dead_letter_queue=dlq, audit_retention=cdk.Duration.days(90)
    )
    return redriver, Template.from_stack(stack)


def test_the_log_group_keeps_the_actions_for_the_retention_given(
    synthesized: tuple[SqsRedriver, Template],
) -> None:
    redriver, template = synthesized
    template.has_resource(
        "AWS::Logs::LogGroup",
        {"Properties": {"RetentionInDays": 90}, "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"},
    )
    assert logical_id(redriver.audit_log).startswith("RedriverAuditLog")


def test_the_deployment_output_names_the_audit_log_group(synthesized: tuple[SqsRedriver, Template]) -> None:
    redriver, template = synthesized
    outputs = [
        o for o in template.to_json()["Outputs"].values() if o.get("Description") == OUTPUT_DESCRIPTION
    ]
    document = json.dumps(outputs[0]["Value"])
    assert logical_id(redriver.audit_log) in document and "audit_log_group" in document


def test_the_dashboard_lists_the_latest_operator_actions(synthesized: tuple[SqsRedriver, Template]) -> None:
    redriver, template = synthesized
    body = json.dumps(template.find_resources("AWS::CloudWatch::Dashboard"))
    assert "Operator actions (latest first)" in body
    assert "dedup id" in body and logical_id(redriver.audit_log) in body


@pytest.mark.parametrize("days", [0.5, 2, 10, 366, 5000])
def test_a_retention_cloudwatch_logs_does_not_offer_fails_at_synth_naming_the_setting(days: float) -> None:
    stack, source, dlq = small_stack()
    with pytest.raises(SettingsError, match=r"audit_retention: .* one of 1, 3, 5, 7, 14, .* 3653 days"):
        SqsRedriver(
            stack,
            "Redriver",
            source_queue=source,
            dead_letter_queue=dlq,
            audit_retention=cdk.Duration.hours(days * 24),
        )


def test_every_offered_retention_is_accepted() -> None:
    stack = cdk.Stack(cdk.App(), "Retentions")
    for days in RETENTION_DAYS:
        source, dlq = queue_pair(stack, str(days))
        SqsRedriver(
            stack,
            f"Redriver{days}",
            source_queue=source,
            dead_letter_queue=dlq,
            audit_retention=cdk.Duration.days(days),
            monitoring=False,
        )
    retained = Template.from_stack(stack).find_resources("AWS::Logs::LogGroup", Match.any_value())
    assert {r["Properties"]["RetentionInDays"] for r in retained.values()} >= set(RETENTION_DAYS)
