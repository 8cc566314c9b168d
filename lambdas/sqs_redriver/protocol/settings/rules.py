"""The rules between settings, and between queues, each written once for both sides.

A rule is checked wherever every setting it names is known: the Lambda checks those between its
environment variables, the CDK side all of them (it alone knows the Lambda timeout). Messages name
the settings as the side calls them: ``label`` maps a schema name to the variable or prop.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqs_redriver.protocol.settings.kinds import InvalidSetting


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
