"""grant_consumer checks at synth how its consumer is wired: an SQS event source on the guarded
queue that does not report batch item failures fails ``cdk synth`` with the setting to change,
wherever and whenever it was added; a consumer the app does not show (no event source found, an
imported function, an ECS task) gets a warning saying what could not be checked or set."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from aws_cdk import cx_api
from aws_cdk.assertions import Template

from sqs_redriver.cdk.consumer import NOT_CONFIGURED, UNSEEN_EVENT_SOURCE
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.protocol.settings import ENV_DLQ_URL, ENV_MAX_RECEIVE_COUNT, ENV_TABLE_NAME
from tests.support.stacks import consumer_function
from tests.support.templates import logical_id, properties, role_statements

SET_IT = r"set report_batch_item_failures=True on its SqsEventSource"
KIT_ENVIRONMENT = [ENV_DLQ_URL, ENV_TABLE_NAME, ENV_MAX_RECEIVE_COUNT]


@dataclass
class Guarded:
    """A stack with a source queue (maxReceiveCount 3), its DLQ and their re-driver."""

    stack: cdk.Stack
    source: sqs.Queue
    redriver: SqsRedriver

    @classmethod
    def in_app(cls, app: cdk.App, name: str) -> Guarded:
        stack = cdk.Stack(app, name)
        dlq = sqs.Queue(stack, "Dlq", retention_period=cdk.Duration.days(14))
        source = sqs.Queue(
            stack, "Source", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3)
        )
        return cls(stack, source, SqsRedriver(stack, "Redriver", source_queue=source, dead_letter_queue=dlq))


@dataclass
class Built:
    """The scenes' app, synthesized once: each scene's stack, consumer and what grant_consumer returned."""

    guarded: dict[str, Guarded]
    consumers: dict[str, Any]
    returned: dict[str, dict[str, str]]
    assembly: cx_api.CloudAssembly

    def template(self, scene: str) -> Template:
        return Template.from_json(self._artifact(scene).template)

    def messages(self, scene: str, level: cx_api.SynthesisMessageLevel) -> list[str]:
        """The texts of the scene's synth messages of ``level`` (warnings, notes)."""
        return [str(m.entry.data) for m in self._artifact(scene).messages if m.level == level]

    def warnings(self, scene: str) -> list[str]:
        return self.messages(scene, cx_api.SynthesisMessageLevel.WARNING)

    def _artifact(self, scene: str) -> cx_api.CloudFormationStackArtifact:
        return self.assembly.get_stack_artifact(self.guarded[scene].stack.artifact_id)


def reports(queue: sqs.IQueue) -> event_sources.SqsEventSource:
    return event_sources.SqsEventSource(queue, report_batch_item_failures=True)


@pytest.fixture(scope="module")
def built() -> Built:
    """One app, synthesized once, of consumers wired right or out of sight."""
    app = cdk.App()
    scenes: dict[str, Callable[[Guarded], tuple[Any, dict[str, str]]]] = {
        "later": _event_source_added_after_the_grant,
        "alias": _event_source_on_an_alias,
        "level1": _level1_mapping_elsewhere_in_the_app,
        "unseen": _no_event_source,
        "elsewhere": _event_source_on_another_queue,
        "task": _ecs_task,
        "imported": _imported_function,
        "image": _container_image_function,
    }
    guarded, consumers, returned = {}, {}, {}
    for name, scene in scenes.items():
        guarded[name] = Guarded.in_app(app, name.title())
        consumers[name], returned[name] = scene(guarded[name])
    return Built(guarded, consumers, returned, app.synth())


def _event_source_added_after_the_grant(g: Guarded) -> tuple[Any, dict[str, str]]:
    consumer = consumer_function(g.stack)
    returned = g.redriver.grant_consumer(consumer)
    consumer.add_event_source(reports(g.source))
    return consumer, returned


def _event_source_on_an_alias(g: Guarded) -> tuple[Any, dict[str, str]]:
    consumer = consumer_function(g.stack)
    returned = g.redriver.grant_consumer(consumer)
    lambda_.Alias(g.stack, "Live", alias_name="live", version=consumer.current_version).add_event_source(
        reports(g.source)
    )
    return consumer, returned


