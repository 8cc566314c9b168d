"""The settings schema: every tunable setting of the re-driver, defined once.

A setting has its construct / cdk.json name, the re-drive Lambda's environment variable (none for
deploy-only settings), its kind, default, allowed range and a one-line meaning. The Lambda parses its
environment with it at cold start (``sqs_redriver.runtime.settings``); the CDK side validates
construct props and cdk.json context with it at synth (``sqs_redriver.cdk.settings``); the
configuration table of docs/configuration.md is rendered from it. Here, in order: the kinds of
setting, the settings by theme (consumer metrics, backoff, breaker, function, pacing, retention), the
consumer kit's environment names, the renames of a release, the rules between settings, and the
schema they make up. Standard library only: it is cold-start code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar, Generic, TypeVar

from sqs_redriver.protocol.limits import (
    LAMBDA_MAX_TIMEOUT_SECONDS,
    MAX_MARK_HISTORY,
    SQS_MAX_BATCH_SIZE,
    SQS_MAX_DELAY_SECONDS,
    SQS_MAX_RECEIVE_COUNT,
    SQS_MAX_RECEIVE_WAIT_SECONDS,
    SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
)

SCHEDULE_PATTERN = re.compile(r"^(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(.+\))$")


T = TypeVar("T")


class InvalidSetting(ValueError):
    """A value outside what the re-driver accepts; the message names the setting and the range."""


@contextmanager
def reraise_as(error: type[InvalidSetting]) -> Iterator[None]:
    """Each side raises its own error class (ConfigError, SettingsError) for the schema's findings."""
    try:
        yield
    except InvalidSetting as exc:
        if isinstance(exc, error):
            raise
        raise error(str(exc)) from None


@dataclass(frozen=True)
class Setting(Generic[T]):
    name: str  # the construct prop and cdk.json key; the Lambda's Settings field
    env: str | None  # the re-drive Lambda's variable; None: deploy-only
    _: KW_ONLY
    default: T
    meaning: str  # one line, for the README
    context: bool = True  # settable in the construct and cdk.json; False: the Lambda's only
    shown_default: str | None = None  # the README's default, where another setting decides it

    # What a value must be, for messages; its range for the README ("" where ``meaning`` says it).
    # Templates over the setting's fields, e.g. "an integer from {low} to {high}".
    ACCEPTS: ClassVar[str]
    LIMITS: ClassVar[str] = ""
    # The type of its field in the typed settings generated from the schema (make readme).
    PYTHON_TYPE: ClassVar[str]

    @property
    def accepts(self) -> str:
        return self.ACCEPTS.format_map(vars(self))

    @property
    def limits(self) -> str:
        return self.LIMITS.format_map(vars(self))

    def _value(self, value: object) -> T | None:
        """``value`` if it has the right type and is in range, else None."""
        raise NotImplementedError

    def _parse(self, text: str) -> object:
        return text

    def check(self, value: object, label: str) -> T:
        """A typed value (a construct prop), or InvalidSetting naming ``label`` and the range."""
        checked = self._value(value)
        if checked is None:
            raise InvalidSetting(f"{label} must be {self.accepts}, got {value!r}")
        return checked

    def parse(self, raw: object, label: str) -> T:
        """A value from text (an environment variable, a cdk.json or ``-c`` string) or typed."""
        return self.check(self._parse(raw.strip()) if isinstance(raw, str) else raw, label)

    def from_env(self, env: Mapping[str, str]) -> T:
        assert self.env, f"{self.name} is deploy-only"
        raw = env.get(self.env, "").strip()
        return self.parse(raw, self.env) if raw else self.default

    def to_env(self, value: T) -> str:
        return str(value)


def _number(text: str, convert: Callable[[str], object]) -> object:
    """``text`` as a number, or as it is: the check then refuses it, quoting it."""
    try:
        return convert(text)
    except ValueError:
        return text


