"""What a consumer of a re-driver's source queue gets from ``SqsRedriver.grant_consumer``, besides
its permissions (access.py): the consumer kit's layers, the synth check of how it is wired to its
queue, and what judging it by its CloudWatch metrics takes.

The layers. The kit layer holds ``python/sqs_redriver/kit/`` (the kit) and
``python/sqs_redriver/protocol/`` (what the kit and the re-driver agree on; the kit imports nothing
else of the re-driver). It is built with a local bundler that copies the packages from wherever
they are imported (``functions.package_code``), so synth needs no Docker and works from an installed
package; one layer per stack is shared by every ``SqsRedriver.grant_consumer`` in it. The kit is
pure Python: the layer is declared for every Python runtime Lambda and Powertools both support
(KIT_RUNTIMES), on both architectures. The kit imports Powertools, so the consumer also gets the
public Powertools layer of the release the re-driver runs (POWERTOOLS_RELEASE) for its own runtime
and architecture, read from its public SSM parameter at deploy time, as the re-driver's is; unless
it already has a Powertools layer.

The wiring. A Lambda consumer's SQS event source on its queue must report batch item failures, and
what cannot be checked is said in a warning. Without ``ReportBatchItemFailures`` Lambda ignores the
``batchItemFailures`` the kit returns: a batch with a transient failure in it counts as a success,
and the failed messages are deleted instead of retried. Event sources are often added after
``grant_consumer`` (``add_event_source`` on the next line), so the check is a validation of the
consumer's node, which runs at synth when every event source mapping of the app exists: an
``EventSourceMapping`` (``SqsEventSource`` makes one) or a ``CfnEventSourceMapping`` anywhere in
the app, of the function, a version or an alias of it.

The metrics (``queue_metrics``): the re-drive function's read of metrics, and the name of each
source queue's consumer function. The read is ``cloudwatch:GetMetricData``, which supports no
resource-level permissions, so its statement is on ``*``: it lives in a policy of its own, whose
cdk-nag acknowledgment covers that statement alone. The consumer functions reach the re-drive
function as ``CONSUMER_FUNCTION_NAMES``, one entry per source queue in ``SOURCE_QUEUE_URL``'s
order, filled in by ``grant_consumer``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import jsii
from aws_cdk import Annotations, Fn, RemovalPolicy, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IValidation

from sqs_redriver.cdk.functions import (
    POWERTOOLS_RELEASE,
    acknowledge,
    package_code,
    powertools_layer_parameter,
)
from sqs_redriver.cdk.settings import SettingsError
from sqs_redriver.protocol.settings import RESOURCE_ENV, URL_SEPARATOR

# --- the consumer kit's layers --------------------------------------------------------------------

KIT_PACKAGE = "sqs_redriver.kit"
PROTOCOL_PACKAGE = "sqs_redriver.protocol"
LAYER_ID = "RedriverConsumerKitLayer"
# Where Lambda's Python runtime finds a layer's modules: /opt/python.
LAYER_PREFIX = "python"
# The Python runtimes Lambda supports (not deprecated in the CDK) and Powertools POWERTOOLS_RELEASE
# supports (requires-python >= 3.10, a public layer for each); a test keeps this list in step with
# the CDK's runtimes.
KIT_RUNTIMES = (
    lambda_.Runtime.PYTHON_3_10,
    lambda_.Runtime.PYTHON_3_11,
    lambda_.Runtime.PYTHON_3_12,
    lambda_.Runtime.PYTHON_3_13,
    lambda_.Runtime.PYTHON_3_14,
)
KIT_ARCHITECTURES = (lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64)
# Lambda's limit on a function's layers.
MAX_LAYERS = 5
# What names a Powertools for AWS Lambda (Python) layer: its public SSM parameters and layer names.
POWERTOOLS_LAYER_MARKS = ("/aws/service/powertools/python/", "AWSLambdaPowertoolsPython")


def consumer_kit_code(source_dir: Path | None = None) -> lambda_.AssetCode:
    """The layer's content: the kit and the protocol, from where they are imported
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
        compatible_runtimes=list(KIT_RUNTIMES),
        compatible_architectures=list(KIT_ARCHITECTURES),
        description="SQS smart re-driver: the consumer kit (sqs_redriver.kit) and its protocol (redriver)",
        # Code only, no data; Lambda keeps a deleted version's copy for the functions still using it.
        removal_policy=RemovalPolicy.DESTROY,
    )
    return layer


