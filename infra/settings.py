"""The re-driver's tunable settings, shared by construct props and CDK context, validated at synth."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from constructs import Node

SCHEDULE_PATTERN = re.compile(r"^(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(.+\))$")
CONTEXT_KEY = "redriver"
PROFILES_CONTEXT_KEY = "redriver-profiles"
PROFILE_CONTEXT_KEY = "redriver-profile"
MAX_LAMBDA_TIMEOUT_SECONDS = 900
SQS_MAX_DELAY_SECONDS = 900
SQS_MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200
# AWS's guidance for a queue that feeds Lambda: visibility timeout at least 6x the function's.
VISIBILITY_TO_TIMEOUT_RATIO = 6


class SettingsError(ValueError):
    """A setting is outside what the re-driver accepts; the message names it."""


@dataclass(frozen=True)
class RedriverSettings:
    """Every setting a user tunes; the names match the ``redriver`` block of cdk.json context."""

    schedule: str = "rate(5 minutes)"
    max_redrives: int = 5
    base_delay_seconds: int = 60
    max_delay_seconds: int = SQS_MAX_DELAY_SECONDS
    breaker_failure_threshold: int = 3
    breaker_cooldown_seconds: int = 60
    breaker_success_threshold: int = 2
    breaker_failure_ratio: float = 0.5
    canary_size: int = 1
    max_messages_per_run: int = 500
    # Re-drives per second at most (a token bucket), so a recovered consumer is not flooded.
    max_redrives_per_second: int = 50
    # Batches in flight at once within a run (threads sharing one client and the rate limit).
    parallel_batches: int = 4
    # Back-pressure: no re-drives while a source queue holds more messages than this (0: off).
    source_backlog_limit: int = 1000
    receive_wait_seconds: int = 1
    redriver_timeout_seconds: int = 120
    # A run takes no new batch with less time left than this (a batch of normal calls fits in it).
    time_margin_seconds: int = 30
    # Also write a table record for every re-drive of a marked message (the mark already carries
    # count and history): an audit trail at one write unit per re-drive.
    record_every_redrive: bool = False
    redriver_memory_mb: int = 256
    # The example stack's queues and consumer (ignored by the construct on existing queues).
    max_receive_count: int = 5
    consumer_timeout_seconds: int = 30
    # 0 means AWS's guidance for a queue feeding Lambda: six times the consumer's timeout.
    source_visibility_timeout_seconds: int = 0

    def __post_init__(self) -> None:
        if not SCHEDULE_PATTERN.match(self.schedule):
            raise SettingsError(
                f"schedule must be 'rate(N minutes|hours|days)' or 'cron(...)', got {self.schedule!r}"
            )
        _check_range("max_redrives", self.max_redrives, 1, 50)
        _check_range("base_delay_seconds", self.base_delay_seconds, 0, SQS_MAX_DELAY_SECONDS)
        _check_range(
            "max_delay_seconds", self.max_delay_seconds, self.base_delay_seconds, SQS_MAX_DELAY_SECONDS
        )
        _check_range("breaker_failure_threshold", self.breaker_failure_threshold, 1, 100)
        _check_range("breaker_cooldown_seconds", self.breaker_cooldown_seconds, 0, 86_400)
        _check_range("breaker_success_threshold", self.breaker_success_threshold, 1, 100)
        if not 0 < self.breaker_failure_ratio <= 1:
            raise SettingsError(f"breaker_failure_ratio must be in (0, 1], got {self.breaker_failure_ratio}")
        _check_range("canary_size", self.canary_size, 1, 10)
        _check_range("max_messages_per_run", self.max_messages_per_run, 1, 100_000)
        _check_range("max_redrives_per_second", self.max_redrives_per_second, 1, 500)
        _check_range("parallel_batches", self.parallel_batches, 1, 16)
        _check_range("source_backlog_limit", self.source_backlog_limit, 0, 10_000_000)
        _check_range("receive_wait_seconds", self.receive_wait_seconds, 0, 20)
        _check_range(
            "redriver_timeout_seconds", self.redriver_timeout_seconds, 30, MAX_LAMBDA_TIMEOUT_SECONDS
        )
        _check_range("redriver_memory_mb", self.redriver_memory_mb, 128, 10_240)
        _check_range(
            "time_margin_seconds",
            self.time_margin_seconds,
            self.receive_wait_seconds + 1,
            self.redriver_timeout_seconds // 2,
        )
        _check_range("max_receive_count", self.max_receive_count, 1, 1000)
        _check_range("consumer_timeout_seconds", self.consumer_timeout_seconds, 1, MAX_LAMBDA_TIMEOUT_SECONDS)
        if self.source_visibility_timeout_seconds:
            _check_range(
                "source_visibility_timeout_seconds",
                self.source_visibility_timeout_seconds,
                self.consumer_timeout_seconds,
                SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
            )

    @classmethod
    def from_app_context(cls, node: Node) -> RedriverSettings:
        """Settings from the ``redriver`` context block, overlaid with the selected profile, if any.

        ``-c redriver-profile=demo`` picks ``redriver-profiles.demo`` from cdk.json: the same
        settings, compressed for a short local run.
        """
        settings = dict(node.try_get_context(CONTEXT_KEY) or {})
        profile = node.try_get_context(PROFILE_CONTEXT_KEY)
        if profile:
            profiles = node.try_get_context(PROFILES_CONTEXT_KEY) or {}
            if profile not in profiles:
                raise SettingsError(
                    f"{PROFILE_CONTEXT_KEY} {profile!r} is not defined; defined: {sorted(profiles)}"
                )
            settings.update(profiles[profile])
        return cls.from_context(settings)

    @classmethod
    def from_context(cls, context: Mapping[str, Any] | None) -> RedriverSettings:
        """Build from the ``redriver`` context block; unknown keys are an error, not ignored."""
        context = dict(context or {})
        known = {field.name: field.type for field in fields(cls)}
        unknown = sorted(set(context) - set(known))
        if unknown:
            raise SettingsError(f"unknown {CONTEXT_KEY} setting(s) {unknown}; allowed: {sorted(known)}")
        values: dict[str, Any] = {}
        for name, value in context.items():
            expected = cls.__dataclass_fields__[name].default
            if isinstance(expected, bool):
                if str(value).lower() not in ("true", "false"):
                    raise SettingsError(f"{name} must be true or false, got {value!r}")
                values[name] = str(value).lower() == "true"
                continue
            try:
                values[name] = type(expected)(value)
            except (TypeError, ValueError):
                raise SettingsError(f"{name} must be a {type(expected).__name__}, got {value!r}") from None
        return cls(**values)

    @property
    def source_visibility_timeout(self) -> int:
        return self.source_visibility_timeout_seconds or (
            self.consumer_timeout_seconds * VISIBILITY_TO_TIMEOUT_RATIO
        )

    @property
    def dlq_visibility_timeout_seconds(self) -> int:
        # Longer than a run can last, so a message a run holds cannot reach an overlapping run.
        return self.redriver_timeout_seconds + 30

    def lambda_environment(self) -> dict[str, str]:
        """The re-drive Lambda's environment variables for these settings."""
        return {
            "MAX_REDRIVES": str(self.max_redrives),
            "BASE_DELAY_SECONDS": str(self.base_delay_seconds),
            "MAX_DELAY_SECONDS": str(self.max_delay_seconds),
            "BREAKER_FAILURE_THRESHOLD": str(self.breaker_failure_threshold),
            "BREAKER_COOLDOWN_SECONDS": str(self.breaker_cooldown_seconds),
            "BREAKER_SUCCESS_THRESHOLD": str(self.breaker_success_threshold),
            "BREAKER_FAILURE_RATIO": str(self.breaker_failure_ratio),
            "CANARY_SIZE": str(self.canary_size),
            "MAX_MESSAGES_PER_RUN": str(self.max_messages_per_run),
            "MAX_REDRIVES_PER_SECOND": str(self.max_redrives_per_second),
            "PARALLEL_BATCHES": str(self.parallel_batches),
            "SOURCE_BACKLOG_LIMIT": str(self.source_backlog_limit),
            "RECEIVE_WAIT_SECONDS": str(self.receive_wait_seconds),
            "TIME_MARGIN_SECONDS": str(self.time_margin_seconds),
            "RECORD_EVERY_REDRIVE": str(self.record_every_redrive).lower(),
            "DLQ_VISIBILITY_TIMEOUT_SECONDS": str(self.dlq_visibility_timeout_seconds),
        }


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SettingsError(f"{name} must be an integer from {low} to {high}, got {value!r}")
