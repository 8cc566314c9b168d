"""Routing: which source queue a DLQ message goes back to (a DLQ may be shared by several sources),
and which source's part goes first in a run (each source has its own breaker). Pure."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from sqs_redriver.protocol.keys import queue_key_from_arn, queue_key_from_url
from sqs_redriver.protocol.limits import QUEUE_ARN_PATTERN

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqs_redriver.core.message import Tracked


@dataclass(frozen=True)
class Routes:
    """The configured sources: source queue URLs (keyed by ``account/name``; the first is the
    default), or the addresses of a DLQ of another kind's sources (protocol/sources.py)."""

    urls: Sequence[str]

    def source_url(self, tracked: Tracked) -> str | None:
        """The queue the message came from (``named_source``), else the default; None when that
        queue is not configured (the message is then parked). A dead letter of another service
        goes back to the source it belongs to, never to a default."""
        dead_letter = tracked.message.dead_letter
        if dead_letter is not None:
            source = dead_letter.source
            return source.address if source is not None and source.address in self.urls else None
        arn = named_source(tracked)
        if arn is None:
            return self.urls[0]
        return self._by_key.get(queue_key_from_arn(arn))

    @cached_property
    def _by_key(self) -> dict[str, str]:
        # Asked several times per message (plan, records, send): keyed once.
        return {queue_key_from_url(url): url for url in self.urls}

    def describe_source(self, tracked: Tracked) -> str:
        """Where the message came from, for records and reasons: a queue URL or a source's address,
        or the ARN SQS gave."""
        dead_letter = tracked.message.dead_letter
        if dead_letter is not None:
            return dead_letter.source.address if dead_letter.source else "no configured source"
        return self.source_url(tracked) or str(named_source(tracked))


def named_source(tracked: Tracked) -> str | None:
    """The ARN of the queue a message came from: the one SQS names when it moved the message
    (``DeadLetterQueueSourceArn``), else the one the consumer kit recorded when it dead-lettered
    it itself (``err.src``: the kit's own queue, so a shared DLQ's second source is not taken for
    the first), when that is a queue ARN at all; None when neither says."""
    if tracked.message.source_arn is not None:
        return tracked.message.source_arn
    failure = tracked.mark.failure
    if failure is not None and QUEUE_ARN_PATTERN.fullmatch(failure.source):
        return failure.source
    return None


# Which source of a shared DLQ goes first in a run (each source has its own breaker and part).


SECONDS_PER_MINUTE = 60


def turn_order(count: int, *, generation: int, now: int) -> list[int]:
    """The indexes of ``count`` sources in the order a run takes them."""
    if generation:
        first = generation % count
    else:
        first = zlib.crc32(str(now // SECONDS_PER_MINUTE).encode()) % count
    return [(first + i) % count for i in range(count)]
