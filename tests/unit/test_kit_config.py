"""sqs_redriver.kit.config: the kit's settings from the environment, with errors naming the variable."""

from __future__ import annotations

import pytest

from sqs_redriver.kit import KitConfig, KitConfigError
from sqs_redriver.kit.config import load_config
from sqs_redriver.protocol.settings import (
    ENV_DLQ_URL,
    ENV_ERROR_TEXT,
    ENV_ERROR_TEXT_MAX_CHARS,
    ENV_MAX_RECEIVE_COUNT,
    ENV_REDACT_PATTERNS,
    ENV_TABLE_NAME,
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


# --- what of exception text leaves the consumer --------------------------------------------------


def test_by_default_exception_text_is_redacted_and_capped_at_240_characters() -> None:
    redactor = load_config(VALID).redactor

    assert (redactor.drop_text, redactor.max_chars, redactor.extra_patterns) == (False, 240, ())


def test_the_text_mode_cap_and_patterns_are_read_from_the_environment() -> None:
    env = {
        **VALID,
        ENV_ERROR_TEXT: " Drop ",
        ENV_ERROR_TEXT_MAX_CHARS: "80",
        ENV_REDACT_PATTERNS: r'["card=\\d+", "(?P<secret>pin \\d{4})"]',
    }

    redactor = load_config(env).redactor

    assert (redactor.drop_text, redactor.max_chars) == (True, 80)
    assert [p.pattern for p in redactor.extra_patterns] == [r"card=\d+", r"(?P<secret>pin \d{4})"]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (ENV_ERROR_TEXT, "verbatim", f"{ENV_ERROR_TEXT} must be one of redact, drop, got 'verbatim'"),
        (
            ENV_ERROR_TEXT_MAX_CHARS,
            "0",
            f"{ENV_ERROR_TEXT_MAX_CHARS} must be an integer from 1 to 240, got '0'",
        ),
        (ENV_ERROR_TEXT_MAX_CHARS, "241", "must be an integer from 1 to 240, got '241'"),
        (ENV_ERROR_TEXT_MAX_CHARS, "²", "must be an integer from 1 to 240"),
        (
            ENV_REDACT_PATTERNS,
            "card=\\d+",
            f"{ENV_REDACT_PATTERNS} must be a JSON array of regular expressions",
        ),
        (ENV_REDACT_PATTERNS, '["ok", 3]', f"{ENV_REDACT_PATTERNS} must be a JSON array"),
        (ENV_REDACT_PATTERNS, "[" * 100_000, f"{ENV_REDACT_PATTERNS} must be a JSON array"),
        (
            ENV_REDACT_PATTERNS,
            '["fine", "(unclosed"]',
            rf"{ENV_REDACT_PATTERNS}: pattern 2 \('\(unclosed'\) is not a valid regular expression",
        ),
    ],
)
def test_a_bad_redaction_setting_is_refused_naming_its_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(KitConfigError, match=message):
        load_config({**VALID, name: value})