def _level1_mapping_elsewhere_in_the_app(g: Guarded) -> tuple[Any, dict[str, str]]:
    consumer = consumer_function(g.stack)
    returned = g.redriver.grant_consumer(consumer)
    lambda_.CfnEventSourceMapping(
        cdk.Stack(g.stack.node.scope, "Wiring"),  # type: ignore[arg-type]
        "Mapping",
        function_name=consumer.function_name,
        event_source_arn=g.source.queue_arn,
        function_response_types=["ReportBatchItemFailures"],
    )
    return consumer, returned


def _no_event_source(g: Guarded) -> tuple[Any, dict[str, str]]:
    consumer = consumer_function(g.stack)
    return consumer, g.redriver.grant_consumer(consumer)


def _event_source_on_another_queue(g: Guarded) -> tuple[Any, dict[str, str]]:
    consumer = consumer_function(g.stack)
    returned = g.redriver.grant_consumer(consumer)
    consumer.add_event_source(reports(sqs.Queue(g.stack, "Audit")))
    return consumer, returned


def _ecs_task(g: Guarded) -> tuple[Any, dict[str, str]]:
    task = ecs.FargateTaskDefinition(g.stack, "Task")
    returned = g.redriver.grant_consumer(task.task_role)
    task.add_container(
        "Consumer", image=ecs.ContainerImage.from_registry("orders-consumer"), environment=returned
    )
    return task, returned


def _imported_function(g: Guarded) -> tuple[Any, dict[str, str]]:
    role = iam.Role.from_role_arn(g.stack, "OrdersRole", "arn:aws:iam::123456789012:role/orders")
    consumer = lambda_.Function.from_function_attributes(
        g.stack, "Orders", function_arn="arn:aws:lambda:eu-west-1:123456789012:function:orders", role=role
    )
    return consumer, g.redriver.grant_consumer(consumer)


def _container_image_function(g: Guarded) -> tuple[Any, dict[str, str]]:
    repository = ecr.Repository.from_repository_name(g.stack, "Repository", "orders-consumer")
    consumer = lambda_.DockerImageFunction(
        g.stack, "Consumer", code=lambda_.DockerImageCode.from_ecr(repository)
    )
    consumer.add_event_source(reports(g.source))
    return consumer, g.redriver.grant_consumer(consumer)


# --- an event source that does not report batch item failures ------------------------------------


def test_an_event_source_added_after_the_grant_without_reporting_fails_synth_saying_what_to_set() -> None:
    guarded = Guarded.in_app(cdk.App(), "Forgot")
    consumer = consumer_function(guarded.stack)
    guarded.redriver.grant_consumer(consumer)
    # the usual order: the grant, then the event source, without report_batch_item_failures
    consumer.add_event_source(event_sources.SqsEventSource(guarded.source, batch_size=10))
    # and a mapping of the raw resource, elsewhere in the app, on the same queue
    lambda_.CfnEventSourceMapping(
        guarded.stack,
        "RawMapping",
        function_name=consumer.function_arn,
        event_source_arn=guarded.source.queue_arn,
    )

    with pytest.raises(RuntimeError) as raised:
        Template.from_stack(guarded.stack)

    message = str(raised.value)
    assert "Validation failed" in message
    for mapping in ("Forgot/Consumer/SqsEventSource:ForgotSource", "Forgot/RawMapping"):
        assert mapping in message
    assert message.count("of Forgot/Consumer on Forgot/Source does not report batch item failures") == 2
    assert message.count(SET_IT) == 2
    assert "the failed messages are deleted instead of retried" in message


# --- wired right ------------------------------------------------------------------------------------


@pytest.mark.parametrize("scene", ["later", "alias", "level1", "image"])
def test_an_event_source_that_reports_batch_item_failures_passes_with_no_warning(
    built: Built, scene: str
) -> None:
    assert built.warnings(scene) == []


