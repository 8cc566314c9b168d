"""redriver_kit.config: the kit's settings from the environment, with errors naming the variable."""

from __future__ import annotations

import pytest

from redriver_kit.config import (
    ENV_DLQ_URL,
    ENV_MAX_RECEIVE_COUNT,
    ENV_TABLE_NAME,
    KitConfig,
    KitConfigError,
    load_config,
)

DLQ_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
VALID = {ENV_DLQ_URL: DLQ_URL, ENV_TABLE_NAME: "redriver-state", ENV_MAX_RECEIVE_COUNT: "5"}


def test_valid_settings_are_parsed() -> None:
    assert load_config(VALID) == KitConfig(DLQ_URL, "redriver-state", 5)


def test_every_missing_variable_is_named() -> None:
    with pytest.raises(KitConfigError, match=f"{ENV_DLQ_URL}, {ENV_TABLE_NAME} are required"):
        load_config({ENV_MAX_RECEIVE_COUNT: "5", ENV_TABLE_NAME: "  "})


@pytest.mark.parametrize("value", ["0", "1001", "five", "2.5"])
def test_a_max_receive_count_outside_1_to_1000_is_refused(value: str) -> None:
    with pytest.raises(KitConfigError, match=f"{ENV_MAX_RECEIVE_COUNT} must be an integer from 1 to 1000"):
        load_config({**VALID, ENV_MAX_RECEIVE_COUNT: value})


@pytest.mark.parametrize("value", ["orders-dlq", "ftp://host/q", "https://", "https://host/a b"])
def test_a_dlq_url_that_is_not_http_is_refused(value: str) -> None:
    with pytest.raises(KitConfigError, match=f"{ENV_DLQ_URL} must be an http"):
        load_config({**VALID, ENV_DLQ_URL: value})


def test_a_fifo_dlq_is_recognised_by_its_url() -> None:
    assert load_config({**VALID, ENV_DLQ_URL: DLQ_URL + ".fifo"}).dlq_is_fifo
    assert not load_config(VALID).dlq_is_fifo
