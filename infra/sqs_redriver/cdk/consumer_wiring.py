"""How ``grant_consumer``'s consumer is wired, checked at synth: a Lambda consumer's SQS event source
on its queue must report batch item failures, and what cannot be checked is said in a warning.

Without ``ReportBatchItemFailures`` Lambda ignores the ``batchItemFailures`` the kit returns: a
batch with a transient failure in it counts as a success, and the failed messages are deleted
instead of retried. Event sources are often added after ``grant_consumer`` (``add_event_source``
on the next line), so the check is a validation of the consumer's node, which runs at synth when
every event source mapping of the app exists: an ``EventSourceMapping`` (``SqsEventSource``
makes one) or a ``CfnEventSourceMapping`` anywhere in the app, of the function, a version or an
alias of it.
"""

from __future__ import annotations

import json
from typing import Any

import jsii
from aws_cdk import Annotations, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IValidation

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