def test_a_container_image_function_gets_its_environment_no_layer_and_a_note_of_what_to_install(
    built: Built,
) -> None:
    found = properties(built.template("image"), built.consumers["image"])

    assert set(KIT_ENVIRONMENT) <= set(found["Environment"]["Variables"])
    assert "Layers" not in found
    [note] = built.messages("image", cx_api.SynthesisMessageLevel.INFO)
    assert note.startswith("grant_consumer: Image/Consumer runs a container image, which takes no layers")
    assert "install sqs-smart-redriver[kit] and aws-lambda-powertools==" in note


# --- what cannot be checked -------------------------------------------------------------------------


def test_a_function_with_no_event_source_in_the_app_gets_a_warning_saying_what_to_set(built: Built) -> None:
    [warning] = built.warnings("unseen")

    assert warning.startswith(
        "grant_consumer: no event source of Unseen/Consumer on Unseen/Source in this app"
    )
    assert "cannot be checked" in warning and SET_IT.replace("\\", "") in warning
    assert f"[ack: {UNSEEN_EVENT_SOURCE}]" in warning


def test_a_function_whose_event_sources_are_on_other_queues_gets_the_warning_too(built: Built) -> None:
    [warning] = built.warnings("elsewhere")

    assert "no event source of Elsewhere/Consumer on Elsewhere/Source" in warning
    assert "it has event sources on 1 other queue(s)" in warning


def test_an_ecs_task_gets_the_kits_permissions_and_a_warning_of_what_it_must_set_and_do(built: Built) -> None:
    task, template = built.consumers["task"], built.template("task")
    [warning] = built.warnings("task")

    assert warning.startswith("grant_consumer: Task/Task/TaskRole is not a lambda_.Function of this app")
    assert all(name in warning for name in KIT_ENVIRONMENT)
    assert (
        "how it consumes the queue cannot be checked: it must delete only the messages it processed"
        in warning
    )
    actions = {
        action
        for policy in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": logical_id(task.task_role)} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        for action in [statement["Action"]]
    }
    assert actions == {"sqs:SendMessage", "dynamodb:UpdateItem"}
    # what grant_consumer returned, as the task's container environment
    [container] = properties(template, task)["ContainerDefinitions"]
    assert sorted(variable["Name"] for variable in container["Environment"]) == sorted(KIT_ENVIRONMENT)


def test_an_imported_function_gets_both_warnings_and_the_redriver_waits_for_its_verdicts(
    built: Built,
) -> None:
    warnings = built.warnings("imported")
    function = built.guarded["imported"].redriver.function
    environment = properties(built.template("imported"), function)["Environment"]

    assert any(w.startswith("grant_consumer: Imported/Orders is not a lambda_.Function") for w in warnings)
    assert any("redriver.consumer_kit_layer" in w and f"[ack: {NOT_CONFIGURED}]" in w for w in warnings)
    assert any("no event source of Imported/Orders on Imported/Source" in w for w in warnings)
    assert environment["Variables"]["CONSUMER_VERDICTS"] == "true"
    assert environment["Variables"]["CONSUMER_FUNCTION_NAMES"] == "orders"


def test_grant_consumer_returns_the_kits_environment(built: Built) -> None:
    for returned in built.returned.values():
        assert list(returned) == KIT_ENVIRONMENT
        assert returned[ENV_MAX_RECEIVE_COUNT] == "3"


def test_a_function_of_the_app_is_given_what_grant_consumer_returns(built: Built) -> None:
    guarded, consumer = built.guarded["later"], built.consumers["later"]
    template = built.template("later")
    found = properties(template, consumer)

    assert any(s["Action"] == "sqs:SendMessage" for s in role_statements(template, found))
    assert {name: found["Environment"]["Variables"][name] for name in KIT_ENVIRONMENT} == {
        name: guarded.stack.resolve(value) for name, value in built.returned["later"].items()
    }


# --- what cannot be granted -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("consumer", "says"),
    [
        (
            iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            "ServicePrincipal cannot hold a policy: grant the role",
        ),
        ("orders-consumer", "function must be a lambda_.Function of this app .* got str"),
    ],
)
def test_a_consumer_iam_cannot_grant_to_fails_at_synth(consumer: Any, says: str) -> None:
    guarded = Guarded.in_app(cdk.App(), "Wrong")

    with pytest.raises(SettingsError, match=f"grant_consumer: {says}"):
        guarded.redriver.grant_consumer(consumer)
