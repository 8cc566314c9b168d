"""sqs_redriver.runtime.settings.load_settings: defaults, and a ConfigError naming each bad variable."""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

import pytest

from sqs_redriver.core.breaker import BreakerPolicy
from sqs_redriver.protocol.settings import BY_NAME, LAMBDA_SETTINGS, SCHEMA
from sqs_redriver.runtime.consumer_health import WatchedQueue
from sqs_redriver.runtime.errors import ConfigError
from sqs_redriver.runtime.settings import Settings, load_settings
from tests.support.factories import REQUIRED_VARIABLES as REQUIRED
from tests.support.factories import SETTINGS_DLQ_URL as DLQ
from tests.support.factories import SETTINGS_PARKING_LOT_URL as PARKING
from tests.support.factories import SETTINGS_SOURCE_URL as SOURCE


def test_defaults_with_only_the_required_variables() -> None:
    assert load_settings(REQUIRED) == Settings(
        dlq_url=DLQ,
        source_queue_url=SOURCE,
        parking_lot_url=PARKING,
        table_name="state",
        max_redrive_count=5,
        base_delay_seconds=60,
        max_delay_seconds=900,
        breaker=BreakerPolicy(
            failure_threshold=3, cooldown_seconds=60, success_threshold=2, failure_ratio=0.5
        ),
        canary_size=1,
        max_messages_per_run=10_000,
        max_continuations=100,
        receive_wait_seconds=1,
        dlq_visibility_timeout_seconds=960,
        time_margin_seconds=30,
        state_ttl_days=14,
    )


def test_overrides_are_parsed() -> None:
    env = {**REQUIRED, "MAX_REDRIVE_COUNT": "50", "BASE_DELAY_SECONDS": " 0 ", "BREAKER_FAILURE_RATIO": "1"}
    s = load_settings(env)
    assert (s.max_redrive_count, s.base_delay_seconds, s.breaker.failure_ratio) == (50, 0, 1.0)


def test_backoff_may_go_past_the_900_seconds_of_delay_seconds_up_to_a_day() -> None:
    s = load_settings({**REQUIRED, "BASE_DELAY_SECONDS": "3600", "MAX_DELAY_SECONDS": "86400"})
    assert (s.base_delay_seconds, s.max_delay_seconds) == (3600, 86_400)


def test_a_delay_cap_past_a_day_names_the_variable_and_its_range() -> None:
    with pytest.raises(ConfigError, match=r"MAX_DELAY_SECONDS.*86,?400"):
        load_settings({**REQUIRED, "MAX_DELAY_SECONDS": "90000"})


def test_breaker_key_names_the_source_queue() -> None:
    assert load_settings(REQUIRED).breaker_key == f"BREAKER#{SOURCE}"


@pytest.mark.parametrize("name", sorted(REQUIRED))
@pytest.mark.parametrize("value", [None, "", "   "])
def test_missing_required_variable_is_named(name: str, value: str | None) -> None:
    env = {k: v for k, v in REQUIRED.items() if k != name} | ({} if value is None else {name: value})
    with pytest.raises(ConfigError, match=name):
        load_settings(env)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DLQ_URL", "orders-dlq"),
        ("SOURCE_QUEUE_URL", "sqs://orders"),
        ("PARKING_LOT_URL", PARKING + ".fifo"),
        ("MAX_REDRIVE_COUNT", "five"),
        ("MAX_REDRIVE_COUNT", "2.5"),
        ("MAX_REDRIVE_COUNT", "0"),
        ("MAX_REDRIVE_COUNT", "51"),
        ("BASE_DELAY_SECONDS", "86401"),
        ("BASE_DELAY_SECONDS", "-1"),
        ("MAX_DELAY_SECONDS", "86401"),
        ("MAX_DELAY_SECONDS", "30"),  # below the default BASE_DELAY_SECONDS of 60
        ("BREAKER_FAILURE_THRESHOLD", "0"),
        ("BREAKER_COOLDOWN_SECONDS", "86401"),
        ("BREAKER_SUCCESS_THRESHOLD", "101"),
        ("BREAKER_FAILURE_RATIO", "0"),
        ("BREAKER_FAILURE_RATIO", "1.5"),
        ("BREAKER_FAILURE_RATIO", "abc"),
        ("BREAKER_FAILURE_RATIO", "nan"),
        ("CANARY_SIZE", "11"),
        ("MAX_MESSAGES_PER_RUN", "0"),
        ("RECEIVE_WAIT_SECONDS", "21"),
        ("DLQ_VISIBILITY_TIMEOUT_SECONDS", "0"),
        ("TIME_MARGIN_SECONDS", "451"),  # more than half of the longest Lambda timeout
        ("TIME_MARGIN_SECONDS", "1"),  # not longer than the default RECEIVE_WAIT_SECONDS of 1
        ("RECORD_EVERY_REDRIVE", "yes"),
        ("STATE_TTL_DAYS", "366"),
        ("QUEUE_METRICS", "yes"),
        ("METRICS_LAG_SECONDS", "59"),
        ("METRICS_LAG_SECONDS", "901"),
        ("SUSPECT_LIMIT", "0"),
        ("SUSPECT_LIMIT", "51"),
    ],
)
def test_invalid_value_is_rejected_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings({**REQUIRED, name: value})


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("DLQ_URL", "SOURCE_QUEUE_URL"),
        ("DLQ_URL", "PARKING_LOT_URL"),
        ("SOURCE_QUEUE_URL", "PARKING_LOT_URL"),
    ],
)
def test_the_same_queue_cannot_serve_two_roles(first: str, second: str) -> None:
    with pytest.raises(ConfigError, match=f"{first}.*different queues"):
        load_settings({**REQUIRED, second: REQUIRED[first]})


