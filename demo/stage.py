"""Act 1's stage: the demo stack deployed into moto, made ready for an act in real time.

The downstream outage goes into the consumer's configuration, as an operator would inject it (and
its end, and the operator's fix later, go the same way: the consumer reads both per invocation).
moto would run the consumer's event source mapping itself, by invoking the function in Docker on
every send (and failing here): the mapping is turned off and its emulator takes it over; both
functions run in process (demo/emulators.py).
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
    tick_seconds: float,
    log: IO[str],
    sqs: Any,
    on_delivery: DeliveryObserver,
    while_redriver_waits: Callable[[float], None],
) -> Stage:
    """The functions in process, the event source reporting each batch to ``on_delivery``, the
    re-driver's waits calling ``while_redriver_waits`` and one run per ``tick_seconds``."""
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


def configure_consumer(stage: Stage, **variables: str) -> None:
    """Change the consumer's configuration (the outage, its end, the operator's fix), which its
    later invocations run under."""
    _configure(stage.consumer.config, **variables)
    stage.consumer.reconfigure(read_deployment(stage.deployment.stack_name).consumer)


def inject_outage(stage: Stage, window: tuple[float, float]) -> None:
    """The downstream is unavailable from ``window[0]`` to ``window[1]`` (epoch seconds)."""
    configure_consumer(stage, DOWNSTREAM_OUTAGE_WINDOWS=f"{window[0]:.3f}-{window[1]:.3f}")


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