@dataclass(frozen=True, kw_only=True)
class IntSetting(Setting[int]):
    low: int
    high: int

    PYTHON_TYPE = "int"
    ACCEPTS = "an integer from {low} to {high}"
    LIMITS = "{low:,}-{high:,}"

    def _value(self, value: object) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high:
            return value
        return None

    def _parse(self, text: str) -> object:
        return _number(text, int)


@dataclass(frozen=True, kw_only=True)
class RatioSetting(Setting[float]):
    PYTHON_TYPE = "float"
    ACCEPTS = "a number in (0, 1]"
    LIMITS = "above 0, at most 1"

    def _value(self, value: object) -> float | None:
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1:
            return float(value)
        return None  # NaN too

    def _parse(self, text: str) -> object:
        return _number(text, float)


@dataclass(frozen=True, kw_only=True)
class BoolSetting(Setting[bool]):
    PYTHON_TYPE = "bool"
    ACCEPTS = "true or false"

    def _value(self, value: object) -> bool | None:
        return value if isinstance(value, bool) else None

    def _parse(self, text: str) -> object:
        return {"true": True, "false": False}.get(text.lower(), text)

    def to_env(self, value: bool) -> str:
        return str(value).lower()


@dataclass(frozen=True, kw_only=True)
class ScheduleSetting(Setting[str]):
    PYTHON_TYPE = "str"
    ACCEPTS = "'rate(N minutes|hours|days)' or 'cron(...)'"

    def _value(self, value: object) -> str | None:
        return value if isinstance(value, str) and SCHEDULE_PATTERN.match(value) else None


# CloudWatch publishes AWS/SQS and AWS/Lambda sums a few minutes late; past 15 minutes a reading
# says more about the past than about the consumer now.
MIN_METRICS_LAG_SECONDS = 60


MAX_METRICS_LAG_SECONDS = 900


ACTIVITY_SETTINGS: tuple[Setting[Any], ...] = (
    BoolSetting(
        "queue_metrics",
        "QUEUE_METRICS",
        default=True,
        meaning="judge each source's consumer by the CloudWatch metrics of its queue (and of its "
        "function, when `grant_consumer` named it): one `GetMetricData` read per run, which the "
        "function's role is then granted",
    ),
    IntSetting(
        "metrics_lag_seconds",
        "METRICS_LAG_SECONDS",
        default=180,
        low=MIN_METRICS_LAG_SECONDS,
        high=MAX_METRICS_LAG_SECONDS,
        meaning="minutes that ended less than this long ago are not judged: CloudWatch may not "
        "have published them yet",
    ),
    # A message's mark holds at most MAX_MARK_HISTORY re-drives, so it can count no more failures.
    IntSetting(
        "suspect_limit",
        "SUSPECT_LIMIT",
        default=3,
        low=1,
        high=MAX_MARK_HISTORY,
        meaning="failures while the consumer processed other messages before a message is parked as poison",
    ),
)


# Backoff steps past SQS's 900 s DelaySeconds wait in the DLQ. A day bounds how long a message sits
# there between two re-drives: well inside the DLQ's retention (4 days by default), and in at most
# three holds of the 12 hours SQS allows; a message that needs longer is for the parking lot.
MAX_BACKOFF_SECONDS = 86_400


BACKOFF_SETTINGS: tuple[Setting[Any], ...] = (
    ScheduleSetting(
        "schedule",
        None,
        default="rate(5 minutes)",
        meaning="EventBridge schedule (`rate(...)` or `cron(...)`)",
    ),
    # The history in a message's mark grows by one entry per re-drive; 50 keeps it in budget.
    IntSetting(
        "max_redrive_count",
        "MAX_REDRIVE_COUNT",
        default=5,
        low=1,
        high=MAX_MARK_HISTORY,
        meaning="re-drives before a message is parked",
    ),
    IntSetting(
        "base_delay_seconds",
        "BASE_DELAY_SECONDS",
        default=60,
        low=0,
        high=MAX_BACKOFF_SECONDS,
        meaning="first re-drive's delay step",
    ),
    IntSetting(
        "max_delay_seconds",
        "MAX_DELAY_SECONDS",
        default=SQS_MAX_DELAY_SECONDS,
        low=0,
        high=MAX_BACKOFF_SECONDS,
        meaning=f"delay cap; a step past {SQS_MAX_DELAY_SECONDS} s (the longest `DelaySeconds`) is "
        "waited out hidden in the DLQ",
    ),
)


