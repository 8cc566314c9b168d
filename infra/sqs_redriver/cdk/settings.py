"""The re-driver's tunable settings, as construct props and cdk.json context, validated at synth.

``RedriverSettings`` has one field per setting of the schema (sqs_redriver.protocol.settings)
that a deployment may set, with the schema's default; values are checked with the schema's ranges
and rules, so the synth refuses what the Lambda would refuse at cold start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from constructs import Node

from sqs_redriver.protocol.settings import (
    BY_NAME,
    CONTEXT_SETTINGS,
    RENAMED,
    RENAMED_NAMES,
    VISIBILITY_TO_TIMEOUT_RATIO,
    InvalidSetting,
    Renamed,
    both_given,
    check_rules,
    default,
    dlq_visibility_timeout,
    reraise_as,
)

CONTEXT_KEY = "redriver"
PROFILES_CONTEXT_KEY = "redriver-profiles"
PROFILE_CONTEXT_KEY = "redriver-profile"
DLQ_VISIBILITY = BY_NAME["dlq_visibility_timeout_seconds"]


class SettingsError(InvalidSetting):
    """A setting is outside what the re-driver accepts; the message names it."""


@dataclass(frozen=True)
class RedriverSettings:
    """Every setting a deployment tunes, named as in the ``redriver`` block of cdk.json context, in
    the schema's order (tests/infra/test_settings.py keeps the fields in step with the schema)."""

    schedule: str = default("schedule")
    max_redrive_count: int = default("max_redrive_count")
    base_delay_seconds: int = default("base_delay_seconds")
    max_delay_seconds: int = default("max_delay_seconds")
    breaker_failure_threshold: int = default("breaker_failure_threshold")
    breaker_cooldown_seconds: int = default("breaker_cooldown_seconds")
    breaker_success_threshold: int = default("breaker_success_threshold")
    breaker_failure_ratio: float = default("breaker_failure_ratio")
    breaker_minimum_volume: int = default("breaker_minimum_volume")
    consumer_verdicts: bool = default("consumer_verdicts")
    verdict_wait_seconds: int = default("verdict_wait_seconds")
    queue_metrics: bool = default("queue_metrics")
    metrics_lag_seconds: int = default("metrics_lag_seconds")
    suspect_limit: int = default("suspect_limit")
    slow_start_seconds: int = default("slow_start_seconds")
    canary_size: int = default("canary_size")
    max_messages_per_run: int = default("max_messages_per_run")
    max_continuations: int = default("max_continuations")
    max_redrives_per_second: int = default("max_redrives_per_second")
    parallel_batches: int = default("parallel_batches")
    source_backlog_limit: int = default("source_backlog_limit")
    record_every_redrive: bool = default("record_every_redrive")
    receive_wait_seconds: int = default("receive_wait_seconds")
    redriver_timeout_seconds: int = default("redriver_timeout_seconds")
    redriver_memory_mb: int = default("redriver_memory_mb")
    time_margin_seconds: int = default("time_margin_seconds")
    max_receive_count: int = default("max_receive_count")
    consumer_timeout_seconds: int = default("consumer_timeout_seconds")
    source_visibility_timeout_seconds: int = default("source_visibility_timeout_seconds")
    expiry_margin_seconds: int = default("expiry_margin_seconds")
    # Former names (protocol.settings.renamed), read for one release: None when not given.
    max_redrives: int | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        with reraise_as(SettingsError):
            for renamed in self.renamed_used:
                old, new = renamed.old_name, renamed.new_name
                # A new name at its default is taken as not given: the old one's value stands.
                if getattr(self, new) not in (getattr(self, old), default(new)):
                    raise both_given(old, new, getattr(self, old), getattr(self, new))
                object.__setattr__(self, new, getattr(self, old))
            values = {s.name: s.check(getattr(self, s.name), s.name) for s in CONTEXT_SETTINGS}
            check_rules(values, label=str)

    @property
    def renamed_used(self) -> tuple[Renamed, ...]:
        """The settings given by a former name; the construct warns of each at synth."""
        return tuple(renamed for renamed in RENAMED if getattr(self, renamed.old_name) is not None)

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
        """Build from the ``redriver`` context block (values typed, or text as with ``-c``);
        unknown keys are an error, not ignored."""
        context = dict(context or {})
        allowed = {setting.name: setting for setting in CONTEXT_SETTINGS}
        known = allowed | {old: allowed[new] for old, new in RENAMED_NAMES.items()}
        unknown = sorted(set(context) - set(known))
        if unknown:
            raise SettingsError(f"unknown {CONTEXT_KEY} setting(s) {unknown}; allowed: {sorted(allowed)}")
        with reraise_as(SettingsError):
            values = {name: known[name].parse(value, name) for name, value in context.items()}
            for old, new in RENAMED_NAMES.items():
                if old in values and new in values:
                    if values[old] != values[new]:
                        raise both_given(old, new, values[old], values[new])
                    del values[new]
        return cls(**values)

    @property
    def source_visibility_timeout(self) -> int:
        return self.source_visibility_timeout_seconds or (
            self.consumer_timeout_seconds * VISIBILITY_TO_TIMEOUT_RATIO
        )

    @property
    def dlq_visibility_timeout_seconds(self) -> int:
        return dlq_visibility_timeout(self.redriver_timeout_seconds)

    def lambda_environment(self) -> dict[str, str]:
        """The re-drive Lambda's environment variables for these settings."""
        environment = {s.env: s.to_env(getattr(self, s.name)) for s in CONTEXT_SETTINGS if s.env}
        environment[str(DLQ_VISIBILITY.env)] = DLQ_VISIBILITY.to_env(self.dlq_visibility_timeout_seconds)
        return environment
