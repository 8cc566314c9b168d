"""The fleet view's queues, parsed once: every attribute GetQueueAttributes gave (depth, retention,
redrive policy) checked at this boundary; what does not parse is a ``Problem`` naming the queue and
the attribute, never an exception."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqs_redriver.console.queue_ref import NotAQueueName, QueueRef

COUNT_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
RETENTION_ATTRIBUTE = "MessageRetentionPeriod"
POLICY_ATTRIBUTE = "RedrivePolicy"
TARGET_FIELD = "deadLetterTargetArn"


@dataclass(frozen=True, order=True)
class Problem:
    """Something the fleet view could not read or should point out (the command exits 1)."""

    region: str
    subject: str  # a queue's or stack's name, or "" for the region as a whole
    what: str

    def __str__(self) -> str:
        return f"{self.region} {self.subject}: {self.what}" if self.subject else f"{self.region}: {self.what}"

    def to_dict(self) -> dict[str, str]:
        return {"region": self.region, "subject": self.subject, "problem": self.what}


@dataclass(frozen=True)
class ListedQueue:
    """A queue as ListQueues named it and GetQueueAttributes (``All``) described it, or why it could not."""

    region: str
    url: str
    attributes: Mapping[str, Any] | None = None
    error: str | None = None


@dataclass(frozen=True)
class Depth:
    visible: int
    in_flight: int
    delayed: int

    @property
    def total(self) -> int:
        return self.visible + self.in_flight + self.delayed


@dataclass(frozen=True)
class ParsedQueue:
    """A listed queue's attributes, parsed: what could not be read is None (and a problem says why)."""

    ref: QueueRef
    url: str
    depth: Depth | None = None
    retention_seconds: int | None = None
    dead_letter_target: QueueRef | None = None
    max_receive_count: int | None = None


@dataclass(frozen=True)
class Listing:
    """Every listed queue by its identity, and what their attributes did not say."""

    queues: dict[QueueRef, ParsedQueue] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def parse_listing(listed: Iterable[ListedQueue]) -> Listing:
    """Parse every queue's attributes once; a queue that cannot be read, or an attribute that does
    not parse, is a problem (its other attributes still count)."""
    listing = Listing()
    for queue in listed:
        try:
            ref = QueueRef.from_url(queue.url, default_region=queue.region)
        except NotAQueueName as exc:
            listing.problems.append(Problem(queue.region, queue.url, str(exc)))
            continue
        if queue.attributes is None:
            listing.problems.append(Problem(queue.region, ref.name, queue.error or "attributes not read"))
            listing.queues[ref] = ParsedQueue(ref, queue.url)
            continue
        parsed, problems = _parse_attributes(ref, queue.url, queue.attributes)
        listing.queues[ref] = parsed
        listing.problems.extend(problems)
    return listing


def _parse_attributes(
    ref: QueueRef, url: str, attributes: Mapping[str, Any]
) -> tuple[ParsedQueue, list[Problem]]:
    problems: list[Problem] = []
    counts = [_count(attributes.get(name)) for name in COUNT_ATTRIBUTES]
    depth = None if None in counts else Depth(*(c for c in counts if c is not None))
    if depth is None:
        problems.append(Problem(ref.region, ref.name, f"unreadable message counts: {_shown(attributes)}"))
    retention = _count(attributes.get(RETENTION_ATTRIBUTE))
    if retention is None:
        problems.append(Problem(ref.region, ref.name, f"{RETENTION_ATTRIBUTE} is not a number of seconds"))
    target, max_receives, policy_problem = _parse_policy(ref, attributes.get(POLICY_ATTRIBUTE))
    if policy_problem:
        problems.append(Problem(ref.region, ref.name, f"{POLICY_ATTRIBUTE} {policy_problem}"))
    return ParsedQueue(ref, url, depth, retention, target, max_receives), problems


def _parse_policy(ref: QueueRef, text: Any) -> tuple[QueueRef | None, int | None, str]:
    """The DLQ a redrive policy names, its maxReceiveCount, and what is wrong with it ("" if nothing)."""
    if text is None:
        return None, None, ""
    try:
        policy = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None, None, "is not JSON"
    if not isinstance(policy, dict):
        return None, None, "is not a JSON object"
    arn = policy.get(TARGET_FIELD)
    if not isinstance(arn, str):
        return None, None, f"has no {TARGET_FIELD}"
    try:
        target = QueueRef.from_arn(arn)
    except NotAQueueName as exc:
        return None, None, f"{TARGET_FIELD}: {exc}"
    return target, _count(policy.get("maxReceiveCount")), ""


def _count(value: Any) -> int | None:
    """A non-negative integer as SQS writes it (a string of digits, or a number in a policy)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def _shown(attributes: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={attributes.get(name)!r}" for name in COUNT_ATTRIBUTES)
