"""Settings renamed in a release: the old name keeps working for that release, with a warning.

``RENAMED`` is the table (old construct / cdk.json name and old environment variable -> the
setting's new name). The Lambda reads an old variable at cold start and logs one deprecation line
(``sqs_redriver.runtime.settings``); the construct takes an old prop or context key and adds a
warning to the synth (``sqs_redriver.cdk.settings``). An old name given beside its new one with
another value is an error naming both. The next release removes the entries of this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from sqs_redriver.protocol.settings.kinds import InvalidSetting

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