def add_consumer_layers(function: lambda_.Function) -> None:
    """Give ``function`` what the kit imports: the stack's kit layer and, unless it already has a
    Powertools layer, the public Powertools layer for its runtime and architecture. A container
    image takes no layers: a synth note says what to install into it instead.

    Raises SettingsError, saying what to do, for a runtime the kit does not run on (not Python, a
    Python older than the oldest of KIT_RUNTIMES) or a function whose layers would then exceed
    Lambda's five.
    """
    runtime = function.runtime
    if runtime.runtime_equals(lambda_.Runtime.FROM_IMAGE):
        Annotations.of(function).add_info(
            f"grant_consumer: {function.node.path} runs a container image, which takes no layers: "
            f"install sqs-smart-redriver[kit] and aws-lambda-powertools=={POWERTOOLS_RELEASE} into it"
        )
        return
    supported = ", ".join(r.name for r in KIT_RUNTIMES)
    if not any(runtime.runtime_equals(r) for r in KIT_RUNTIMES):
        raise SettingsError(
            f"grant_consumer: {function.node.path} runs {runtime.name}, and the consumer kit (with "
            f"Powertools {POWERTOOLS_RELEASE}, which it imports) runs on {supported}: give the function "
            "one of these runtimes, or a container image with the kit installed"
        )
    cfn = function.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction), "a Function's default child is its CfnFunction"
    current = Stack.of(function).resolve(cfn.layers) or []
    needs_powertools = not any(mark in json.dumps(current) for mark in POWERTOOLS_LAYER_MARKS)
    needed = "the kit and Powertools" if needs_powertools else "the kit"
    if len(current) + 1 + needs_powertools > MAX_LAYERS:
        raise SettingsError(
            f"grant_consumer: {function.node.path} has {len(current)} layers, and the consumer kit needs "
            f"{1 + needs_powertools} more ({needed}), over Lambda's limit of {MAX_LAYERS}: merge some "
            "of its layers, or give it fewer"
        )
    function.add_layers(consumer_kit_layer(function))
    if needs_powertools:
        function.add_layers(consumer_powertools_layer(function))


def consumer_powertools_layer(function: lambda_.Function) -> lambda_.ILayerVersion:
    """The public Powertools layer of POWERTOOLS_RELEASE for ``function``'s runtime and architecture,
    one per stack and combination, read from its public SSM parameter by a dynamic reference."""
    stack = Stack.of(function)
    runtime, architecture = function.runtime, function.architecture
    tag = f"{runtime.name}{architecture.name}".replace(".", "").replace("_", "").title()
    construct_id = f"ConsumerPowertoolsLayer{tag}"
    existing = stack.node.try_find_child(construct_id)
    if existing is not None:
        # The layer made below on first use; a jsii interface cannot be isinstance-checked.
        return cast(lambda_.ILayerVersion, existing)
    arn = ssm.StringParameter.from_string_parameter_attributes(
        stack,
        f"ConsumerPowertoolsParameter{tag}",
        parameter_name=powertools_layer_parameter(runtime=runtime, architecture=architecture),
        force_dynamic_reference=True,
    ).string_value
    return lambda_.LayerVersion.from_layer_version_arn(stack, construct_id, arn)


# --- the consumer's event source, checked at synth ------------------------------------------------

REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"
UNSEEN_EVENT_SOURCE = "sqs-redriver:consumer-event-source-unseen"
NOT_CONFIGURED = "sqs-redriver:consumer-not-configured"
SET_IT = (
    "set report_batch_item_failures=True on its SqsEventSource (function_response_types="
    f'["{REPORT_BATCH_ITEM_FAILURES}"] on an event source mapping; the check reads that property, '
    "not an add_property_override)"
)
WHY = (
    "without it, Lambda ignores the kit's batchItemFailures: a batch with a transient failure counts "
    "as a success and the failed messages are deleted instead of retried"
)


