"""grant_consumer and the consumer kit layer: what a consumer may do, what it is told, what it loads."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match, Template

from app import STACK_NAME, build_app
from local_aws import LAMBDAS_DIR
from sqs_redriver.cdk.access import CONSUMER_ATTRIBUTES
from sqs_redriver.cdk.consumer import KIT_PACKAGE, KIT_RUNTIMES, PROTOCOL_PACKAGE, consumer_kit_code
from sqs_redriver.cdk.functions import package_path
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.cdk.stack import RedriverStack
from sqs_redriver.protocol.settings import ENV_DLQ_URL, ENV_MAX_RECEIVE_COUNT, ENV_TABLE_NAME
from tests.support.stacks import (
    consumer_function,
    function_environment,
    queue_pair,
    redriver_environment,
    small_stack,
)
from tests.support.templates import as_list, asset_dir, logical_id, properties, role_statements, statements_on


def kit_leading_keys(dlq: str) -> dict[str, Any]:
    """The kit's records of the re-driver of the DLQ ``dlq`` (a logical id) alone."""
    scoped = [{"Fn::Join": ["", [prefix, {"Ref": dlq}, "#*"]]} for prefix in ("VERDICTS#", "FAILURE#")]
    return {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": scoped}}


@pytest.fixture(scope="module")
def assembly_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cdk.out")


@pytest.fixture(scope="module")
def stack(assembly_dir: Path) -> Iterator[RedriverStack]:
    app = build_app(outdir=str(assembly_dir))
    found = app.node.find_child(STACK_NAME)
    assert isinstance(found, RedriverStack)
    app.synth()  # writes the bundled assets to assembly_dir
    yield found


@pytest.fixture(scope="module")
def template(stack: RedriverStack) -> Template:
    return Template.from_stack(stack)


def consumer_statements(template: Template, stack: RedriverStack) -> list[dict[str, Any]]:
    return role_statements(template, properties(template, stack.consumer))


# --- the default stack's consumer -------------------------------------------------------------


def test_consumer_may_only_send_to_the_dlq_among_the_redrivers_queues(
    template: Template, stack: RedriverStack
) -> None:
    statements = consumer_statements(template, stack)
    dlq, parking_lot = logical_id(stack.dead_letter_queue), logical_id(stack.redriver.parking_lot)

    assert statements_on(statements, dlq) == [
        {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": {"Fn::GetAtt": [dlq, "Arn"]}}
    ]
    assert statements_on(statements, parking_lot) == []
    assert not [s for s in statements if any(a.startswith("kms:") for a in as_list(s["Action"]))]


def test_consumer_may_only_update_verdict_and_failure_records_in_the_state_table(
    template: Template, stack: RedriverStack
) -> None:
    table = logical_id(stack.redriver.state_table)

    assert statements_on(consumer_statements(template, stack), table) == [
        {
            "Action": "dynamodb:UpdateItem",
            "Condition": {
                **kit_leading_keys(logical_id(stack.dead_letter_queue)),
                "ForAllValues:StringEquals": {"dynamodb:Attributes": list(CONSUMER_ATTRIBUTES)},
                "StringEqualsIfExists": {"dynamodb:ReturnValues": ["NONE"]},
            },
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [table, "Arn"]},
        }
    ]


def test_consumer_environment_names_the_dlq_the_table_and_the_max_receive_count(
    template: Template, stack: RedriverStack
) -> None:
    environment = properties(template, stack.consumer)["Environment"]["Variables"]

    assert {name: environment.get(name) for name in (ENV_DLQ_URL, ENV_TABLE_NAME, ENV_MAX_RECEIVE_COUNT)} == {
        "REDRIVER_DLQ_URL": {"Ref": logical_id(stack.dead_letter_queue)},
        "REDRIVER_TABLE_NAME": {"Ref": logical_id(stack.redriver.state_table)},
        "REDRIVER_MAX_RECEIVE_COUNT": "5",
    }


def test_consumer_loads_the_kit_layer_declared_for_every_kit_runtime_on_both_architectures(
    template: Template, stack: RedriverStack
) -> None:
    layer = stack.redriver.consumer_kit_layer

    assert {"Ref": logical_id(layer)} in properties(template, stack.consumer)["Layers"]
    assert properties(template, layer)["CompatibleRuntimes"] == [r.name for r in KIT_RUNTIMES]
    assert properties(template, layer)["CompatibleArchitectures"] == ["arm64", "x86_64"]


def test_the_default_stacks_consumer_is_wired_with_nothing_to_warn_about(stack: RedriverStack) -> None:
    # its event source, added after grant_consumer, reports batch item failures
    Annotations.from_stack(stack).has_no_warning("*", Match.string_like_regexp("grant_consumer"))


def test_redriver_waits_for_verdicts_once_a_consumer_is_granted(
    template: Template, stack: RedriverStack
) -> None:
    assert properties(template, stack.redriver.function)["Environment"]["Variables"]["CONSUMER_VERDICTS"] == (
        "true"
    )


def test_bundled_layer_holds_the_kit_and_the_protocol_under_python_without_bytecode(
    template: Template, stack: RedriverStack, assembly_dir: Path
) -> None:
    bundle = asset_dir(assembly_dir, template, stack.redriver.consumer_kit_layer)
    assert (bundle / "python/sqs_redriver/protocol/envelope.py").is_file()
    assert (bundle / "python/sqs_redriver/kit/consumer.py").is_file()
    assert (bundle / "python/sqs_redriver/protocol/limits.py").is_file()
    assert {p.name for p in bundle.iterdir()} == {"python"}
    assert {p.name for p in (bundle / "python").iterdir()} == {"sqs_redriver"}
    assert {p.name for p in (bundle / "python/sqs_redriver").iterdir()} == {"kit", "protocol"}
    assert [p for p in bundle.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc"] == []


# --- the layer's content, from a source folder that has the kit ------------------------------


def test_layer_bundles_the_kit_and_the_protocol_package_and_leaves_caches_out(tmp_path: Path) -> None:
    # GIVEN a source folder with a kit and the real protocol package, both with bytecode caches
    source = tmp_path / "src"
    kit, protocol = source / package_path(KIT_PACKAGE), source / package_path(PROTOCOL_PACKAGE)
    shutil.copytree(LAMBDAS_DIR / package_path(PROTOCOL_PACKAGE), protocol)
    (kit / "__pycache__").mkdir(parents=True)
    (kit / "__init__.py").write_text("from sqs_redriver.protocol import envelope\n")
    (kit / "config.py").write_text("ENV_DLQ_URL = 'REDRIVER_DLQ_URL'\n")
    (kit / "__pycache__" / "config.cpython-314.pyc").write_bytes(b"\0")
    (protocol / "__pycache__").mkdir(exist_ok=True)
    (protocol / "__pycache__" / "stale.pyc").write_bytes(b"\0")
    (source / "consumer").mkdir()
    (source / "consumer" / "handler.py").write_text("")
    app = cdk.App(outdir=str(tmp_path / "cdk.out"))
    stack = cdk.Stack(app, "Kit")
    layer = lambda_.LayerVersion(stack, "Layer", code=consumer_kit_code(source))

    # WHEN
    app.synth()

    # THEN
    bundle = asset_dir(tmp_path / "cdk.out", Template.from_stack(stack), layer)
    files = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    assert {"python/sqs_redriver/kit/__init__.py", "python/sqs_redriver/kit/config.py"} <= files
    assert "python/sqs_redriver/protocol/envelope.py" in files
    assert {"/".join(f.split("/")[1:3]) for f in files} == {"sqs_redriver/kit", "sqs_redriver/protocol"}
    assert [f for f in files if "__pycache__" in f or f.endswith(".pyc")] == []


@pytest.mark.parametrize("missing", [KIT_PACKAGE, PROTOCOL_PACKAGE])
def test_a_source_folder_without_either_package_fails_at_synth(tmp_path: Path, missing: str) -> None:
    for package in {KIT_PACKAGE, PROTOCOL_PACKAGE} - {missing}:
        (tmp_path / package_path(package)).mkdir(parents=True)
        (tmp_path / package_path(package) / "__init__.py").write_text("")
    with pytest.raises(FileNotFoundError, match=f"no {missing} package"):
        consumer_kit_code(tmp_path)


def test_one_kit_layer_per_stack_and_a_consumer_in_another_stack_gets_its_own(tmp_path: Path) -> None:
    # GIVEN two re-drivers in one stack, and a consumer in a second stack
    app = cdk.App(outdir=str(tmp_path))
    stack, source, dlq = small_stack(app)
    other_source, other_dlq = queue_pair(stack, "Other")
    first = SqsRedriver(stack, "First", source_queue=source, dead_letter_queue=dlq)
    second = SqsRedriver(stack, "Second", source_queue=other_source, dead_letter_queue=other_dlq)
    consumers = cdk.Stack(app, "Consumers")
    consumer = consumer_function(consumers)

    # WHEN
    first.grant_consumer(consumer)

    # THEN
    assert first.consumer_kit_layer is second.consumer_kit_layer
    assert list(Template.from_stack(stack).find_resources("AWS::Lambda::LayerVersion")) == [
        logical_id(first.consumer_kit_layer)
    ]
    [own_layer] = Template.from_stack(consumers).find_resources("AWS::Lambda::LayerVersion")
    assert properties(Template.from_stack(consumers), consumer)["Layers"][0] == {"Ref": own_layer}


# --- configuration and refusals --------------------------------------------------------------


def test_without_a_granted_consumer_the_redriver_does_not_wait_for_verdicts() -> None:
    stack, source, dlq = small_stack()
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)

    assert redriver_environment(stack, redriver)["CONSUMER_VERDICTS"] == "false"


def test_grant_consumer_overrides_consumer_verdicts_false_in_the_settings() -> None:
    stack, source, dlq = small_stack()
    settings = RedriverSettings(consumer_verdicts=False)
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq, settings=settings)

    redriver.grant_consumer(consumer_function(stack))

    assert redriver_environment(stack, redriver)["CONSUMER_VERDICTS"] == "true"


