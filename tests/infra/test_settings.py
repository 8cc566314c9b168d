"""RedriverSettings at synth and load_settings at cold start agree: same values, same refusals."""

from __future__ import annotations

import re
from dataclasses import asdict, fields
from typing import Any, get_type_hints

import pytest

from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.protocol.settings import (
    BY_NAME,
    CONTEXT_SETTINGS,
    RENAMED,
    SCHEMA,
    BoolSetting,
    IntSetting,
    RatioSetting,
    Setting,
)
from sqs_redriver.runtime.errors import ConfigError
from sqs_redriver.runtime.settings import Settings, load_settings

RESOURCES = {
    "DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq",
    "SOURCE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
    "PARKING_LOT_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/orders-parking-lot",
    "DYNAMODB_TABLE_NAME": "state",
}
# Set at deploy and read by the Lambda: the settings the two sides must agree on.
SHARED = [setting for setting in SCHEMA if setting.env and setting.context]


def _lambda_values(settings: Settings) -> dict[str, Any]:
    """The Lambda's settings under the schema's names (the breaker's fields are breaker_*)."""
    return {**asdict(settings), **{f"breaker_{k}": v for k, v in asdict(settings.breaker).items()}}


def _candidates(setting: Setting[Any]) -> list[Any]:
    if isinstance(setting, IntSetting):
        return [setting.high, setting.low, setting.default + 1, setting.default - 1]
    if isinstance(setting, RatioSetting):
        return [1.0, 0.25]
    assert isinstance(setting, BoolSetting), f"no candidate values for {setting}"
    return [not setting.default]


def _valid_other_value(setting: Setting[Any]) -> Any:
    """A value other than the default that synth accepts with every other setting at its default."""
    for value in _candidates(setting):
        if value != setting.default:
            try:
                RedriverSettings(**{setting.name: value})
            except SettingsError:
                continue
            return value
    raise AssertionError(f"no valid non-default value found for {setting.name}")


def _bad_values(setting: Setting[Any]) -> list[Any]:
    if isinstance(setting, IntSetting):
        return [setting.low - 1, setting.high + 1]
    if isinstance(setting, RatioSetting):
        return [0, 1.5]
    return ["maybe"]


def _ids(setting: Setting[Any]) -> str:
    return setting.name


@pytest.mark.parametrize("setting", SHARED, ids=_ids)
def test_a_deployed_setting_reaches_the_lambda_unchanged(setting: Setting[Any]) -> None:
    # GIVEN a construct setting with a value other than its default
    value = _valid_other_value(setting)

    # WHEN the construct's environment is parsed at cold start
    environment = RedriverSettings(**{setting.name: value}).lambda_environment()
    loaded = load_settings({**RESOURCES, **environment})

    # THEN the Lambda has the same value
    assert _lambda_values(loaded)[setting.name] == value


def test_the_construct_sets_every_shared_variable_and_the_dlq_visibility() -> None:
    environment = RedriverSettings(redriver_timeout_seconds=200).lambda_environment()

    assert set(environment) == {s.env for s in SHARED} | {"DLQ_VISIBILITY_TIMEOUT_SECONDS"}
    assert load_settings({**RESOURCES, **environment}).dlq_visibility_timeout_seconds == 230


def _accepted(error: pytest.ExceptionInfo[Exception]) -> str:
    found = re.search(r" must be (.+), got ", str(error.value))
    assert found, str(error.value)
    return found.group(1)


@pytest.mark.parametrize(
    ("setting", "bad"),
    [(s, bad) for s in SHARED for bad in _bad_values(s)],
    ids=lambda v: _ids(v) if isinstance(v, Setting) else repr(v),
)
def test_a_bad_value_is_refused_on_both_sides_with_the_same_range(setting: Setting[Any], bad: Any) -> None:
    with pytest.raises(SettingsError) as at_synth:
        RedriverSettings.from_context({setting.name: bad})
    with pytest.raises(ConfigError) as at_cold_start:
        load_settings({**RESOURCES, str(setting.env): str(bad)})

    assert str(at_synth.value).startswith(f"{setting.name} must be ")
    assert str(at_cold_start.value).startswith(f"{setting.env} must be ")
    assert _accepted(at_synth) == _accepted(at_cold_start) == setting.accepts


@pytest.mark.parametrize(
    "values",
    [
        {"base_delay_seconds": 120, "max_delay_seconds": 60},
        {"receive_wait_seconds": 20, "time_margin_seconds": 20},
    ],
)
def test_a_rule_between_settings_refuses_the_same_values_on_both_sides(values: dict[str, int]) -> None:
    with pytest.raises(SettingsError) as at_synth:
        RedriverSettings(**values)
    with pytest.raises(ConfigError) as at_cold_start:
        load_settings({**RESOURCES, **{str(BY_NAME[name].env): str(v) for name, v in values.items()}})

    as_variables = str(at_synth.value)
    for name in values:
        as_variables = as_variables.replace(name, str(BY_NAME[name].env))
    assert as_variables == str(at_cold_start.value)


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"max_redrive_count": 0}, "max_redrive_count must be an integer from 1 to 50"),
        ({"max_redrive_count": 2.5}, "max_redrive_count must be an integer"),
        ({"schedule": "every 5 minutes"}, "schedule"),
        ({"base_delay_seconds": 120, "max_delay_seconds": 60}, "max_delay_seconds"),
        ({"breaker_failure_ratio": 1.5}, "breaker_failure_ratio"),
        ({"max_redrive": 5}, "unknown redriver setting"),
        ({"canary_size": "many"}, "canary_size"),
        ({"redriver_memory_mb": 64}, "redriver_memory_mb must be an integer from 128 to 10240"),
        (
            {"redriver_timeout_seconds": 60, "time_margin_seconds": 31},
            r"time_margin_seconds \(31\) must be at most half of redriver_timeout_seconds \(60\)",
        ),
        (
            {"consumer_timeout_seconds": 30, "source_visibility_timeout_seconds": 10},
            "source_visibility_timeout_seconds",
        ),
    ],
)
def test_bad_settings_fail_at_synth_naming_the_setting(context: dict[str, Any], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        RedriverSettings.from_context(context)


def test_context_text_is_parsed_as_the_lambda_parses_its_environment() -> None:
    # `cdk synth -c 'redriver={...}'` may carry numbers and flags as text
    settings = RedriverSettings.from_context(
        {"max_redrive_count": " 7 ", "record_every_redrive": "TRUE", "breaker_failure_ratio": "1"}
    )

    assert (settings.max_redrive_count, settings.record_every_redrive, settings.breaker_failure_ratio) == (
        7,
        True,
        1.0,
    )


def test_the_fields_and_defaults_are_the_schemas() -> None:
    assert {name: getattr(RedriverSettings(), name) for name in BY_NAME if BY_NAME[name].context} == {
        s.name: s.default for s in SCHEMA if s.context
    }


def test_the_dataclass_has_a_typed_field_for_each_setting_a_deployment_may_set() -> None:
    # a setting added to the schema needs its field in RedriverSettings, and a field its setting
    types = get_type_hints(RedriverSettings)
    declared = [(f.name, types[f.name], f.default) for f in fields(RedriverSettings)]
    # and a renamed setting's old name a field too, for one release (protocol.settings.renamed)
    former = [(r.old_name, int | None, None) for r in RENAMED]

    assert declared == [(s.name, type(s.default), s.default) for s in CONTEXT_SETTINGS] + former