def test_a_shared_dlq_lists_its_source_queues_separated_by_commas() -> None:
    other = SOURCE + "-eu"
    settings = load_settings({**REQUIRED, "SOURCE_QUEUE_URL": f"{SOURCE}, {other}"})
    assert settings.source_queue_urls == (SOURCE, other)


def test_consumer_function_names_follow_the_source_queues_and_make_the_watched_queues() -> None:
    other = SOURCE + "-eu"
    env = {
        **REQUIRED,
        "SOURCE_QUEUE_URL": f"{SOURCE},{other}",
        "CONSUMER_FUNCTION_NAMES": " , eu_Consumer-2 ",
    }

    settings = load_settings(env)

    assert settings.consumer_function_names == ("", "eu_Consumer-2")
    assert settings.watched_queues == (WatchedQueue(SOURCE), WatchedQueue(other, "eu_Consumer-2"))


@pytest.mark.parametrize("value", [None, "", "  ", ",", " , "])
def test_no_consumer_function_named_watches_every_source_queue_alone(value: str | None) -> None:
    other = SOURCE + "-eu"
    env = {**REQUIRED, "SOURCE_QUEUE_URL": f"{SOURCE},{other}"} | (
        {} if value is None else {"CONSUMER_FUNCTION_NAMES": value}
    )

    settings = load_settings(env)

    assert settings.consumer_function_names == ()
    assert settings.watched_queues == (WatchedQueue(SOURCE), WatchedQueue(other))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a,b", r"CONSUMER_FUNCTION_NAMES must have one entry per queue of SOURCE_QUEUE_URL \(1, .*got 2"),
        (
            "arn:aws:lambda:us-east-1:123456789012:function:orders",
            "CONSUMER_FUNCTION_NAMES must hold Lambda function names .* not ARNs",
        ),
        ("x" * 65, "CONSUMER_FUNCTION_NAMES must hold Lambda function names"),
        ("orders consumer", "CONSUMER_FUNCTION_NAMES must hold Lambda function names"),
    ],
)
def test_a_wrong_consumer_function_names_fails_naming_the_variable_and_what_it_takes(
    value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings({**REQUIRED, "CONSUMER_FUNCTION_NAMES": value})


def test_fifo_queues_are_accepted_when_all_of_them_are_fifo() -> None:
    fifo = {name: url + ".fifo" for name, url in REQUIRED.items() if name.endswith("_URL")}
    assert load_settings({**REQUIRED, **fifo}).fifo


@pytest.mark.parametrize("name", ["SOURCE_QUEUE_URL", "PARKING_LOT_URL"])
def test_a_fifo_dlq_needs_fifo_sources_and_parking_lot(name: str) -> None:
    fifo = {n: url + ".fifo" for n, url in REQUIRED.items() if n.endswith("_URL") and n != name}
    with pytest.raises(ConfigError, match=f"{name} .* and DLQ_URL .* must be the same kind of queue"):
        load_settings({**REQUIRED, **fifo})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"BASE_DELAY_SECONDS": "120", "MAX_DELAY_SECONDS": "60"},
            "MAX_DELAY_SECONDS (60) must be at least BASE_DELAY_SECONDS (120)",
        ),
        (
            {"RECEIVE_WAIT_SECONDS": "20", "TIME_MARGIN_SECONDS": "20"},
            "TIME_MARGIN_SECONDS (20) must be longer than RECEIVE_WAIT_SECONDS (20)",
        ),
    ],
)
def test_a_rule_between_two_variables_names_both_and_their_values(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings({**REQUIRED, **env})


def _by_schema_name(settings: Settings) -> dict[str, Any]:
    """The settings' values under the schema's names (the breaker's fields are breaker_*)."""
    return {**asdict(settings), **{f"breaker_{k}": v for k, v in asdict(settings.breaker).items()}}


def test_every_variable_of_the_schema_is_a_settings_field_with_the_schemas_default() -> None:
    # GIVEN settings built by keyword, with only the resources
    settings = Settings(dlq_url=DLQ, source_queue_url=SOURCE, parking_lot_url=PARKING, table_name="state")

    # THEN each variable the Lambda reads has a field, whose default is the schema's
    values = _by_schema_name(settings)
    assert {setting.name: values.get(setting.name) for setting in LAMBDA_SETTINGS} == {
        setting.name: setting.default for setting in LAMBDA_SETTINGS
    }


def test_breaker_policy_defaults_are_the_schemas() -> None:
    # BreakerPolicy() is built with its own defaults in tests and the bench: they must not drift.
    assert asdict(BreakerPolicy()) == {
        name.removeprefix("breaker_"): BY_NAME[name].default
        for name in BY_NAME
        if name.startswith("breaker_")
    }


def test_each_setting_and_variable_is_named_once_in_the_schema() -> None:
    names = [setting.name for setting in SCHEMA]
    variables = [setting.env for setting in SCHEMA if setting.env]
    assert len(names) == len(set(names)) and len(variables) == len(set(variables))
