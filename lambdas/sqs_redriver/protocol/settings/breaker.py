"""The settings of the circuit breaker and of the consumer verdicts it waits for (part of the
schema: ``schema.SCHEMA`` takes them in)."""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.settings.kinds import BoolSetting, IntSetting, RatioSetting, Setting

BREAKER_SETTINGS: tuple[Setting[Any], ...] = (
    IntSetting(
        "breaker_failure_threshold",
        "BREAKER_FAILURE_THRESHOLD",
        default=3,
        low=1,
        high=100,
        meaning="consecutive runs failed by AWS errors that open the breaker "
        "(a failure by ratio opens it at once)",
    ),
    IntSetting(
        "breaker_cooldown_seconds",
        "BREAKER_COOLDOWN_SECONDS",
        default=60,
        low=0,
        high=86_400,
        meaning="time OPEN before a canary probes",
    ),
    IntSetting(
        "breaker_success_threshold",
        "BREAKER_SUCCESS_THRESHOLD",
        default=2,
        low=1,
        high=100,
        meaning="healthy canaries that close it",
    ),
    RatioSetting(
        "breaker_failure_ratio",
        "BREAKER_FAILURE_RATIO",
        default=0.5,
        meaning="share of received messages that came back which makes a run failed",
    ),
    # Mature breakers' minimum throughput: one or two messages that keep failing (poison) are not
    # an outage.
    IntSetting(
        "breaker_minimum_volume",
        "BREAKER_MINIMUM_VOLUME",
        default=3,
        low=1,
        high=1000,
        meaning="distinct messages that must have come back before the ratio can fail a run",
    ),
    BoolSetting(
        "consumer_verdicts",
        "CONSUMER_VERDICTS",
        default=False,
        meaning="the consumer reports verdicts with the consumer kit (`grant_consumer` sets it): "
        "canaries and slow start's trial wait for them",
    ),
    IntSetting(
        "verdict_wait_seconds",
        "VERDICT_WAIT_SECONDS",
        default=20,
        low=1,
        high=300,
        meaning="how long a probe or a trial waits inside a run for the consumer's verdicts",
    ),
)
