"""The re-driver's tunable settings, as construct props and cdk.json context, validated at synth.

``RedriverSettings`` has one field per setting of the schema (sqs_redriver.protocol.settings)
that a deployment may set, with the schema's default; values are checked with the schema's ranges
and rules, so the synth refuses what the Lambda would refuse at cold start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, make_dataclass
from typing import Any

from constructs import Node

from sqs_redriver.protocol.settings.function import VISIBILITY_TO_TIMEOUT_RATIO, dlq_visibility_timeout
from sqs_redriver.protocol.settings.kinds import InvalidSetting, reraise_as
from sqs_redriver.protocol.settings.rules import check_rules
from sqs_redriver.protocol.settings.schema import BY_NAME, CONTEXT_SETTINGS

CONTEXT_KEY = "redriver"
PROFILES_CONTEXT_KEY = "redriver-profiles"
PROFILE_CONTEXT_KEY = "redriver-profile"
DLQ_VISIBILITY = BY_NAME["dlq_visibility_timeout_seconds"]


class SettingsError(InvalidSetting):
    """A setting is outside what the re-driver accepts; the message names it."""


class _RedriverSettingsBehaviour:
    """What RedriverSettings does; its fields come from the schema (below)."""

    def __post_init__(self) -> None:
        with reraise_as(SettingsError):
            values = {s.name: s.check(getattr(self, s.name), s.name) for s in CONTEXT_SETTINGS}
            check_rules(values, label=str)

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
        known = {setting.name: setting for setting in CONTEXT_SETTINGS}
        unknown = sorted(set(context) - set(known))
        if unknown:
            raise SettingsError(f"unknown {CONTEXT_KEY} setting(s) {unknown}; allowed: {sorted(known)}")
        with reraise_as(SettingsError):
            values = {name: known[name].parse(value, name) for name, value in context.items()}
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


RedriverSettings = make_dataclass(
    "RedriverSettings",
    [(s.name, type(s.default), field(default=s.default)) for s in CONTEXT_SETTINGS],
    bases=(_RedriverSettingsBehaviour,),
    frozen=True,
)
RedriverSettings.__module__ = __name__
RedriverSettings.__doc__ = (
    "Every setting a deployment tunes, named as in the ``redriver`` block of cdk.json context: "
    f"{', '.join(s.name for s in CONTEXT_SETTINGS)}."
)
