"""The re-driver's configuration, read from environment variables once, at cold start.

What each variable accepts is defined in ``schema`` (shared with the CDK side); this module turns
the environment into one typed, frozen ``Settings``.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqs_redriver.core.breaker import BreakerPolicy
from sqs_redriver.protocol.keys import breaker_key, pause_key, runs_key, sweep_key
from sqs_redriver.protocol.settings import (
    BY_NAME,
    LAMBDA_SETTINGS,
    RENAMED_ENV,
    RESOURCE_ENV,
    URL_SEPARATOR,
    InvalidSetting,
    check_distinct_queues,
    check_queue_kinds,
    check_rules,
    default,
    is_fifo_url,
    reraise_as,
    with_new_names,
)
from sqs_redriver.runtime.consumer_health import WatchedQueue

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["ConfigError", "Settings", "load_settings"]

# Schema settings named breaker_* make up Settings.breaker, without the prefix.
BREAKER_PREFIX = "breaker_"
# What Lambda allows as a function's name (not an ARN: CloudWatch's FunctionName dimension is the name).
FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
LOG = logging.getLogger(__name__)


class ConfigError(InvalidSetting):
    """A setting is missing or outside what the re-driver accepts."""


def _breaker(values: Mapping[str, Any]) -> BreakerPolicy:
    policy = {name: value for name, value in values.items() if name.startswith(BREAKER_PREFIX)}
    return BreakerPolicy(**{name.removeprefix(BREAKER_PREFIX): value for name, value in policy.items()})


@dataclass(frozen=True)
class Settings:
    """The Lambda's settings; the defaults are the schema's."""

    dlq_url: str
    source_queue_url: str
    parking_lot_url: str
    table_name: str
    # Further source queues of a shared DLQ; messages go back to the one SQS names as their source.
    other_source_queue_urls: tuple[str, ...] = ()
    max_redrive_count: int = default("max_redrive_count")
    base_delay_seconds: int = default("base_delay_seconds")
    max_delay_seconds: int = default("max_delay_seconds")
    breaker: BreakerPolicy = _breaker({s.name: s.default for s in LAMBDA_SETTINGS})
    canary_size: int = default("canary_size")
    max_messages_per_run: int = default("max_messages_per_run")
    max_redrives_per_second: int = default("max_redrives_per_second")
    parallel_batches: int = default("parallel_batches")
    source_backlog_limit: int = default("source_backlog_limit")
    receive_wait_seconds: int = default("receive_wait_seconds")
    dlq_visibility_timeout_seconds: int = default("dlq_visibility_timeout_seconds")
    time_margin_seconds: int = default("time_margin_seconds")
    state_ttl_days: int = default("state_ttl_days")
    record_every_redrive: bool = default("record_every_redrive")
    consumer_verdicts: bool = default("consumer_verdicts")
    verdict_wait_seconds: int = default("verdict_wait_seconds")
    slow_start_seconds: int = default("slow_start_seconds")
    max_continuations: int = default("max_continuations")
    expiry_margin_seconds: int = default("expiry_margin_seconds")
    queue_metrics: bool = default("queue_metrics")
    metrics_lag_seconds: int = default("metrics_lag_seconds")
    suspect_limit: int = default("suspect_limit")
    # The archive bucket of parked messages; empty: no archive.
    archive_bucket: str = ""
    # Each source's consumer function, in source_queue_urls' order ("" where unknown); empty: none.
    consumer_function_names: tuple[str, ...] = ()

    @property
    def breaker_key(self) -> str:
        """The breaker of the source queue (SOURCE_QUEUE_URL's first): a single-source DLQ's only one."""
        return breaker_key(self.source_queue_url)

    @property
    def sweep_key(self) -> str:
        return sweep_key(self.dlq_url)

    @property
    def pause_key(self) -> str:
        return pause_key(self.dlq_url)

    @property
    def runs_key(self) -> str:
        """The run history: a summary of each of the last runs (core/table.py)."""
        return runs_key(self.dlq_url)

    @property
    def source_queue_urls(self) -> tuple[str, ...]:
        return (self.source_queue_url, *self.other_source_queue_urls)

    @property
    def fifo(self) -> bool:
        return is_fifo_url(self.dlq_url)

    @property
    def watched_queues(self) -> tuple[WatchedQueue, ...]:
        """Each source queue, with its consumer function when the construct named it."""
        names = self.consumer_function_names or ("",) * len(self.source_queue_urls)
        return tuple(
            WatchedQueue(url, name or None) for url, name in zip(self.source_queue_urls, names, strict=True)
        )


def load_settings(
    env: Mapping[str, str] | None = None, *, warn: Callable[[str], None] = LOG.warning
) -> Settings:
    """Parse and validate the settings; raise ConfigError naming the bad variable and its range.
    A variable given by its former name (protocol.settings.renamed) is read, and ``warn`` gets one
    deprecation line for it."""
    with reraise_as(ConfigError):
        env, deprecations = with_new_names(os.environ if env is None else env, RENAMED_ENV)
        for line in deprecations:
            warn(line)
        values = {setting.name: setting.from_env(env) for setting in LAMBDA_SETTINGS}
        check_rules(values, label=lambda name: BY_NAME[name].env or name)
        resources = _resources(env)
    tunables = {name: v for name, v in values.items() if not name.startswith(BREAKER_PREFIX)}
    return Settings(**resources, **tunables, breaker=_breaker(values))


def _resources(env: Mapping[str, str]) -> dict[str, Any]:
    """The queues and table the construct names; each queue in one role, all of one kind."""
    names = RESOURCE_ENV
    dlq_url = _queue_url(env, names["dlq_url"])
    source_urls = _queue_urls(env, names["source_queue_url"])
    parking_lot_url = _queue_url(env, names["parking_lot_url"])
    labelled = [
        (f"{names['dlq_url']} {dlq_url!r}", dlq_url),
        *((f"{names['source_queue_url']} {url!r}", url) for url in source_urls),
        (f"{names['parking_lot_url']} {parking_lot_url!r}", parking_lot_url),
    ]
    check_distinct_queues(labelled)
    kinds = [(label, is_fifo_url(url)) for label, url in labelled]
    check_queue_kinds(kinds[0], kinds[1:])
    return {
        "dlq_url": dlq_url,
        "source_queue_url": source_urls[0],
        "other_source_queue_urls": source_urls[1:],
        "parking_lot_url": parking_lot_url,
        "table_name": _required(env, names["table_name"]),
        "archive_bucket": env.get(names["archive_bucket"], "").strip(),
        "consumer_function_names": _function_names(env, names["consumer_function_names"], len(source_urls)),
    }


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise InvalidSetting(f"{name} is required and must not be empty")
    return value


def _queue_urls(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """One queue URL, or several separated by commas."""
    urls = tuple(url.strip() for url in _required(env, name).split(URL_SEPARATOR) if url.strip())
    for url in urls:
        if not url.startswith(("https://", "http://")):
            raise InvalidSetting(f"{name} must hold SQS queue URLs (https://...), got {url!r}")
    return urls


def _function_names(env: Mapping[str, str], name: str, sources: int) -> tuple[str, ...]:
    """One Lambda function name or an empty entry per source queue, separated by commas; none
    when unset, empty or only empty entries."""
    raw = env.get(name, "").strip()
    entries = tuple(entry.strip() for entry in raw.split(URL_SEPARATOR)) if raw else ()
    if entries and len(entries) != sources:
        raise InvalidSetting(
            f"{name} must have one entry per queue of {RESOURCE_ENV['source_queue_url']} ({sources}, "
            f"in its order; an entry may be empty), got {len(entries)}: {raw[:300]!r}"
        )
    for entry in entries:
        if entry and not FUNCTION_NAME.fullmatch(entry):
            raise InvalidSetting(
                f"{name} must hold Lambda function names (1 to 64 letters, digits, hyphens or "
                f"underscores; not ARNs), got {entry[:100]!r}"
            )
    return entries if any(entries) else ()


def _queue_url(env: Mapping[str, str], name: str) -> str:
    urls = _queue_urls(env, name)
    if len(urls) != 1:
        raise InvalidSetting(f"{name} must be one SQS queue URL, got {len(urls)}")
    return urls[0]
