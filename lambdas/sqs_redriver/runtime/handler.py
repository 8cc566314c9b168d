"""Lambda entry point of the re-driver: a decorator stack over one call into the run, and the
Powertools Logger, Metrics and Tracer the runtime shares.

Settings are validated at import (cold start); boto3 clients are created on the first invocation,
never at import, and reused by later invocations of the same execution environment."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from sqs_redriver.core.breaker import State
from sqs_redriver.core.clients import aws_clients, lambda_client
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import Resume
from sqs_redriver.runtime.continuation import start_continuation
from sqs_redriver.runtime.settings import Settings, load_settings
from sqs_redriver.runtime.wiring import compose_redriver, idempotency_guard

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from sqs_redriver.runtime.report import RunReport


# Logger, Metrics and Tracer, created once and shared by the re-driver's modules.


logger = Logger()


metrics = Metrics()


tracer = Tracer()


SETTINGS = load_settings(warn=logger.warning)


BREAKER_STATE_VALUE = {State.CLOSED: 0, State.HALF_OPEN: 1, State.OPEN: 2}


@functools.cache
def _lambda_client() -> Any:
    return lambda_client()


@functools.cache
def _runtime() -> tuple[IdempotencyConfig, Any]:
    """The re-driver and its idempotency guard, built once per execution environment."""
    return build_runtime(SETTINGS)


def build_runtime(settings: Settings) -> tuple[IdempotencyConfig, Any]:
    clients = aws_clients(
        s3=bool(settings.archive_bucket),
        cloudwatch=settings.queue_metrics,
        delivery=bool(settings.dead_letter_sources),
    )
    redriver = compose_redriver(settings, clients, logger=logger, metrics=metrics)
    config, guard = idempotency_guard(settings, clients.dynamodb)

    @guard  # type: ignore[untyped-decorator]
    def run_once(event: dict[str, Any], remaining_ms: Any, function_name: str) -> dict[str, Any]:
        start_worker = functools.partial(start_continuation, _lambda_client(), function_name)
        report = redriver.run(remaining_ms, Resume.from_event(event), start_worker)
        if report.continue_with is not None:
            try:
                start_continuation(_lambda_client(), function_name, report.continue_with)
            except AwsCallError as exc:
                logger.error("continuation not started: the next tick goes on", extra={"error": str(exc)})
                redriver.release_continuation(report.continue_with)
                report = replace(report, continue_with=None)
        return _publish(report)

    return config, run_once


def _publish(report: RunReport) -> dict[str, Any]:
    """The run's metrics and its summary, logged and returned."""
    _add_metrics(report)
    summary = _summary(report)
    logger.info("run finished", extra=summary)
    return summary


def _add_metrics(report: RunReport) -> None:
    for name, value in (
        ("Redriven", report.redriven),
        ("Parked", report.parked),
        ("Expiring", report.expiring),
        ("Returned", report.returned),
        ("Canaries", report.canaries),
        ("RunErrors", report.errors),
        ("Unparkable", report.unparkable),
        ("Unarchived", report.unarchived),
        ("RejectedMarks", report.rejected_marks),
        ("Continuations", int(report.continue_with is not None)),
    ):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    metrics.add_metric(
        name="BreakerState", unit=MetricUnit.Count, value=BREAKER_STATE_VALUE[report.breaker_state]
    )
    drain = report.drain
    if drain is not None:  # a large drain's worker: where the drain stands (runtime/workers.py)
        metrics.add_metric(name="DrainRate", unit=MetricUnit.CountPerSecond, value=drain.rate)
        metrics.add_metric(name="DrainWorkers", unit=MetricUnit.Count, value=drain.workers)
        metrics.add_metric(name="DrainMessagesLeft", unit=MetricUnit.Count, value=drain.messages_left)


def _summary(report: RunReport) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "mode": report.mode.value,
        "breaker_state": report.breaker_state.value,
        "received": report.received,
        "redriven": report.redriven,
        "parked": report.parked,
        "expiring": report.expiring,
        "returned": report.returned,
        "canaries": report.canaries,
        "errors": report.errors,
        "unparkable": report.unparkable,
        "unarchived": report.unarchived,
        "stopped_because": report.stopped_because,
        "breaker_transitions": report.breaker_transitions,
        "continued": report.continue_with is not None,
    }
    if (drain := report.drain) is not None:
        summary["drain"] = {
            "rate": drain.rate,
            "workers": drain.workers,
            "messages_left": drain.messages_left,
        }
    if report.parts:
        # A shared DLQ with a breaker per source: breaker_state above is the worst of them.
        summary["sources"] = [
            {
                "source": part.source,
                "mode": part.mode.value,
                "breaker_state": part.breaker_state.value,
                "received": part.tally.received_own,
                "redriven": part.redriven,
                "parked": part.parked,
                "returned": part.returned,
                "stopped_because": part.stopped_because,
            }
            for part in report.parts
        ]
    return summary


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    config, run_once = _runtime()
    config.register_lambda_context(context)
    result: dict[str, Any] = run_once(
        event=event, remaining_ms=context.get_remaining_time_in_millis, function_name=context.function_name
    )
    return result