def is_function(consumer: object) -> bool:
    """Whether ``consumer`` is a Lambda function (``lambda_.IFunction``: a Function, an imported
    one, an alias or version; a jsii interface cannot be isinstance-checked)."""
    return all(hasattr(consumer, name) for name in ("function_name", "function_arn", "add_event_source"))


def check_event_source(function: lambda_.IFunction, queue: sqs.IQueue) -> None:
    """At synth, fail if ``function``'s SQS event source on ``queue`` does not report batch item
    failures; warn if the app has none to check."""
    function.node.add_validation(ReportsBatchItemFailures(function, queue))


def warn_not_configured(consumer: iam.IGrantable, scope: Construct, environment: dict[str, str]) -> None:
    """Say what ``grant_consumer`` could not do for a consumer that is not a function of this app:
    set its environment and layers and, for one that is no Lambda function, check its event source."""
    if is_function(consumer):
        install = "the kit (the layer redriver.consumer_kit_layer, or sqs-smart-redriver[kit] in its package)"
        unseen = ""
    else:
        install = "sqs-smart-redriver[kit] where it runs"
        unseen = (
            "; how it consumes the queue cannot be checked: it must delete only the messages it "
            "processed and leave a transient failure for SQS to deliver again"
        )
    Annotations.of(_annotated(consumer, scope)).add_warning_v2(
        NOT_CONFIGURED,
        f"grant_consumer: {_name(consumer)} is not a lambda_.Function of this app, so only its permissions "
        f"are granted: set {', '.join(environment)} on it (grant_consumer returns them) and give it "
        f"{install}{unseen}",
    )


@jsii.implements(IValidation)
class ReportsBatchItemFailures:
    """The validation ``check_event_source`` adds to a consumer function's node."""

    def __init__(self, function: lambda_.IFunction, queue: sqs.IQueue) -> None:
        self._function = function
        self._queue = queue

    def validate(self) -> list[str]:
        """One error per event source of the function on the queue that does not report batch item
        failures; none, and a warning, when the app has no event source of it on the queue."""
        constructs = self._function.node.root.node.find_all()
        targets = [self._function, *_aliases_of(self._function, constructs)]
        mappings = [
            m for m in constructs if isinstance(m, lambda_.CfnEventSourceMapping) and _targets_any(m, targets)
        ]
        on_queue = [m for m in mappings if _same(m, m.event_source_arn, self._queue.queue_arn, self._queue)]
        if not on_queue:
            self._warn_unseen(mappings)
            return []
        return [
            f"grant_consumer: the SQS event source {mapping.node.path} of {self._function.node.path} on "
            f"{self._queue.node.path} does not report batch item failures: {SET_IT}; {WHY}"
            for mapping in on_queue
            if not _reports_batch_item_failures(mapping)
        ]

    def _warn_unseen(self, mappings: list[lambda_.CfnEventSourceMapping]) -> None:
        others = f" (it has event sources on {len(mappings)} other queue(s) or streams)" if mappings else ""
        Annotations.of(self._function).add_warning_v2(
            UNSEEN_EVENT_SOURCE,
            f"grant_consumer: no event source of {self._function.node.path} on {self._queue.node.path} "
            f"in this app{others}, so whether it reports batch item failures cannot be checked: "
            f"wherever it is made, {SET_IT}; {WHY}",
        )


def _aliases_of(function: lambda_.IFunction, constructs: list[Any]) -> list[lambda_.Alias]:
    path = function.node.path
    return [c for c in constructs if isinstance(c, lambda_.Alias) and c.version.lambda_.node.path == path]


def _targets_any(mapping: lambda_.CfnEventSourceMapping, targets: list[Any]) -> bool:
    """Whether the mapping's FunctionName is one of ``targets`` (the function and its aliases): its
    name or ARN, or a version of it (``name:qualifier``)."""
    value = mapping.function_name
    return any(
        _same(mapping, value, own, target) or _qualifies(value, own)
        for target in targets
        for own in (target.function_name, target.function_arn)
    )


