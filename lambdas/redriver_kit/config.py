"""The kit's configuration, read from environment variables once, at cold start.

The names are defined here and nowhere else: the re-driver's construct sets them on the consumer
function (``infra/``) by importing these constants.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from redriver.sqs_limits import SQS_MAX_RECEIVE_COUNT

# The DLQ of the consumer's source queue: where the kit dead-letters a message itself.
ENV_DLQ_URL = "REDRIVER_DLQ_URL"
# The re-driver's state table: verdict counters, and failures of messages with no room for a mark.
ENV_TABLE_NAME = "REDRIVER_TABLE_NAME"
# The source queue's RedrivePolicy maxReceiveCount: the attempt that would dead-letter a message.
ENV_MAX_RECEIVE_COUNT = "REDRIVER_MAX_RECEIVE_COUNT"
ENVIRONMENT_VARIABLES = (ENV_DLQ_URL, ENV_TABLE_NAME, ENV_MAX_RECEIVE_COUNT)

MIN_RECEIVE_COUNT = 1
MAX_RECEIVE_COUNT = SQS_MAX_RECEIVE_COUNT
FIFO_SUFFIX = ".fifo"


class KitConfigError(ValueError):
    """A kit setting is missing or outside what the kit accepts; the message names the variable."""


@dataclass(frozen=True)
class KitConfig:
    """Where the kit writes, and when a delivery is the one that would dead-letter the message."""

    dlq_url: str
    table_name: str
    max_receive_count: int

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
    )


def _check_url(name: str, value: str) -> None:
    scheme, _, rest = value.partition("://")
    if scheme not in ("https", "http") or not rest or any(c.isspace() for c in value):
        raise KitConfigError(f"{name} must be an http(s) SQS queue URL, got {value!r}")
