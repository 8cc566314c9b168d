"""The kinds of setting (integer in a range, ratio, flag, schedule): parsing, checking, messages.

A value is checked the same way whether it comes from an environment variable (the Lambda), a
construct prop or cdk.json context (the CDK side): the message names the setting as the side calls
it and the range the schema allows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass
from typing import ClassVar, Generic, TypeVar

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
    ACCEPTS = "true or false"

    def _value(self, value: object) -> bool | None:
        return value if isinstance(value, bool) else None

    def _parse(self, text: str) -> object:
        return {"true": True, "false": False}.get(text.lower(), text)

    def to_env(self, value: bool) -> str:
        return str(value).lower()


@dataclass(frozen=True, kw_only=True)
class ScheduleSetting(Setting[str]):
    ACCEPTS = "'rate(N minutes|hours|days)' or 'cron(...)'"

    def _value(self, value: object) -> str | None:
        return value if isinstance(value, str) and SCHEDULE_PATTERN.match(value) else None
