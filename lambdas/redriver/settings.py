"""The re-driver's configuration, read from environment variables once, at cold start."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from redriver.decide.backoff import SQS_MAX_DELAY_SECONDS
from redriver.decide.breaker import BreakerPolicy


class ConfigError(ValueError):
    """A setting is missing or outside what the re-driver accepts."""


@dataclass(frozen=True)
class Settings:
    dlq_url: str
    source_queue_url: str
    parking_lot_url: str
    table_name: str
    # Further source queues of a shared DLQ; messages go back to the one SQS names as their source.
    other_source_queue_urls: tuple[str, ...] = ()
    max_redrives: int = 5
    base_delay_seconds: int = 60
    max_delay_seconds: int = SQS_MAX_DELAY_SECONDS
    breaker: BreakerPolicy = BreakerPolicy()
    canary_size: int = 1
    max_messages_per_run: int = 500
    max_redrives_per_second: int = 50
    parallel_batches: int = 4
    source_backlog_limit: int = 1000
    receive_wait_seconds: int = 1
    dlq_visibility_timeout_seconds: int = 960
    time_margin_seconds: int = 30
    state_ttl_days: int = 14
    record_every_redrive: bool = False

    @property
    def breaker_key(self) -> str:
        return f"BREAKER#{self.source_queue_url}"

    @property
    def source_queue_urls(self) -> tuple[str, ...]:
        return (self.source_queue_url, *self.other_source_queue_urls)

    @property
    def fifo(self) -> bool:
        return self.dlq_url.rstrip("/").endswith(".fifo")


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is required and must not be empty")
    return value


def _queue_urls(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """One queue URL, or several separated by commas."""
    urls = tuple(url.strip() for url in _required(env, name).split(",") if url.strip())
    for url in urls:
        if not url.startswith(("https://", "http://")):
            raise ConfigError(f"{name} must hold SQS queue URLs (https://...), got {url!r}")
    return urls


def _queue_url(env: Mapping[str, str], name: str) -> str:
    urls = _queue_urls(env, name)
    if len(urls) != 1:
        raise ConfigError(f"{name} must be one SQS queue URL, got {len(urls)}")
    return urls[0]


def _check_queue_kinds(dlq_url: str, parking_lot_url: str, source_urls: tuple[str, ...]) -> None:
    """A FIFO DLQ serves FIFO sources only, and its poison needs a FIFO parking lot; and vice versa."""
    fifo = dlq_url.rstrip("/").endswith(".fifo")
    kind = "FIFO" if fifo else "standard"
    for name, url in [("PARKING_LOT_URL", parking_lot_url)] + [("SOURCE_QUEUE_URL", u) for u in source_urls]:
        if url.rstrip("/").endswith(".fifo") != fifo:
            raise ConfigError(f"{name} {url!r} must be a {kind} queue, like DLQ_URL {dlq_url!r}")


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer from {low} to {high}, got {raw!r}") from None
    if not low <= value <= high:
        raise ConfigError(f"{name} must be an integer from {low} to {high}, got {value}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw not in ("true", "false"):
        raise ConfigError(f"{name} must be true or false, got {raw!r}")
    return raw == "true"


def _ratio(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number in (0, 1], got {raw!r}") from None
    if not 0 < value <= 1:
        raise ConfigError(f"{name} must be a number in (0, 1], got {value}")
    return value


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Parse and validate the settings; raise ConfigError naming the bad variable."""
    env = os.environ if env is None else env
    base_delay = _int(env, "BASE_DELAY_SECONDS", 60, 0, SQS_MAX_DELAY_SECONDS)
    max_delay = _int(env, "MAX_DELAY_SECONDS", SQS_MAX_DELAY_SECONDS, 0, SQS_MAX_DELAY_SECONDS)
    if max_delay < base_delay:
        raise ConfigError(f"MAX_DELAY_SECONDS ({max_delay}) must be >= BASE_DELAY_SECONDS ({base_delay})")
    receive_wait = _int(env, "RECEIVE_WAIT_SECONDS", 1, 0, 20)
    margin = _int(env, "TIME_MARGIN_SECONDS", 30, 1, 600)
    if margin <= receive_wait:
        raise ConfigError(
            f"TIME_MARGIN_SECONDS ({margin}) must be longer than RECEIVE_WAIT_SECONDS ({receive_wait}): "
            "a run must be able to finish its last batch"
        )
    urls = {name: _queue_url(env, name) for name in ("DLQ_URL", "PARKING_LOT_URL")}
    source_urls = _queue_urls(env, "SOURCE_QUEUE_URL")
    urls["SOURCE_QUEUE_URL"] = source_urls[0]
    _check_queue_kinds(urls["DLQ_URL"], urls["PARKING_LOT_URL"], source_urls)
    if len({*urls.values(), *source_urls}) != len(urls) + len(source_urls) - 1:
        raise ConfigError("DLQ_URL, every SOURCE_QUEUE_URL and PARKING_LOT_URL must be different queues")
    return Settings(
        dlq_url=urls["DLQ_URL"],
        source_queue_url=urls["SOURCE_QUEUE_URL"],
        other_source_queue_urls=source_urls[1:],
        parking_lot_url=urls["PARKING_LOT_URL"],
        table_name=_required(env, "DYNAMODB_TABLE_NAME"),
        # The history in a message's mark grows by one entry per re-drive; 50 keeps it in budget.
        max_redrives=_int(env, "MAX_REDRIVES", 5, 1, 50),
        base_delay_seconds=base_delay,
        max_delay_seconds=max_delay,
        breaker=BreakerPolicy(
            failure_threshold=_int(env, "BREAKER_FAILURE_THRESHOLD", 3, 1, 100),
            cooldown_seconds=_int(env, "BREAKER_COOLDOWN_SECONDS", 60, 0, 86_400),
            success_threshold=_int(env, "BREAKER_SUCCESS_THRESHOLD", 2, 1, 100),
            failure_ratio=_ratio(env, "BREAKER_FAILURE_RATIO", 0.5),
        ),
        canary_size=_int(env, "CANARY_SIZE", 1, 1, 10),
        max_messages_per_run=_int(env, "MAX_MESSAGES_PER_RUN", 500, 1, 100_000),
        max_redrives_per_second=_int(env, "MAX_REDRIVES_PER_SECOND", 50, 1, 500),
        parallel_batches=_int(env, "PARALLEL_BATCHES", 4, 1, 16),
        source_backlog_limit=_int(env, "SOURCE_BACKLOG_LIMIT", 1000, 0, 10_000_000),
        receive_wait_seconds=receive_wait,
        dlq_visibility_timeout_seconds=_int(env, "DLQ_VISIBILITY_TIMEOUT_SECONDS", 960, 1, 43_200),
        time_margin_seconds=margin,
        state_ttl_days=_int(env, "STATE_TTL_DAYS", 14, 1, 365),
        record_every_redrive=_bool(env, "RECORD_EVERY_REDRIVE", False),
    )
