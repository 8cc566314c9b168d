"""Stand-ins for the Lambda service: run deployed handlers in-process, fed like AWS feeds them.

moto cannot invoke Lambda functions without Docker, so the real handler modules are imported with
the environment the deployed function has, and invoked here: by an SQS event-source emulator
(ReceiveMessage -> SQS event -> handler -> delete the successes) and by a schedule emulator.
"""

from __future__ import annotations

import functools
import importlib
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import IO, Any

from local_aws import LAMBDAS_DIR
from local_aws.cloudformation import FunctionConfig
from local_aws.environment import environment
from local_aws.events import LambdaContext, scheduled_event, sqs_event
from sqs_redriver.core.table import Resume


class InProcessFunction:
    """A deployed function's handler, imported under its configured environment."""

    def __init__(self, config: FunctionConfig, log: IO[str]) -> None:
        self.config = config
        self.log = log
        module_name, _, attribute = config.handler.rpartition(".")
        # Logger handlers bind to stdout at import: import with stdout sent to the log.
        with environment(config.environment), redirect_stdout(log):
            _forget_function_code()
            module = importlib.import_module(module_name)
        self.module = module
        self._handler: Callable[[dict[str, Any], LambdaContext], Any] = getattr(module, attribute)

    def reconfigure(self, config: FunctionConfig) -> None:
        """The function's configuration changed: later invocations run under the new one (what the
        handler reads per invocation sees it; what it read at import stays, as in a warm environment)."""
        self.config = config

    def invoke(self, event: dict[str, Any]) -> Any:
        context = LambdaContext(self.config.name, self.config.timeout_seconds)
        with environment(self.config.environment), redirect_stdout(self.log):
            return self._handler(event, context)


# What an event source saw of one batch: the messages it received, and the ids of those that failed.
DeliveryObserver = Callable[[list[dict[str, Any]], set[str]], None]


def wait_with(redriver: InProcessFunction, sleep: Callable[[float], None]) -> None:
    """Make the re-driver's waits (a probe waiting for the canary's verdict, slow start waiting for
    the trial's verdicts) call the ``sleep`` given here instead of ``time.sleep``.

    In AWS the consumer runs in its own execution environments while a re-driver run waits; here
    both share one thread, so the run's waits must let the event source poll, or no verdict could
    ever come. The handler composes its re-driver on the first invocation with
    ``sqs_redriver.runtime.wiring.compose_redriver``; its ``sleep`` is the seam (tests use it the same way).
    Call this before the first invocation.
    """
    namespace = vars(redriver.module)  # KeyError: the handler no longer composes its re-driver so
    namespace["compose_redriver"] = functools.partial(namespace["compose_redriver"], sleep=sleep)


def _forget_function_code() -> None:
    """Make the next import of a handler load its code and layers (lambdas/) anew, as a fresh
    execution environment does, so what they read from the environment at import is the function's
    own: the synth imports the consumer kit (its Logger would have no service name), and each
    function's Powertools objects are created under its own POWERTOOLS_* variables. Modules already
    imported keep working: the handlers import nothing of lambdas/ lazily."""
    root = str(LAMBDAS_DIR)
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(root):
            del sys.modules[name]


class SqsEventSource:
    """One poll of an SQS event source mapping with ReportBatchItemFailures."""

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        queue_arn: str,
        function: InProcessFunction,
        batch_size: int,
        on_delivery: DeliveryObserver = lambda messages, failed: None,
    ):
        self._sqs = sqs
        self._queue_url = queue_url
        self._queue_arn = queue_arn
        self._function = function
        self._batch_size = batch_size
        self._on_delivery = on_delivery
        self.invocation_errors = 0

    def poll(self) -> int:
        """Receive one batch and hand it to the function; return how many messages it received."""
        messages = self._sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=min(self._batch_size, 10),
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            return 0
        try:
            response = self._function.invoke(sqs_event(messages, self._queue_arn))
        except Exception as error:  # noqa: BLE001 - to Lambda, any error fails the whole invocation
            # The batch stays; each message becomes visible again after its visibility timeout.
            self.invocation_errors += 1
            causes = [repr(cause[1]) for cause in getattr(error, "child_exceptions", [])] or [repr(error)]
            print(
                f"invocation of {self._function.config.name} failed: {'; '.join(causes)}",
                file=self._function.log,
            )
            self._on_delivery(messages, {m["MessageId"] for m in messages})
            return len(messages)
        failed = {failure["itemIdentifier"] for failure in response.get("batchItemFailures", [])}
        self._on_delivery(messages, failed)
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self._sqs.delete_message_batch(
                QueueUrl=self._queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
        return len(messages)


class Schedule:
    """EventBridge's schedule rule: a Scheduled Event to the function every ``every_seconds``; and
    Lambda's queue of the asynchronous invocations the function makes of itself (continuations),
    which go first."""

    def __init__(self, function: InProcessFunction, every_seconds: float, rule_name: str = "demo-schedule"):
        self._function = function
        self._every = every_seconds
        self._rule_name = rule_name
        self._next = time.monotonic()
        self._continuations: list[dict[str, Any]] = []
        # The handler starts a continuation with adapters.continuation.start_continuation.
        vars(function.module)["start_continuation"] = self._queue_continuation

    def _queue_continuation(self, client: Any, function_name: str, resume: Resume) -> None:
        self._continuations.append(resume.to_event())

    def fire_if_due(self) -> Any | None:
        """Invoke the function with a queued continuation, or when the next tick is due; return
        its result, or None."""
        if self._continuations:
            return self._function.invoke(self._continuations.pop(0))
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + self._every
        return self._function.invoke(scheduled_event(rule_name=self._rule_name))
