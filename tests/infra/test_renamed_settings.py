"""A setting renamed in this release, on the CDK side: the old construct prop or cdk.json key still
works, with a warning at synth; both names with different values are refused."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match, Template

from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError

ENV = cdk.Environment(account="123456789012", region="us-east-1")


def test_the_old_context_key_sets_the_new_setting() -> None:
    settings = RedriverSettings.from_context({"max_redrives": "7"})

    assert settings == RedriverSettings(max_redrive_count=7)
    assert [r.old_name for r in settings.renamed_used] == ["max_redrives"]
    assert settings.lambda_environment()["MAX_REDRIVE_COUNT"] == "7"
    assert "MAX_REDRIVES" not in settings.lambda_environment()


def test_the_old_prop_sets_the_new_setting() -> None:
    settings = RedriverSettings(max_redrives=3)

    assert settings.max_redrive_count == 3 and settings == RedriverSettings(max_redrive_count=3)


def test_both_context_keys_with_one_value_are_accepted() -> None:
    assert RedriverSettings.from_context({"max_redrives": 4, "max_redrive_count": 4}).max_redrive_count == 4


@pytest.mark.parametrize(
    "given",
    [
        lambda: RedriverSettings.from_context({"max_redrives": 4, "max_redrive_count": 6}),
        lambda: RedriverSettings(max_redrives=4, max_redrive_count=6),
    ],
    ids=["context", "props"],
)
def test_both_names_with_different_values_fail_naming_both(given: object) -> None:
    with pytest.raises(SettingsError, match="max_redrives and max_redrive_count are both set"):
        given()  # type: ignore[operator]


def test_an_old_prop_out_of_range_is_refused() -> None:
    with pytest.raises(SettingsError, match="max_redrive_count must be an integer from 1 to 50"):
        RedriverSettings(max_redrives=0)


def _synth(settings: RedriverSettings) -> cdk.Stack:
    stack = cdk.Stack(cdk.App(), "Renamed", env=ENV)
    dlq = sqs.Queue(stack, "Dlq", retention_period=cdk.Duration.days(14))
    source = sqs.Queue(stack, "Source", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3))
    SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq, settings=settings)
    return stack


def test_the_construct_warns_of_an_old_name_at_synth_and_sets_the_new_variable() -> None:
    stack = _synth(RedriverSettings.from_context({"max_redrives": 7}))

    renamed = "max_redrives is deprecated: it was renamed max_redrive_count"
    Annotations.from_stack(stack).has_warning("/Renamed/Redriver", Match.string_like_regexp(renamed))
    Template.from_stack(stack).has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": Match.object_like({"MAX_REDRIVE_COUNT": "7"})}},
    )


def test_the_construct_given_the_new_name_warns_of_nothing() -> None:
    stack = _synth(RedriverSettings(max_redrive_count=7))

    Annotations.from_stack(stack).has_no_warning("*", Match.string_like_regexp("deprecated"))