def _same(mapping: Construct, value: str | None, expected: str, holder: Construct) -> bool:
    """The same string (a token's is unique in the app), or, when ``holder`` (whose attribute
    ``expected`` is) is in the mapping's stack, the same once resolved there (a logical id names
    nothing outside its stack)."""
    if value is None:
        return False
    if value == expected:
        return True
    here = Stack.of(mapping)
    return here.node.path == Stack.of(holder).node.path and _resolved(here, value) == _resolved(
        here, expected
    )


def _qualifies(value: str, own: str) -> bool:
    """``value`` is ``own:qualifier`` (a version or an alias of a function), or embeds the token ``own``."""
    return value.startswith(f"{own}:") or (Token.is_unresolved(own) and own in value)


def _resolved(stack: Stack, value: str) -> str:
    return json.dumps(stack.resolve(value), sort_keys=True)


def _reports_batch_item_failures(mapping: lambda_.CfnEventSourceMapping) -> bool:
    types: Any = Stack.of(mapping).resolve(mapping.function_response_types) or []
    return REPORT_BATCH_ITEM_FAILURES in types


def _annotated(consumer: object, scope: Construct) -> Construct:
    """The construct a warning about ``consumer`` is attached to: itself when it is one."""
    return consumer if isinstance(consumer, Construct) else scope


def _name(consumer: object) -> str:
    return consumer.node.path if isinstance(consumer, Construct) else type(consumer).__name__


# --- judging consumers by their metrics -----------------------------------------------------------

METRIC_READ_ACTIONS = ("cloudwatch:GetMetricData",)
ENV_CONSUMER_FUNCTION_NAMES = RESOURCE_ENV["consumer_function_names"]


def grant_metric_reads(scope: Construct, function: lambda_.Function) -> iam.Policy:
    """``cloudwatch:GetMetricData`` on ``*`` for ``function``, in its own policy (``MetricsPolicy``
    of ``scope``), acknowledged in cdk-nag; the function is created after it."""
    role = function.role
    assert role is not None, "python_function gives every function a role"
    policy = iam.Policy(
        scope,
        "MetricsPolicy",
        roles=[role],
        statements=[iam.PolicyStatement(actions=list(METRIC_READ_ACTIONS), resources=["*"])],
    )
    function.node.add_dependency(policy)  # its first run must not find the read refused
    acknowledge(
        policy,
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        "cloudwatch:GetMetricData supports no resource-level permissions. The re-drive function "
        "reads the AWS/SQS and AWS/Lambda metrics of its source queues and their consumers, once "
        "per run; this policy holds that one statement, every other names its resource.",
    )
    return policy


class ConsumerFunctions:
    """The consumer function of each source queue, kept in the re-drive function's
    ``CONSUMER_FUNCTION_NAMES``.

    An entry stays empty (the queue's own metrics judge its consumer) when no consumer was granted
    for the queue, when several were (one function's metrics would not speak for the others), or
    when the consumer is in another stack and has no literal ``function_name``: a reference to it
    would make the stacks depend on each other (its stack already depends on this one).
    """

    def __init__(self, function: lambda_.Function, sources: Sequence[sqs.IQueue]) -> None:
        self._function = function
        self._sources = tuple(sources)
        self._consumers: list[list[lambda_.IFunction]] = [[] for _ in self._sources]

    def add(self, consumer: lambda_.IFunction, queue: sqs.IQueue) -> None:
        """Record ``consumer`` as a consumer of ``queue`` (one of the sources) and update the variable."""
        [index] = [index for index, source in enumerate(self._sources) if source is queue]
        if not any(known is consumer for known in self._consumers[index]):
            self._consumers[index].append(consumer)
        self._function.add_environment(ENV_CONSUMER_FUNCTION_NAMES, self.value())

    def value(self) -> str:
        """The variable's value: "" while no entry is known, else one entry per source."""
        names = [self._name(consumers) for consumers in self._consumers]
        return Fn.join(URL_SEPARATOR, names) if any(names) else ""

    def _name(self, consumers: list[lambda_.IFunction]) -> str:
        if len(consumers) != 1:
            return ""
        [consumer] = consumers
        if Stack.of(consumer) is Stack.of(self._function):
            return consumer.function_name
        physical = getattr(consumer.node.default_child, "function_name", None)
        return physical if isinstance(physical, str) and not Token.is_unresolved(physical) else ""
