"""redriver.settings.load_settings: defaults, and a ConfigError naming each bad variable."""

from __future__ import annotations

import pytest

from redriver.decide.breaker import BreakerPolicy
from redriver.settings import ConfigError, Settings, load_settings

DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
SOURCE = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
PARKING = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-parking-lot"
REQUIRED = {
    "DLQ_URL": DLQ,
    "SOURCE_QUEUE_URL": SOURCE,
    "PARKING_LOT_URL": PARKING,
    "DYNAMODB_TABLE_NAME": "state",
}


def test_defaults_with_only_the_required_variables() -> None:
    assert load_settings(REQUIRED) == Settings(
        dlq_url=DLQ,
        source_queue_url=SOURCE,
        parking_lot_url=PARKING,
        table_name="state",
        max_redrives=5,
        base_delay_seconds=60,
        max_delay_seconds=900,
        breaker=BreakerPolicy(
            failure_threshold=3, cooldown_seconds=60, success_threshold=2, failure_ratio=0.5
        ),
        canary_size=1,
        max_messages_per_run=500,
        receive_wait_seconds=1,
        dlq_visibility_timeout_seconds=960,
        time_margin_seconds=30,
        state_ttl_days=14,
    )


def test_overrides_are_parsed() -> None:
    env = {**REQUIRED, "MAX_REDRIVES": "50", "BASE_DELAY_SECONDS": " 0 ", "BREAKER_FAILURE_RATIO": "1"}
    s = load_settings(env)
    assert (s.max_redrives, s.base_delay_seconds, s.breaker.failure_ratio) == (50, 0, 1.0)


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
        ("MAX_REDRIVES", "five"),
        ("MAX_REDRIVES", "2.5"),
        ("MAX_REDRIVES", "0"),
        ("MAX_REDRIVES", "51"),
        ("BASE_DELAY_SECONDS", "901"),
        ("BASE_DELAY_SECONDS", "-1"),
        ("MAX_DELAY_SECONDS", "901"),
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
        ("TIME_MARGIN_SECONDS", "601"),
        ("STATE_TTL_DAYS", "366"),
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


def test_fifo_queues_are_accepted_when_all_of_them_are_fifo() -> None:
    fifo = {name: url + ".fifo" for name, url in REQUIRED.items() if name.endswith("_URL")}
    assert load_settings({**REQUIRED, **fifo}).fifo


@pytest.mark.parametrize("name", ["SOURCE_QUEUE_URL", "PARKING_LOT_URL"])
def test_a_fifo_dlq_needs_fifo_sources_and_parking_lot(name: str) -> None:
    fifo = {n: url + ".fifo" for n, url in REQUIRED.items() if n.endswith("_URL") and n != name}
    with pytest.raises(ConfigError, match=f"{name} .* must be a FIFO queue"):
        load_settings({**REQUIRED, **fifo})
