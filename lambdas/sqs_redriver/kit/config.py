"""The kit's configuration, read from environment variables once, at cold start.

The variables' names are in ``sqs_redriver.protocol.settings``, where the construct that sets
them on a consumer function (``grant_consumer``) finds them too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqs_redriver.kit.errors import KitConfigError, RedactionPatternError
from sqs_redriver.protocol.limits import MAX_ERROR_MESSAGE_CHARS, SQS_MAX_RECEIVE_COUNT
from sqs_redriver.protocol.redact import Redactor, compile_patterns
from sqs_redriver.protocol.settings import (
    ENV_DLQ_URL,
    ENV_ERROR_TEXT,
    ENV_ERROR_TEXT_MAX_CHARS,
    ENV_MAX_RECEIVE_COUNT,
    ENV_REDACT_PATTERNS,
    ENV_TABLE_NAME,
    ENVIRONMENT_VARIABLES,
    ERROR_TEXT_MODES,
)

MIN_RECEIVE_COUNT = 1
MAX_RECEIVE_COUNT = SQS_MAX_RECEIVE_COUNT
FIFO_SUFFIX = ".fifo"


@dataclass(frozen=True)
class KitConfig:
    """Where the kit writes, and when a delivery is the one that would dead-letter the message."""

    dlq_url: str
    table_name: str
    max_receive_count: int
    redactor: Redactor = field(default_factory=Redactor)

    def __post_init__(self) -> None:
        _check_url(ENV_DLQ_URL, self.dlq_url)
        if not self.table_name.strip():
            raise KitConfigError(f"{ENV_TABLE_NAME} must be a DynamoDB table name, got an empty value")
        if not MIN_RECEIVE_COUNT <= self.max_receive_count <= MAX_RECEIVE_COUNT:
            raise KitConfigError(
                f"{ENV_MAX_RECEIVE_COUNT} must be an integer from {MIN_RECEIVE_COUNT} to "
                f"{MAX_RECEIVE_COUNT} (the source queue's maxReceiveCount), got {self.max_receive_count}"
            )

    @property
    def dlq_is_fifo(self) -> bool:
        return self.dlq_url.endswith(FIFO_SUFFIX)


def load_config(env: Mapping[str, str]) -> KitConfig:
    """Parse the kit's settings from ``env``; raise KitConfigError naming the bad variable."""
    values = {name: env.get(name, "").strip() for name in ENVIRONMENT_VARIABLES}
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise KitConfigError(
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required by the consumer kit "
            "and not set "
            "(the re-driver's construct sets them on the consumer function)"
        )
    try:
        max_receive_count = int(values[ENV_MAX_RECEIVE_COUNT])
    except ValueError:
        raise KitConfigError(
            f"{ENV_MAX_RECEIVE_COUNT} must be an integer from {MIN_RECEIVE_COUNT} to {MAX_RECEIVE_COUNT}, "
            f"got {values[ENV_MAX_RECEIVE_COUNT]!r}"
        ) from None
    return KitConfig(
        dlq_url=values[ENV_DLQ_URL],
        table_name=values[ENV_TABLE_NAME],
        max_receive_count=max_receive_count,
        redactor=load_redactor(env),
    )


def load_redactor(env: Mapping[str, str]) -> Redactor:
    """What of exception text leaves the consumer, from the optional ``REDRIVER_ERROR_TEXT*`` and
    ``REDRIVER_REDACT_PATTERNS``; raise KitConfigError naming the bad variable."""
    mode = env.get(ENV_ERROR_TEXT, "").strip().lower() or ERROR_TEXT_MODES[0]
    if mode not in ERROR_TEXT_MODES:
        raise KitConfigError(
            f"{ENV_ERROR_TEXT} must be one of {', '.join(ERROR_TEXT_MODES)}, got {env[ENV_ERROR_TEXT]!r}"
        )
    cap_text = env.get(ENV_ERROR_TEXT_MAX_CHARS, "").strip() or str(MAX_ERROR_MESSAGE_CHARS)
    accepted = f"an integer from 1 to {MAX_ERROR_MESSAGE_CHARS}"
    if not (cap_text.isascii() and cap_text.isdigit()) or not 1 <= int(cap_text) <= MAX_ERROR_MESSAGE_CHARS:
        raise KitConfigError(f"{ENV_ERROR_TEXT_MAX_CHARS} must be {accepted}, got {cap_text!r}")
    return Redactor(
        max_chars=int(cap_text),
        drop_text=mode == "drop",
        extra_patterns=_redact_patterns(env.get(ENV_REDACT_PATTERNS, "").strip()),
    )


def _redact_patterns(value: str) -> tuple[re.Pattern[str], ...]:
    if not value:
        return ()
    try:
        patterns = json.loads(value)
    except (ValueError, RecursionError):
        patterns = None
    if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
        raise KitConfigError(
            f"{ENV_REDACT_PATTERNS} must be a JSON array of regular expressions "
            f'(e.g. ["card=\\\\d+"]), got {value!r}'
        )
    try:
        return compile_patterns(patterns)
    except RedactionPatternError as exc:
        raise KitConfigError(f"{ENV_REDACT_PATTERNS}: {exc}") from None


def _check_url(name: str, value: str) -> None:
    scheme, _, rest = value.partition("://")
    if scheme not in ("https", "http") or not rest or any(c.isspace() for c in value):
        raise KitConfigError(f"{name} must be an http(s) SQS queue URL, got {value!r}")