BREAKER_SETTINGS: tuple[Setting[Any], ...] = (
    IntSetting(
        "breaker_failure_threshold",
        "BREAKER_FAILURE_THRESHOLD",
        default=3,
        low=1,
        high=100,
        meaning="consecutive runs failed by AWS errors that open the breaker "
        "(a failure by ratio opens it at once)",
    ),
    IntSetting(
        "breaker_cooldown_seconds",
        "BREAKER_COOLDOWN_SECONDS",
        default=60,
        low=0,
        high=86_400,
        meaning="time OPEN before a canary probes",
    ),
    IntSetting(
        "breaker_success_threshold",
        "BREAKER_SUCCESS_THRESHOLD",
        default=2,
        low=1,
        high=100,
        meaning="healthy canaries that close it",
    ),
    RatioSetting(
        "breaker_failure_ratio",
        "BREAKER_FAILURE_RATIO",
        default=0.5,
        meaning="share of received messages that came back which makes a run failed",
    ),
    # Mature breakers' minimum throughput: one or two messages that keep failing (poison) are not
    # an outage.
    IntSetting(
        "breaker_minimum_volume",
        "BREAKER_MINIMUM_VOLUME",
        default=3,
        low=1,
        high=1000,
        meaning="distinct messages that must have come back before the ratio can fail a run",
    ),
    BoolSetting(
        "consumer_verdicts",
        "CONSUMER_VERDICTS",
        default=False,
        meaning="the consumer reports verdicts with the consumer kit (`grant_consumer` sets it): "
        "canaries and slow start's trial wait for them",
    ),
    IntSetting(
        "verdict_wait_seconds",
        "VERDICT_WAIT_SECONDS",
        default=20,
        low=1,
        high=300,
        meaning="how long a probe or a trial waits inside a run for the consumer's verdicts",
    ),
)


LAMBDA_MIN_MEMORY_MB = 128


LAMBDA_MAX_MEMORY_MB = 10_240


# AWS's guidance for a queue that feeds Lambda: visibility timeout at least 6x the function's.
VISIBILITY_TO_TIMEOUT_RATIO = 6


# The construct hides the DLQ messages a run holds this much longer than a run can last, so a
# message a run holds cannot reach an overlapping run.
DLQ_VISIBILITY_MARGIN_SECONDS = 30