def test_max_receive_count_comes_from_the_named_source_of_a_shared_dlq() -> None:
    stack, orders, dlq = small_stack()
    payments = sqs.Queue(
        stack, "Payments", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=8)
    )
    redriver = SqsRedriver(
        stack, "Redriver", source_queue=orders, other_source_queues=[payments], dead_letter_queue=dlq
    )
    orders_consumer, payments_consumer = consumer_function(stack, "Orders"), consumer_function(stack, "Pay")

    redriver.grant_consumer(orders_consumer)
    redriver.grant_consumer(payments_consumer, queue=payments)

    assert function_environment(stack, orders_consumer)[ENV_MAX_RECEIVE_COUNT] == "3"
    assert function_environment(stack, payments_consumer)[ENV_MAX_RECEIVE_COUNT] == "8"


def imported_redriver() -> tuple[cdk.Stack, SqsRedriver]:
    """A re-driver attached to queues imported by ARN: no RedrivePolicy visible at synth."""
    stack = cdk.Stack(cdk.App(), "Existing", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    redriver = SqsRedriver.from_queue_arns(
        stack,
        "Redriver",
        source_queue_arn="arn:aws:sqs:eu-west-1:123456789012:payments",
        dead_letter_queue_arn="arn:aws:sqs:eu-west-1:123456789012:payments-dlq",
    )
    return stack, redriver


def test_grant_on_imported_queues_without_max_receive_count_fails_naming_it() -> None:
    stack, redriver = imported_redriver()

    with pytest.raises(SettingsError, match=r"max_receive_count is required .* an integer from 1 to 1000"):
        redriver.grant_consumer(consumer_function(stack))


def test_grant_on_imported_queues_takes_the_given_max_receive_count_and_sends_to_the_dlq_by_arn() -> None:
    stack, redriver = imported_redriver()
    consumer = consumer_function(stack)

    redriver.grant_consumer(consumer, max_receive_count=7)

    template = Template.from_stack(stack)
    assert function_environment(stack, consumer)[ENV_MAX_RECEIVE_COUNT] == "7"
    assert {
        "Action": "sqs:SendMessage",
        "Effect": "Allow",
        "Resource": "arn:aws:sqs:eu-west-1:123456789012:payments-dlq",
    } in role_statements(template, properties(template, consumer))


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (4, r"max_receive_count \(4\) contradicts the queue's RedrivePolicy maxReceiveCount \(3\)"),
        (0, "max_receive_count must be an integer from 1 to 1000, got 0"),
        (1001, "max_receive_count must be an integer from 1 to 1000, got 1001"),
    ],
)
def test_a_max_receive_count_that_cannot_be_right_fails_at_synth(given: int, message: str) -> None:
    stack, source, dlq = small_stack()
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)

    with pytest.raises(SettingsError, match=message):
        redriver.grant_consumer(consumer_function(stack), max_receive_count=given)


def test_a_queue_that_is_not_a_source_fails_at_synth() -> None:
    stack, source, dlq = small_stack()
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)
    stranger = sqs.Queue(
        stack, "Stranger", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
    )

    with pytest.raises(SettingsError, match="queue must be this re-driver's source_queue"):
        redriver.grant_consumer(consumer_function(stack), queue=stranger)


def test_a_kms_encrypted_dlq_gives_the_consumer_its_key_too() -> None:
    stack = cdk.Stack(cdk.App(), "Kms")
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    dlq = sqs.Queue(
        stack,
        "Dlq",
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=key,
        retention_period=cdk.Duration.days(14),
    )
    source = sqs.Queue(stack, "Source", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3))
    redriver = SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq)
    consumer = consumer_function(stack)

    redriver.grant_consumer(consumer)

    template = Template.from_stack(stack)
    on_key = statements_on(role_statements(template, properties(template, consumer)), logical_id(key))
    key_actions = {a for s in on_key for a in as_list(s["Action"])}
    assert {"kms:Decrypt", "kms:GenerateDataKey"} <= key_actions and "kms:ReEncrypt*" not in key_actions
