"""Finding messages without consuming them: every message of a queue, or the first one wanted of
the parking lot and the DLQ. Every message read is given back at once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqs_redriver.console.aws import Coverage
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.console.shown import inert_str, some
from sqs_redriver.console.tool import NotFound, Tool

BOTH_QUEUES = (Where.PARKING_LOT, Where.DLQ)
QUEUE_NAMES = {Where.PARKING_LOT: "the parking lot", Where.DLQ: "the DLQ"}
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
    tool: Tool, wanted: Callable[[Inspected], bool], queues: Sequence[Where] = BOTH_QUEUES
) -> tuple[Inspected | None, list[Inspected]]:
    """The first message of the parking lot, then of the DLQ (or of ``queues``), that ``wanted``
    takes (the scan stops there and gives back what it read), and the messages read before it."""
    seen: list[Inspected] = []
    for where in queues:
        with tool.scan(where) as scan:
            for batch in scan.batches():
                for item in batch:
                    if wanted(item):
                        return item, seen
                    seen.append(item)
    return None, seen


def find_message(tool: Tool, wanted: str, queues: Sequence[Where] = BOTH_QUEUES) -> Inspected:
    """The message ``wanted`` (a MessageId or re-drive identity) names, first in the parking lot,
    then in the DLQ (or in ``queues``); raise NotFound naming those there are."""
    found, seen = first_in_queues(tool, lambda item: item.named(wanted), queues)
    if found is not None:
        return found
    held = [item.message.message_id[:SAMPLE_ID_CHARS] for item in seen]
    searched = " or ".join(QUEUE_NAMES[where] for where in queues)
    raise NotFound(
        f"no message {inert_str(wanted)} in {searched}; "
        + (f"they hold {some(held)}" if held else "both are empty" if len(queues) > 1 else "it is empty")
    )