FUNCTION_SETTINGS: tuple[Setting[Any], ...] = (
    IntSetting(
        "redriver_timeout_seconds",
        None,
        default=120,
        low=30,
        high=LAMBDA_MAX_TIMEOUT_SECONDS,
        meaning="Lambda timeout; DLQ messages a run holds stay hidden this long "
        f"+ {DLQ_VISIBILITY_MARGIN_SECONDS} s",
    ),
    # Lambda's CPU follows memory (one vCPU at 1,769 MB): at 512 MB a large drain's worker has 0.29
    # of one, about 280 re-drives a second at its measured ~1 ms a message (bench.worker_cpu), over
    # the 150 a second of pace each is given; at 256 MB it would be 140, and 16 workers could not
    # keep 2,000 a second.
    IntSetting(
        "redriver_memory_mb",
        None,
        default=512,
        low=LAMBDA_MIN_MEMORY_MB,
        high=LAMBDA_MAX_MEMORY_MB,
        meaning="Lambda memory (its share of a vCPU bounds a large drain's worker)",
    ),
    # At most half of the longest Lambda timeout; RULES hold it to half of the actual one.
    IntSetting(
        "time_margin_seconds",
        "TIME_MARGIN_SECONDS",
        default=30,
        low=1,
        high=LAMBDA_MAX_TIMEOUT_SECONDS // 2,
        meaning="stop taking batches when less time than this remains",
    ),
    IntSetting(
        "max_receive_count",
        None,
        default=5,
        low=1,
        high=SQS_MAX_RECEIVE_COUNT,
        meaning="default stack only: source queue's RedrivePolicy",
    ),
    IntSetting(
        "consumer_timeout_seconds",
        None,
        default=30,
        low=1,
        high=LAMBDA_MAX_TIMEOUT_SECONDS,
        meaning="default stack only: consumer timeout",
    ),
    IntSetting(
        "source_visibility_timeout_seconds",
        None,
        default=0,
        low=0,
        high=SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
        meaning="default stack only: source queue visibility timeout",
        shown_default=f"0 (= {VISIBILITY_TO_TIMEOUT_RATIO} × consumer timeout)",
    ),
    # Lambda-only: the construct derives it from redriver_timeout_seconds. Unset (the Lambda
    # deployed without the construct): longer than the longest Lambda timeout.
    IntSetting(
        "dlq_visibility_timeout_seconds",
        "DLQ_VISIBILITY_TIMEOUT_SECONDS",
        default=960,
        low=1,
        high=SQS_MAX_VISIBILITY_TIMEOUT_SECONDS,
        meaning="how long a run keeps received DLQ messages hidden from other runs",
        context=False,
        shown_default=f"timeout + {DLQ_VISIBILITY_MARGIN_SECONDS} (set by the construct; 960 if unset)",
    ),
)


def dlq_visibility_timeout(redriver_timeout_seconds: int) -> int:
    """How long a run keeps the DLQ messages it received hidden: its timeout and a margin."""
    return redriver_timeout_seconds + DLQ_VISIBILITY_MARGIN_SECONDS


def fans_out(max_workers: int, *, dead_letter_sources: bool, consumer_verdicts: bool) -> bool:
    """Whether a re-driver drains large backlogs in workers: more than one allowed, SQS sources (a
    DLQ of another kind has no source queue to pace by), and a consumer that reports verdicts with
    the kit (``CONSUMER_VERDICTS``, which ``grant_consumer`` sets): a drain is never faster than its
    failure signal, and without the kit the first signal is a return, a visibility timeout times
    maxReceiveCount after the failure (15 minutes by default), so one chain at
    MAX_REDRIVES_PER_SECOND drains instead."""
    return max_workers > 1 and not dead_letter_sources and consumer_verdicts


def redriver_concurrency(max_workers: int, *, dead_letter_sources: bool, consumer_verdicts: bool) -> int:
    """The re-drive function's reserved concurrency: a large drain's workers and one more for the
    schedule's tick (never throttled past its event age by a drain at full width); one run at a
    time for a re-driver that does not fan out."""
    drains = fans_out(
        max_workers, dead_letter_sources=dead_letter_sources, consumer_verdicts=consumer_verdicts
    )
    return max_workers + 1 if drains else 1


