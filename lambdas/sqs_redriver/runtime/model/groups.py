"""An operator's decision about one failure group (a fingerprint): retry it, or park it.

One record per fingerprint and action in the state table (``RETRY#<fingerprint>``,
``PARK#<fingerprint>``), written by the operator's tool and read by every batch that has a failure
of that fingerprint. A fingerprint is either retried or parked: writing one action deletes the
other; when both are found anyway (written by hand), parking wins, the safe side.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from sqs_redriver.protocol.keys import park_record_key, retry_record_key


class GroupAction(StrEnum):
    RETRY = "retry"  # re-drive its terminal failures instead of parking them
    PARK = "park"  # park every failure of it on sight, terminal or transient


@dataclass(frozen=True)
class GroupMark:
    """Who decided what about a failure group, why, and when (epoch seconds)."""

    fingerprint: str
    action: GroupAction
    reason: str = ""
    by: str = ""
    at: int = 0

    @property
    def key(self) -> str:
        """The state table key of this record."""
        return group_record_key(self.action, self.fingerprint)

    @property
    def other_key(self) -> str:
        """The key of the other action's record for the same fingerprint (deleted on write)."""
        other = GroupAction.RETRY if self.action is GroupAction.PARK else GroupAction.PARK
        return group_record_key(other, self.fingerprint)


def group_record_key(action: GroupAction, fingerprint: str) -> str:
    return park_record_key(fingerprint) if action is GroupAction.PARK else retry_record_key(fingerprint)


def prevailing(marks: Iterable[GroupMark]) -> tuple[dict[str, GroupMark], list[str]]:
    """One mark per fingerprint, PARK over RETRY; and the fingerprints that had both."""
    found: dict[str, GroupMark] = {}
    both: list[str] = []
    for mark in marks:
        held = found.get(mark.fingerprint)
        if held is not None and held.action is not mark.action:
            both.append(mark.fingerprint)
        if held is None or mark.action is GroupAction.PARK:
            found[mark.fingerprint] = mark
    return found, sorted(both)
