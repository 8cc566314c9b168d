"""Act 1's stage: the demo stack deployed into moto, made ready for an act in real time.

The downstream outage goes into the consumer's configuration, as an operator would inject it (and
the operator's fix later goes the same way). moto would run the consumer's event source mapping
itself, by invoking the function in Docker on every send (and failing here): the mapping is turned
off and its emulator takes it over; both functions run in process (demo/emulators.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import boto3

from demo.emulators import DeliveryObserver, InProcessFunction, Schedule, SqsEventSource, wait_with
from local_aws.cloudformation import Deployment, FunctionConfig, read_deployment


@dataclass(frozen=True)
class Stage:
    deployment: Deployment  # as it is once the stage is set
    consumer: InProcessFunction
    redriver: InProcessFunction
    event_source: SqsEventSource  # feeds the consumer
    schedule: Schedule  # invokes the re-driver


def set_stage(
    deployment: Deployment,
    *,
    outage: tuple[float, float],
    tick_seconds: float,
    log: IO[str],
    sqs: Any,
    on_delivery: DeliveryObserver,
    while_redriver_waits: Callable[[float], None],
) -> Stage:
    """The outage (epoch seconds, from-to) injected, the functions in process, the event source
    reporting each batch to ``on_delivery``, the re-driver's waits calling ``while_redriver_waits``
    and one run per ``tick_seconds``."""
    _configure(deployment.consumer, DOWNSTREAM_OUTAGE_WINDOWS=f"{outage[0]:.3f}-{outage[1]:.3f}")
    boto3.client("lambda").update_event_source_mapping(UUID=deployment.consumer_mapping_id, Enabled=False)
    deployment = read_deployment(deployment.stack_name)  # as it is now
    consumer = InProcessFunction(deployment.consumer, log)
    redriver = InProcessFunction(deployment.redriver, log)
    event_source = SqsEventSource(
        sqs,
        deployment.source_url,
        deployment.source_queue_arn,
        consumer,
        deployment.consumer_batch_size,
        on_delivery=on_delivery,
    )
    wait_with(redriver, while_redriver_waits)
    return Stage(deployment, consumer, redriver, event_source, Schedule(redriver, tick_seconds))


def deploy_fix(stage: Stage, variable: str, value: str) -> None:
    """Deploy a fix the way the outage came: in the consumer's configuration, which its later
    invocations run under."""
    _configure(stage.consumer.config, **{variable: value})
    stage.consumer.reconfigure(read_deployment(stage.deployment.stack_name).consumer)


def note_downstream_errors(consumer: InProcessFunction, errors: dict[str, str]) -> None:
    """Note in ``errors`` which orders the consumer's downstream refused, and with what error class
    (the kit dead-letters them with it, and the re-driver's mark drops it when it re-drives)."""
    downstream = consumer.module.downstream
    submit = downstream.submit

    def submit_noting_errors(order: Any) -> Any:
        try:
            return submit(order)
        except Exception as error:
            errors[order.order_id] = type(error).__name__
            raise

    downstream.submit = submit_noting_errors


def _configure(function: FunctionConfig, **variables: str) -> None:
    """Add ``variables`` to a deployed function's environment."""
    boto3.client("lambda").update_function_configuration(
        FunctionName=function.name,
        Environment={"Variables": {**function.environment, **variables}},
    )