PACING_SETTINGS: tuple[Setting[Any], ...] = (
    IntSetting(
        "slow_start_seconds",
        "SLOW_START_SECONDS",
        default=60,
        low=0,
        high=LAMBDA_MAX_TIMEOUT_SECONDS,
        meaning="without verdicts: seconds a run's re-drive rate takes to double from 1/s to the "
        "rate limit; 0 turns slow start off",
    ),
    # Canaries are taken from one receive.
    IntSetting(
        "canary_size",
        "CANARY_SIZE",
        default=1,
        low=1,
        high=SQS_MAX_BATCH_SIZE,
        meaning="messages per HALF_OPEN probe",
    ),
    # A run is bounded by its time budget first (about 4,500 re-drives at the default rate and
    # timeout); the limit bounds what one run may move, and continuation carries on after it.
    IntSetting(
        "max_messages_per_run",
        "MAX_MESSAGES_PER_RUN",
        default=10_000,
        low=1,
        high=100_000,
        meaning="per-run limit",
    ),
    IntSetting(
        "max_continuations",
        "MAX_CONTINUATIONS",
        default=100,
        low=0,
        high=10_000,
        meaning="runs that may follow a run at once while the breaker is CLOSED and work is left "
        "(a chain; the next tick starts a new one); 0: only the schedule starts runs",
    ),
    IntSetting(
        "max_redrives_per_second",
        "MAX_REDRIVES_PER_SECOND",
        default=50,
        low=1,
        high=500,
        meaning="token-bucket rate limit on re-drives",
    ),
    IntSetting(
        "parallel_batches",
        "PARALLEL_BATCHES",
        default=4,
        low=1,
        high=16,
        meaning="batches in flight at once within a run",
    ),
    IntSetting(
        "max_workers",
        "MAX_WORKERS",
        default=16,
        low=1,
        high=200,
        meaning="re-drive workers (Lambda invocations) a large drain may run at once, with a "
        "consumer that reports verdicts (the kit); also the function's reserved concurrency; 1: one "
        "chain of runs",
    ),
    IntSetting(
        "max_drain_rate",
        "MAX_DRAIN_RATE",
        default=5000,
        low=1,
        high=100_000,
        meaning="the most re-drives a second a large drain's workers send together, however fast "
        "the consumer takes them",
    ),
    IntSetting(
        "fan_out_backlog",
        "FAN_OUT_BACKLOG",
        default=10_000,
        low=1,
        high=100_000_000,
        meaning="DLQ messages from which a drain fans out to workers paced by the consumer's "
        "backlog; below, one chain at MAX_REDRIVES_PER_SECOND",
    ),
    IntSetting(
        "source_backlog_limit",
        "SOURCE_BACKLOG_LIMIT",
        default=1000,
        low=0,
        high=10_000_000,
        meaning="back-pressure: no re-drives while a source queue holds more; 0 turns it off",
    ),
    BoolSetting(
        "record_every_redrive",
        "RECORD_EVERY_REDRIVE",
        default=False,
        meaning="also write a table record for every re-drive of a marked message "
        "(an audit trail, one write unit each)",
    ),
    IntSetting(
        "receive_wait_seconds",
        "RECEIVE_WAIT_SECONDS",
        default=1,
        low=0,
        high=SQS_MAX_RECEIVE_WAIT_SECONDS,
        meaning="long-poll wait of each DLQ receive",
    ),
)


RETENTION_SETTINGS: tuple[Setting[Any], ...] = (
    # Parked at least this long before the DLQ's retention ends; the retention sweep of runs that do
    # not scan (breaker OPEN, WATCH) comes every half of it, so it must span several schedule periods.
    IntSetting(
        "expiry_margin_seconds",
        "EXPIRY_MARGIN_SECONDS",
        default=86_400,
        low=60,
        high=7 * 86_400,
        meaning="park a DLQ message this close to the end of the DLQ's retention (reason `expiring`)",
    ),
    IntSetting(
        "state_ttl_days",
        "STATE_TTL_DAYS",
        default=14,
        low=1,
        high=365,
        meaning="lifetime of message records in the table",
        context=False,
    ),
)


# The DLQ of the consumer's source queue: where the kit dead-letters a message itself.
ENV_DLQ_URL = "REDRIVER_DLQ_URL"


# The re-driver's state table: verdict counters, and failures of messages with no room for a mark.
ENV_TABLE_NAME = "REDRIVER_TABLE_NAME"


# The source queue's RedrivePolicy maxReceiveCount: the attempt that would dead-letter a message.
ENV_MAX_RECEIVE_COUNT = "REDRIVER_MAX_RECEIVE_COUNT"


