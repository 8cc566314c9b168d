"""Which source queue a DLQ message goes back to (a DLQ may be shared by several sources)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from redriver.adapters.ports import queue_key_from_arn, queue_key_from_url
from redriver.model.tracked import Tracked


@dataclass(frozen=True)
class Routes:
    """The configured source queues by key (``account/name``); the first is the default."""

    urls: Sequence[str]

    def source_url(self, tracked: Tracked) -> str | None:
        """The queue SQS names as the message's source, else the default; None when SQS names a
        queue that is not configured (the message is then parked)."""
        arn = tracked.message.source_arn
        if arn is None:
            return self.urls[0]
        return self._by_key.get(queue_key_from_arn(arn))

    @cached_property
    def _by_key(self) -> dict[str, str]:
        # Asked several times per message (plan, records, send): keyed once.
        return {queue_key_from_url(url): url for url in self.urls}

    def describe_source(self, tracked: Tracked) -> str:
        """Where the message came from, for records and reasons: a queue URL, or the ARN SQS gave."""
        return self.source_url(tracked) or str(tracked.message.source_arn)
