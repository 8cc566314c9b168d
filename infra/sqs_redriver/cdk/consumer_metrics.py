"""What judging consumers by their CloudWatch metrics takes at deploy (``queue_metrics``): the
re-drive function's read of metrics, and the name of each source queue's consumer function.

The read is ``cloudwatch:GetMetricData``, which supports no resource-level permissions, so its
statement is on ``*``: it lives in a policy of its own, whose cdk-nag acknowledgment covers that
statement alone. The consumer functions reach the re-drive function as ``CONSUMER_FUNCTION_NAMES``,
one entry per source queue in ``SOURCE_QUEUE_URL``'s order, filled in by ``grant_consumer``.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Fn, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sqs_redriver.cdk.functions import acknowledge
from sqs_redriver.protocol.settings import RESOURCE_ENV, URL_SEPARATOR

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
