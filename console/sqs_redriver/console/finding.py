"""Finding messages without consuming them: every message of a queue, or the first one wanted of
the parking lot and the DLQ. Every message read is given back at once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqs_redriver.console.aws import Coverage
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.console.shown import inert_str, some
from sqs_redriver.console.tool import NotFound, Tool

# Enough of a MessageId for `show` (it takes a prefix), short enough for a table row.
SAMPLE_ID_CHARS = 13


@dataclass(frozen=True)
class Read:
    """Every message a scan of one queue read, and what it could not read (None: it read all)."""

    where: Where
    items: list[Inspected]
    coverage: Coverage | None

    @property
    def gaps(self) -> str:
        """One line on what the scan could not read; empty when it read everything."""
        if self.coverage is None or self.coverage.complete:
            return ""
        return f"{self.where.value}: {self.coverage.describe()}"


def read_all(tool: Tool, where: Where) -> Read:
    """Every message of a queue, given back at once."""
    with tool.scan(where) as scan:
        items = scan.everything()
    return Read(where, items, scan.coverage)


def first_in_queues(
    tool: Tool, wanted: Callable[[Inspected], bool]
) -> tuple[Inspected | None, list[Inspected]]:
    """The first message of the parking lot, then of the DLQ, that ``wanted`` takes (the scan stops
    there and gives back what it read), and the messages read before it."""
    seen: list[Inspected] = []
    for where in (Where.PARKING_LOT, Where.DLQ):
        with tool.scan(where) as scan:
            for batch in scan.batches():
                for item in batch:
                    if wanted(item):
                        return item, seen
                    seen.append(item)
    return None, seen


def find_message(tool: Tool, wanted: str) -> Inspected:
    """The message ``wanted`` (a MessageId or re-drive identity) names, first in the parking lot,
    then in the DLQ; raise NotFound naming those there are."""
    found, seen = first_in_queues(tool, lambda item: item.named(wanted))
    if found is not None:
        return found
    held = [item.message.message_id[:SAMPLE_ID_CHARS] for item in seen]
    raise NotFound(
        f"no message {inert_str(wanted)} in the parking lot or the DLQ; "
        + (f"they hold {some(held)}" if held else "both are empty")
    )