ENVIRONMENT_VARIABLES = (ENV_DLQ_URL, ENV_TABLE_NAME, ENV_MAX_RECEIVE_COUNT)


# Optional, set by the user: what of an exception's text leaves the consumer (see redact.py).
# "redact" (the default: secrets masked, length capped) or "drop" (the exception's class only).
ENV_ERROR_TEXT = "REDRIVER_ERROR_TEXT"


ERROR_TEXT_MODES = ("redact", "drop")


# Longest exception text kept, in characters (1 to MAX_ERROR_MESSAGE_CHARS, the default).
ENV_ERROR_TEXT_MAX_CHARS = "REDRIVER_ERROR_TEXT_MAX_CHARS"


# More secrets to mask: a JSON array of Python regular expressions (a group named "secret", if any,
# is what is masked; else the whole match).
ENV_REDACT_PATTERNS = "REDRIVER_REDACT_PATTERNS"


V = TypeVar("V")


@dataclass(frozen=True)
class Renamed:
    """A setting's former names: as a construct prop / cdk.json key and as a Lambda variable."""

    old_name: str
    old_env: str | None
    new_name: str
    new_env: str | None


RENAMED: tuple[Renamed, ...] = (
    # MAX_REDRIVES read like a per-run cap beside MAX_MESSAGES_PER_RUN and MAX_REDRIVES_PER_SECOND;
    # it is one message's count, as SQS's maxReceiveCount.
    Renamed("max_redrives", "MAX_REDRIVES", "max_redrive_count", "MAX_REDRIVE_COUNT"),
)


RENAMED_ENV = {r.old_env: r.new_env for r in RENAMED if r.old_env and r.new_env}


RENAMED_NAMES = {r.old_name: r.new_name for r in RENAMED}


def deprecation_line(old: str, new: str) -> str:
    """The warning for a setting given by its old name."""
    return f"{old} is deprecated: it was renamed {new}. Set {new}; {old} is read in this release only."


def both_given(old: str, new: str, old_value: object, new_value: object) -> InvalidSetting:
    """The error for a setting given by both its names, with different values."""
    return InvalidSetting(
        f"{old} and {new} are both set, to {old_value!r} and {new_value!r}: {old} is the old name of "
        f"{new}; set {new} only"
    )


def with_new_names(values: Mapping[str, V], renamed: Mapping[str, str]) -> tuple[dict[str, V], list[str]]:
    """``values`` with each old name's value under its new name, and a deprecation line for each
    old name given. InvalidSetting, naming both, when a new name is given too with another value."""
    current = dict(values)
    lines = []
    for old, new in renamed.items():
        if old not in current:
            continue
        value = current.pop(old)
        if new in current and str(current[new]).strip() != str(value).strip():
            raise both_given(old, new, value, current[new])
        current.setdefault(new, value)
        lines.append(deprecation_line(old, new))
    return current, lines


@dataclass(frozen=True)
class Rule:
    """``setting`` must be ``relation`` ``other``; checked wherever both are known."""

    setting: str
    relation: str
    other: str
    holds: Callable[[Any, Any], bool]
    why: str = ""

    def check(self, values: Mapping[str, object], label: Callable[[str], str]) -> None:
        if self.setting not in values or self.other not in values:
            return
        value, other = values[self.setting], values[self.other]
        if not self.holds(value, other):
            why = f": {self.why}" if self.why else ""
            raise InvalidSetting(
                f"{label(self.setting)} ({value}) must be {self.relation} {label(self.other)} ({other}){why}"
            )


