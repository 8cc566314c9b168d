"""A queue's identity, whatever form names it: a queue ARN, or a URL in any of SQS's forms
(``sqs.REGION.amazonaws.com``, the legacy ``REGION.queue.amazonaws.com``, a local endpoint's
``localhost:4566``). Two names of one queue compare equal; raw strings would not."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

# The legacy endpoint without a region in its host name serves us-east-1.
LEGACY_HOST = "queue.amazonaws.com"
LEGACY_REGION = "us-east-1"
ARN_PARTS = 6
REGION_LABEL = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]+")


class NotAQueueName(ValueError):
    """A string that names no queue (the message says what is wrong with it)."""


@dataclass(frozen=True, order=True)
class QueueRef:
    """A queue by region, account and name."""

    region: str
    account: str
    name: str

    @classmethod
    def from_arn(cls, arn: str) -> QueueRef:
        """``arn:PARTITION:sqs:REGION:ACCOUNT:NAME``."""
        parts = arn.split(":")
        if len(parts) != ARN_PARTS or parts[0] != "arn" or parts[2] != "sqs" or not all(parts[3:]):
            raise NotAQueueName(f"not an SQS queue ARN: {arn!r}")
        return cls(region=parts[3], account=parts[4], name=parts[5])

    @classmethod
    def from_url(cls, url: str, *, default_region: str) -> QueueRef:
        """``https://HOST/ACCOUNT/NAME``; the region is the host's, else ``default_region`` (a local
        endpoint's host names none: the region the queue was listed or deployed in)."""
        try:
            split = urlsplit(url)
        except ValueError as exc:
            raise NotAQueueName(f"not a queue URL: {url!r}") from exc
        path = [part for part in split.path.split("/") if part]
        if split.scheme not in ("http", "https") or len(path) != 2:
            raise NotAQueueName(f"not a queue URL (https://HOST/ACCOUNT/NAME): {url!r}")
        region = region_of_host(split.hostname or "") or default_region
        return cls(region=region, account=path[0], name=path[1])

    def __str__(self) -> str:
        return f"{self.region}/{self.account}/{self.name}"


def region_of_host(host: str) -> str | None:
    """The region an SQS endpoint's host name carries, if it carries one."""
    host = host.lower()
    if host == LEGACY_HOST:
        return LEGACY_REGION
    labels = host.split(".")
    if len(labels) >= 3 and labels[0] == "sqs":
        candidate = labels[1]
    elif len(labels) >= 3 and labels[1] == "queue":
        candidate = labels[0]
    else:
        return None
    return candidate if REGION_LABEL.fullmatch(candidate) else None