RULES = (
    Rule("max_delay_seconds", "at least", "base_delay_seconds", lambda cap, base: cap >= base),
    Rule(
        "time_margin_seconds",
        "longer than",
        "receive_wait_seconds",
        lambda margin, wait: margin > wait,
        "a run must be able to finish its last batch",
    ),
    # The Lambda does not know its timeout: checked at synth.
    Rule(
        "time_margin_seconds",
        "at most half of",
        "redriver_timeout_seconds",
        lambda margin, timeout: 2 * margin <= timeout,
        "the rest of the timeout is the run's working time",
    ),
    Rule(
        "verdict_wait_seconds",
        "at most half of",
        "redriver_timeout_seconds",
        lambda wait, timeout: 2 * wait <= timeout,
        "a probe that waited must still have time to re-drive",
    ),
    Rule(
        "source_visibility_timeout_seconds",
        "0 or at least",
        "consumer_timeout_seconds",
        lambda visibility, timeout: visibility == 0 or visibility >= timeout,
        "a message must stay hidden while the consumer works on it",
    ),
)


def check_rules(values: Mapping[str, object], label: Callable[[str], str]) -> None:
    for rule in RULES:
        rule.check(values, label)


def is_fifo_url(url: str) -> bool:
    return url.rstrip("/").endswith(".fifo")


def check_queue_kinds(dlq: tuple[str, bool], queues: Iterable[tuple[str, bool]]) -> None:
    """A FIFO DLQ serves FIFO queues only, and its poison needs a FIFO parking lot; and vice versa."""
    dlq_label, dlq_fifo = dlq
    for label, fifo in queues:
        if fifo != dlq_fifo:
            raise InvalidSetting(
                f"{label} and {dlq_label} must be the same kind of queue (here "
                f"{_kind(fifo)} and {_kind(dlq_fifo)}): a FIFO DLQ serves FIFO queues and parks into "
                "a FIFO parking lot, a standard DLQ standard ones"
            )


def check_distinct_queues(queues: Sequence[tuple[str, Hashable]]) -> None:
    """Each role (DLQ, every source, parking lot) its own queue; ``queues`` holds (label, identity)."""
    seen: dict[Hashable, str] = {}
    for label, queue in queues:
        if queue in seen:
            raise InvalidSetting(f"{seen[queue]} and {label} must be different queues")
        seen[queue] = label


def _kind(fifo: bool) -> str:
    return "FIFO" if fifo else "standard"


# The resources' variables: set by the construct, required by the Lambda, no defaults.
RESOURCE_ENV = {
    "dlq_url": "DLQ_URL",
    "source_queue_url": "SOURCE_QUEUE_URL",  # a shared DLQ's source queues, separated by commas
    "parking_lot_url": "PARKING_LOT_URL",
    "table_name": "DYNAMODB_TABLE_NAME",
    "archive_bucket": "ARCHIVE_BUCKET",  # optional: empty or unset, parked messages are not archived
    # Optional: each source queue's consumer function, in SOURCE_QUEUE_URL's order, separated by
    # commas; an entry may be empty (grant_consumer fills them in). Unset or empty: none known.
    "consumer_function_names": "CONSUMER_FUNCTION_NAMES",
    # A DLQ of another kind (protocol/sources.py): its sources as JSON, SOURCE_QUEUE_URL then unset.
    "dead_letter_sources": "DEAD_LETTER_SOURCES",
}


URL_SEPARATOR = ","


# In this order in the README's configuration table.
SCHEMA: tuple[Setting[Any], ...] = (
    *BACKOFF_SETTINGS,
    *BREAKER_SETTINGS,
    *ACTIVITY_SETTINGS,
    *PACING_SETTINGS,
    *FUNCTION_SETTINGS,
    *RETENTION_SETTINGS,
)


BY_NAME = {setting.name: setting for setting in SCHEMA}


LAMBDA_SETTINGS = tuple(setting for setting in SCHEMA if setting.env)


CONTEXT_SETTINGS = tuple(setting for setting in SCHEMA if setting.context)


def default(name: str) -> Any:
    return BY_NAME[name].default


OUTPUT_DESCRIPTION = "sqs-redriver deployment (read by the sqs-redriver command-line tool)"
