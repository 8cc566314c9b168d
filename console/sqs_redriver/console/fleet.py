"""The fleet view: every dead-letter queue of the account in the regions asked, read from AWS.

A queue is a DLQ when something dead-letters into it: a queue's redrive policy, a Lambda function's
on-failure destination or its DLQ, an EventBridge rule target's DLQ, an SNS subscription's redrive
policy; or when a re-driver guards it. ``read_fleet`` lists the queues, functions, rules and
subscriptions (all pages) and reads what each names (a few at a time), finds the re-drivers every
stack publishes, and reads the oldest message's age of each DLQ that holds messages; it counts its
calls. ``parse_listing`` checks what those reads say, and ``assemble`` (pure) decides the rest: each
DLQ's depth, age, time to expiry, sources and guard, and the dead-letter destinations that are not
queues. Queues are named by ``QueueRef``, whatever form names them. A queue, function, rule,
subscription, stack, service or region that cannot be read is a ``Problem`` in the answer, never an
exception (an answer that is not AWS's too): only a failure to find credentials or a region at all
(nothing could be read anywhere) is raised."""

from __future__ import annotations

import json
import re
import reprlib
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import NoRegionError

from sqs_redriver.console.advice import SETUP_ERRORS, explain
from sqs_redriver.console.aws import AWS_FAILURES, FLEET_CONFIG, oldest_age_seconds
from sqs_redriver.console.errors import NotAQueueName, UsageError
from sqs_redriver.console.safe_text import inert_str, some
from sqs_redriver.console.status import EXPIRY_WARNING_SECONDS
from sqs_redriver.console.tool import Connection, Deployment
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from sqs_redriver.protocol.wire import Rejection

# The legacy endpoint without a region in its host name serves us-east-1.
LEGACY_HOST = "queue.amazonaws.com"
LEGACY_REGION = "us-east-1"
ARN_PARTS = 6
REGION_LABEL = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]+")


@dataclass(frozen=True, order=True)
class QueueRef:
    """A queue by region, account and name: its identity, whatever form names it (a queue ARN, or a
    URL in any of SQS's forms: ``sqs.REGION.amazonaws.com``, the legacy
    ``REGION.queue.amazonaws.com``, a local endpoint's ``localhost:4566``). Two names of one queue
    compare equal; raw strings would not."""

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


# The fleet view's queues, parsed once: every attribute GetQueueAttributes gave (depth, retention,
# redrive policy) checked at this boundary; what does not parse is a ``Problem`` naming the queue and
# the attribute, never an exception.
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
    subject: str  # a queue's or stack's name, a source (``function resize``), or "": the region
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


class Via(StrEnum):
    """How a source dead-letters into a DLQ."""

    QUEUE = "sqs"  # a queue's RedrivePolicy
    FUNCTION_DESTINATION = "lambda destination"  # a function's asynchronous on-failure destination
    FUNCTION_DLQ = "lambda DLQ"  # a function's DeadLetterConfig
    RULE_TARGET = "eventbridge target"  # an EventBridge rule target's DeadLetterConfig
    SUBSCRIPTION = "sns subscription"  # an SNS subscription's RedrivePolicy


SUBJECT_NOUNS = {
    Via.QUEUE: "",
    Via.FUNCTION_DESTINATION: "function",
    Via.FUNCTION_DLQ: "function",
    Via.RULE_TARGET: "rule",
    Via.SUBSCRIPTION: "subscription",
}


@dataclass(frozen=True, order=True)
class Source:
    """What dead-letters into a DLQ. ``name``: the queue's, function's, rule's (``bus/rule`` on a
    bus other than the default) or topic's; ``arn``: the function's (qualified when its
    configuration is an alias's or a version's), rule's or subscription's; ``target``: a function's
    qualifier, a rule target's id, a subscription's endpoint; ``target_arn``: a rule target's."""

    kind: Via
    name: str
    arn: str = ""
    url: str = ""  # a source queue's
    target: str = ""
    target_arn: str = ""
    max_receive_count: int | None = None  # a source queue's

    @property
    def label(self) -> str:
        """``orders``, ``resize:live``, ``nightly target t1``, ``orders → audit-queue``."""
        if self.kind is Via.RULE_TARGET:
            return f"{self.name} target {self.target}"
        if self.kind is Via.SUBSCRIPTION:
            return f"{self.name} → {_resource_name(self.target)}"
        return f"{self.name}:{self.target}" if self.target else self.name

    @property
    def subject(self) -> str:
        """The source in a problem line: ``function resize``, ``rule nightly target t1``."""
        return f"{SUBJECT_NOUNS[self.kind]} {self.label}".strip()

    @property
    def address(self) -> str:
        """The source of another service as a re-driver names it (``DeadLetterSource.address``,
        ``comparable``)."""
        if self.kind is Via.RULE_TARGET:
            return comparable(f"{self.arn}|{self.target_arn}")
        return comparable(self.arn)

    def to_dict(self) -> dict[str, Any]:
        optional = {"arn": self.arn, "url": self.url, "target": self.target, "target_arn": self.target_arn}
        return {
            "kind": self.kind.value,
            "name": self.name,
            "label": self.label,
            **{name: value or None for name, value in optional.items()},
            "max_receive_count": self.max_receive_count,
        }


def comparable(address: str) -> str:
    """A source's address with a function's ``$LATEST`` qualifier dropped (the same function)."""
    return address.replace(":$LATEST|", "|").removesuffix(":$LATEST")


NOT_REDRIVABLE = "not an SQS queue: not re-drivable by this tool"


@dataclass(frozen=True, order=True)
class OtherDestination:
    """A dead-letter destination that is not an SQS queue (a topic, a bus, a function, a bucket):
    listed, but not re-drivable by this tool."""

    region: str
    destination: str  # its ARN
    source: Source

    def to_dict(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "destination": self.destination,
            "source": self.source.to_dict(),
            "note": NOT_REDRIVABLE,
        }


@dataclass(frozen=True)
class Listing:
    """Every listed queue by its identity, what dead-letters into each queue, the dead-letter
    destinations that are not queues, and what the reads did not say."""

    queues: dict[QueueRef, ParsedQueue] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    dead_letters: list[tuple[QueueRef, Source]] = field(default_factory=list)
    elsewhere: list[OtherDestination] = field(default_factory=list)

    def sources_by_dlq(self) -> dict[QueueRef, list[Source]]:
        """Every source of each DLQ: the queues whose policy names it, then the other services'."""
        found: dict[QueueRef, list[Source]] = {}
        for queue in self.queues.values():
            if queue.dead_letter_target is not None:
                source = Source(
                    Via.QUEUE, queue.ref.name, url=queue.url, max_receive_count=queue.max_receive_count
                )
                found.setdefault(queue.dead_letter_target, []).append(source)
        for dlq, source in self.dead_letters:
            found.setdefault(dlq, []).append(source)
        return found


def parse_listing(
    listed: Iterable[ListedQueue],
    *,
    functions: Iterable[ListedFunction] = (),
    rules: Iterable[ListedRule] = (),
    subscriptions: Iterable[ListedSubscription] = (),
) -> Listing:
    """Parse every queue's attributes once, and what every function, rule target and subscription
    dead-letters into; a queue (or another source) that cannot be read, or a field that does not
    parse, is a problem (its other fields still count)."""
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
    unread = Unread()
    for function in functions:
        _parse_function(listing, unread, function)
    for rule in rules:
        _parse_rule(listing, unread, rule)
    for subscription in subscriptions:
        _parse_subscription(listing, unread, subscription)
    listing.problems.extend(unread.problems())
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
    target, max_receives, policy_problem = _parse_policy(attributes.get(POLICY_ATTRIBUTE))
    if policy_problem:
        problems.append(Problem(ref.region, ref.name, f"{POLICY_ATTRIBUTE} {policy_problem}"))
    return ParsedQueue(ref, url, depth, retention, target, max_receives), problems


def _parse_policy(text: Any) -> tuple[QueueRef | None, int | None, str]:
    """The DLQ a queue's redrive policy names, its maxReceiveCount, and what is wrong with it ("" if
    nothing)."""
    policy, problem = _policy(text)
    if policy is None:
        return None, None, problem
    arn = policy.get(TARGET_FIELD)
    if not isinstance(arn, str):
        return None, None, f"has no {TARGET_FIELD}"
    try:
        target = QueueRef.from_arn(arn)
    except NotAQueueName as exc:
        return None, None, f"{TARGET_FIELD}: {exc}"
    return target, _count(policy.get("maxReceiveCount")), ""


def _policy(text: Any) -> tuple[Mapping[str, Any] | None, str]:
    """A redrive policy's JSON object (a queue's or a subscription's), or what is wrong with it
    (None and "": no policy)."""
    if text is None:
        return None, ""
    try:
        policy = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None, "is not JSON"
    if not isinstance(policy, dict):
        return None, "is not a JSON object"
    return policy, ""


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


# What functions, rule targets and subscriptions dead-letter into, parsed once: each field that
# ListFunctions, ListFunctionEventInvokeConfigs, ListRules, ListTargetsByRule, ListSubscriptions and
# GetSubscriptionAttributes gave is checked here; what does not parse is a problem naming the source
# and the field, and the source's other fields still count.
MAX_TEXT_CHARS = 2048  # more than any name, ARN or endpoint AWS allows
DEFAULT_BUS = "default"
# A subscription's ARN while it is not (or no longer) subscribed: it has no attributes to read.
NOT_SUBSCRIBED = frozenset({"PendingConfirmation", "Deleted"})
ARN_SERVICE = re.compile(r"arn:[a-z-]+:([a-z0-9-]+):")
LATEST = "$LATEST"


@dataclass(frozen=True)
class ListedFunction:
    """A function as ListFunctions gave it, and its asynchronous invocation configurations as
    ListFunctionEventInvokeConfigs gave them, or why they could not be read."""

    region: str
    function: Any
    invoke_configs: Sequence[Any] | None = None
    error: str | None = None


@dataclass(frozen=True)
class ListedRule:
    """A rule of ``bus`` as ListRules gave it, and its targets as ListTargetsByRule gave them, or
    why they could not be read."""

    region: str
    bus: str
    rule: Any
    targets: Sequence[Any] | None = None
    error: str | None = None


@dataclass(frozen=True)
class ListedSubscription:
    """A subscription as ListSubscriptions gave it, and its attributes as GetSubscriptionAttributes
    gave them, or why they could not be read (neither: one not subscribed, which has none)."""

    region: str
    subscription: Any
    attributes: Mapping[str, Any] | None = None
    error: str | None = None


@dataclass
class Unread:
    """The sources whose reads failed, by region and failure: a problem each, or one for all that
    failed alike (a permission missing fails every function's read the same way)."""

    failed: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def add(self, region: str, subject: str, what: str) -> None:
        self.failed.setdefault((region, what), []).append(subject)

    def problems(self) -> list[Problem]:
        return [
            Problem(region, subjects[0], what)
            if len(subjects) == 1
            else Problem(region, "", f"{what} ({len(subjects)} sources: {some(sorted(subjects))})")
            for (region, what), subjects in self.failed.items()
        ]


def _parse_function(listing: Listing, unread: Unread, listed: ListedFunction) -> None:
    """A function's DLQ (``DeadLetterConfig``) and each of its on-failure destinations."""
    region, entry = listed.region, listed.function
    name, arn = _text(entry, "FunctionName"), _text(entry, "FunctionArn")
    if name is None or arn is None:
        what = f"a ListFunctions entry has no FunctionName or FunctionArn: {_clipped(entry)}"
        listing.problems.append(Problem(region, "", what))
        return
    _found(listing, Source(Via.FUNCTION_DLQ, name, arn=arn), region, entry, ("DeadLetterConfig", "TargetArn"))
    if listed.invoke_configs is None:
        unread.add(region, f"function {name}", listed.error or "asynchronous invocation not read")
        return
    for config in listed.invoke_configs:
        # A configuration of an alias or a version names it in its FunctionArn (``$LATEST``: the function).
        configured = _text(config, "FunctionArn") or arn
        qualifier = configured[len(arn) + 1 :] if configured.startswith(f"{arn}:") else ""
        qualifier = "" if qualifier == LATEST else qualifier
        source = Source(
            Via.FUNCTION_DESTINATION, name, arn=f"{arn}:{qualifier}" if qualifier else arn, target=qualifier
        )
        _found(listing, source, region, config, ("DestinationConfig", "OnFailure", "Destination"))


def _parse_rule(listing: Listing, unread: Unread, listed: ListedRule) -> None:
    """Each target of a rule, and its DLQ (``DeadLetterConfig``)."""
    region, entry = listed.region, listed.rule
    name, arn = _text(entry, "Name"), _text(entry, "Arn")
    if name is None or arn is None:
        listing.problems.append(
            Problem(region, "", f"a ListRules entry has no Name or Arn: {_clipped(entry)}")
        )
        return
    bus = _text(entry, "EventBusName") or listed.bus
    shown = name if bus == DEFAULT_BUS else f"{bus}/{name}"
    if listed.targets is None:
        unread.add(region, f"rule {shown}", listed.error or "targets not read")
        return
    for target in listed.targets:
        target_id, target_arn = _text(target, "Id"), _text(target, "Arn")
        if target_id is None or target_arn is None:
            what = f"a target has no Id or Arn: {_clipped(target)}"
            listing.problems.append(Problem(region, f"rule {shown}", what))
            continue
        source = Source(Via.RULE_TARGET, shown, arn=arn, target=target_id, target_arn=target_arn)
        _found(listing, source, region, target, ("DeadLetterConfig", "Arn"))


def _parse_subscription(listing: Listing, unread: Unread, listed: ListedSubscription) -> None:
    """A subscription's DLQ: its redrive policy's ``deadLetterTargetArn``."""
    region, entry = listed.region, listed.subscription
    arn, topic = _text(entry, "SubscriptionArn"), _text(entry, "TopicArn")
    if arn in NOT_SUBSCRIBED:
        return
    if arn is None or topic is None:
        what = f"a ListSubscriptions entry has no SubscriptionArn or TopicArn: {_clipped(entry)}"
        listing.problems.append(Problem(region, "", what))
        return
    source = Source(Via.SUBSCRIPTION, _resource_name(topic), arn=arn, target=_text(entry, "Endpoint") or "")
    if listed.attributes is None:
        unread.add(region, source.subject, listed.error or "attributes not read")
        return
    policy, problem = _policy(listed.attributes.get(POLICY_ATTRIBUTE))
    if policy is not None and policy.get(TARGET_FIELD) in (None, ""):
        problem = f"has no {TARGET_FIELD}"
    if problem:
        listing.problems.append(Problem(region, source.subject, f"{POLICY_ATTRIBUTE} {problem}"))
    elif policy is not None:
        _found(listing, source, region, policy, (TARGET_FIELD,), within=POLICY_ATTRIBUTE)


def _found(
    listing: Listing, source: Source, region: str, document: Any, path: tuple[str, ...], *, within: str = ""
) -> None:
    """Where ``source`` dead-letters, by the ARN at ``path`` in ``document``: a queue (a DLQ), or a
    destination of another service; nothing there, nothing; anything else, a problem."""
    named = ".".join((within, *path) if within else path)
    value = document
    for depth, key in enumerate(path):
        if value is None:
            return
        if not isinstance(value, Mapping):
            where = ".".join((within, *path[:depth]) if within else path[:depth]) or "the entry"
            listing.problems.append(Problem(region, source.subject, f"{where} is not an object"))
            return
        value = value.get(key)
    if value is None or value == "":
        return
    text = value if isinstance(value, str) and len(value) <= MAX_TEXT_CHARS else ""
    queue = _queue_of(text)
    service = ARN_SERVICE.match(text)
    if queue is not None:
        listing.dead_letters.append((queue, source))
    elif service is None or service.group(1) == "sqs":
        what = f"{named} is not an ARN of a queue or of another service: {_clipped(value)}"
        listing.problems.append(Problem(region, source.subject, what))
    else:
        listing.elsewhere.append(OtherDestination(region, text, source))


def _queue_of(arn: str) -> QueueRef | None:
    try:
        return QueueRef.from_arn(arn)
    except NotAQueueName:
        return None


def _text(entry: Any, key: str) -> str | None:
    """``entry[key]`` when it is text of 1 to MAX_TEXT_CHARS characters."""
    value = entry.get(key) if isinstance(entry, Mapping) else None
    return value if isinstance(value, str) and 0 < len(value) <= MAX_TEXT_CHARS else None


def _resource_name(name: str) -> str:
    """An ARN's resource name (``arn:aws:sns:eu-west-1:1:orders`` is ``orders``); anything else as it is."""
    if not name.startswith("arn:"):
        return name
    return name.rsplit(":", 1)[-1].rsplit("/", 1)[-1]


def _clipped(value: Any) -> str:
    """``value`` as a short repr, however large or deep."""
    return reprlib.repr(value)


# The fleet view's pure part (no AWS): from every queue's parsed attributes and the re-drivers the
# stacks publish, the account's dead-letter queues with their depth, age, time to expiry, sources and
# guards.


@dataclass(frozen=True)
class Guard:
    """A re-driver deployment that a stack publishes, the DLQ it guards, and the sources of other
    services it re-drives (their addresses, ``comparable``; its output's ``dead_letter_sources``)."""

    stack: str
    name: str
    dlq: QueueRef
    re_drives: frozenset[str] = frozenset()

    @property
    def label(self) -> str:
        """The re-driver's construct path, and its stack when the path does not start with it."""
        return self.name if self.name.startswith(f"{self.stack}/") else f"{self.name} (stack {self.stack})"

    def to_dict(self) -> dict[str, str]:
        return {"stack": self.stack, "name": self.name}


@dataclass(frozen=True)
class FleetRow:
    """One dead-letter queue: depth, oldest age, time to expiry, sources, guards (None: unknown)."""

    queue: QueueRef
    url: str | None
    depth: Depth | None
    retention_seconds: int | None
    oldest_age_seconds: int | None
    sources: tuple[Source, ...]
    guards: tuple[Guard, ...] | None  # None: its region's stacks could not be read

    @property
    def kinds(self) -> tuple[Via, ...]:
        """How its sources dead-letter into it, each once, in the sources' order."""
        return tuple(dict.fromkeys(source.kind for source in self.sources))

    @property
    def time_to_expiry_seconds(self) -> int | None:
        """How long until SQS's retention deletes the oldest message (None while either is unknown)."""
        if self.oldest_age_seconds is None or self.retention_seconds is None:
            return None
        return self.retention_seconds - self.oldest_age_seconds

    def to_dict(self) -> dict[str, Any]:
        depth = self.depth
        return {
            "name": self.queue.name,
            "region": self.queue.region,
            "account": self.queue.account,
            "url": self.url,
            "kinds": [kind.value for kind in self.kinds],
            "visible": None if depth is None else depth.visible,
            "in_flight": None if depth is None else depth.in_flight,
            "delayed": None if depth is None else depth.delayed,
            "total": None if depth is None else depth.total,
            "retention_seconds": self.retention_seconds,
            "oldest_age_seconds": self.oldest_age_seconds,
            "time_to_expiry_seconds": self.time_to_expiry_seconds,
            "sources": [source.to_dict() for source in self.sources],
            "guarded_by": None if self.guards is None else [guard.to_dict() for guard in self.guards],
        }


@dataclass(frozen=True)
class Fleet:
    """The account's dead-letter queues in the regions read, most messages first; the dead-letter
    destinations there that are not queues; the problems; and the AWS calls the reads made, by
    action (``lambda:ListFunctions``)."""

    at: int
    regions: tuple[str, ...]
    rows: tuple[FleetRow, ...]
    problems: tuple[Problem, ...]
    elsewhere: tuple[OtherDestination, ...] = ()
    calls: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "regions": list(self.regions),
            "dead_letter_queues": [row.to_dict() for row in self.rows],
            "other_destinations": [other.to_dict() for other in self.elsewhere],
            "problems": [problem.to_dict() for problem in self.problems],
            "calls": dict(sorted(self.calls.items())),
        }

    def calls_summary(self) -> str:
        """``41 AWS calls (lambda 23, sqs 14, ...)``: by service, most first."""
        services: Counter[str] = Counter()
        for action, count in self.calls.items():
            services[action.split(":", 1)[0]] += count
        shown = ", ".join(f"{service} {count}" for service, count in services.most_common())
        return f"{sum(services.values())} AWS calls ({shown})"


def dead_letter_refs(listing: Listing, guards: Sequence[Guard]) -> set[QueueRef]:
    """Every queue something dead-letters into or some re-driver guards."""
    named = {queue.dead_letter_target for queue in listing.queues.values()}
    named |= {dlq for dlq, _source in listing.dead_letters}
    return {ref for ref in named if ref is not None} | {guard.dlq for guard in guards}


@dataclass
class Gaps:
    """What the reads could not do: the problems they met, the regions whose queues were not all
    listed (a DLQ not found there may exist), and those whose stacks were not read (guards unknown)."""

    problems: list[Problem] = field(default_factory=list)
    unlisted: set[str] = field(default_factory=set)
    guards_unread: set[str] = field(default_factory=set)


def assemble(
    listing: Listing,
    guards: Sequence[Guard],
    ages: Mapping[QueueRef, int | None],
    *,
    at: int,
    regions: Sequence[str],
    gaps: Gaps | None = None,
) -> Fleet:
    """The fleet: a row per DLQ of ``regions`` (most messages first, unknown depths last, then by
    name), the destinations that are not queues, and every problem, read or found, sorted."""
    gaps = gaps or Gaps()
    found = [*gaps.problems, *listing.problems]
    sources = listing.sources_by_dlq()
    rows = []
    for ref in dead_letter_refs(listing, guards):
        if ref.region not in regions:
            continue
        guarding = None if ref.region in gaps.guards_unread else [g for g in guards if g.dlq == ref]
        row = _row(ref, listing.queues.get(ref), sources.get(ref, []), guarding, ages)
        missing = ref not in listing.queues and ref.region not in gaps.unlisted
        found.extend(_row_problems(row, missing))
        rows.append(row)
    rows.sort(key=_most_messages_first)
    elsewhere = sorted(other for other in listing.elsewhere if other.region in regions)
    return Fleet(
        at=at,
        regions=tuple(regions),
        rows=tuple(rows),
        problems=tuple(sorted(set(found))),
        elsewhere=tuple(elsewhere),
    )


def _most_messages_first(row: FleetRow) -> tuple[bool, int, str, str, str]:
    total = row.depth.total if row.depth else 0
    return row.depth is None, -total, row.queue.name, row.queue.region, row.queue.account


def _row(
    ref: QueueRef,
    queue: ParsedQueue | None,
    sources: Sequence[Source],
    guards: Sequence[Guard] | None,
    ages: Mapping[QueueRef, int | None],
) -> FleetRow:
    return FleetRow(
        queue=ref,
        url=None if queue is None else queue.url,
        depth=None if queue is None else queue.depth,
        retention_seconds=None if queue is None else queue.retention_seconds,
        oldest_age_seconds=ages.get(ref),
        sources=tuple(sorted(set(sources), key=_source_order)),
        guards=None if guards is None else tuple(sorted(guards, key=lambda g: (g.stack, g.name))),
    )


def _source_order(source: Source) -> tuple[str, ...]:
    return source.kind, source.name, source.arn, source.url, source.target, source.target_arn


def _row_problems(row: FleetRow, missing: bool) -> list[Problem]:
    ref = row.queue
    found = []
    if missing:
        named_by = ", ".join(source.label for source in row.sources) or "-"
        guarded_by = ", ".join(guard.name for guard in row.guards or ()) or "-"
        found.append(
            Problem(
                ref.region,
                ref.name,
                f"not among the queues listed (deleted, or not listable); DLQ of {named_by}, "
                f"guarded by {guarded_by}",
            )
        )
    if row.guards is not None and len(row.guards) > 1:
        names = ", ".join(f"{guard.name} (stack {guard.stack})" for guard in row.guards)
        found.append(
            Problem(ref.region, ref.name, f"guarded by {len(row.guards)} re-drivers at once: {names}")
        )
    found.extend(_not_re_driven(row))
    expiry = row.time_to_expiry_seconds
    if expiry is not None and expiry < EXPIRY_WARNING_SECONDS:
        found.append(Problem(ref.region, ref.name, f"the oldest message expires in {expiry} s"))
    return found


def _not_re_driven(row: FleetRow) -> list[Problem]:
    """The sources of another service whose dead letters the DLQ's re-drivers do not re-drive:
    none of them names the source among its ``dead_letter_sources``."""
    if not row.guards:
        return []
    re_driven = set().union(*(guard.re_drives for guard in row.guards))
    names = ", ".join(guard.name for guard in row.guards)
    return [
        Problem(
            row.queue.region,
            row.queue.name,
            f"{source.kind} {source.label} dead-letters here, but {names} does not re-drive it "
            "(not among its dead_letter_sources)",
        )
        for source in row.sources
        if source.kind is not Via.QUEUE and source.address not in re_driven
    ]


# Reading the fleet from AWS.

# (service, region) -> a boto3 client of that service in that region.
Clients = Callable[[str, str], Any]
LIST_PAGE_SIZE = 1000  # ListQueues' MaxResults at most
FUNCTIONS_PAGE_SIZE = 50  # ListFunctions gives 50 a page at most, whatever MaxItems asks
INVOKE_CONFIGS_PAGE_SIZE = 50  # ListFunctionEventInvokeConfigs' MaxItems at most
EVENTS_PAGE_SIZE = 100  # ListEventBuses', ListRules' and ListTargetsByRule's Limit at most
READERS = 8  # reads of one queue, function, rule, subscription or metric at once


def regions_to_read(asked: Sequence[str], default: str | None) -> list[str]:
    """The regions asked, each once and in order, else ``default``: UsageError naming one that is
    not a region's name, NoRegionError when none is asked and there is no default."""
    for name in asked:
        if not REGION_LABEL.fullmatch(name):
            raise UsageError(f"region {inert_str(name)!r} is not a region name (like eu-west-1)")
    if asked:
        return list(dict.fromkeys(asked))
    if default is None:
        raise NoRegionError()
    return [default]


def read_connection_fleet(connection: Connection, regions: Sequence[str], *, now: int) -> Fleet:
    """``read_fleet`` with ``connection``'s clients (the fleet's timeouts and retries)."""
    return read_fleet(
        lambda service, region: connection.client(service, region=region, config=FLEET_CONFIG),
        regions,
        now=now,
    )


class CallCount:
    """The AWS calls of the clients it made, by action (``sqs:ListQueues``), each as botocore makes
    it: every page, a failed call too, but not its retries."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def counting(self, clients: Clients) -> Clients:
        """``clients``, whose every client counts its calls here."""

        def made(service: str, region: str) -> Any:
            client = clients(service, region)
            count = partial(self._count, service)
            client.meta.events.register("before-call", count, unique_id=f"fleet-calls-{id(self)}")
            return client

        return made

    def _count(self, service: str, model: Any, **_: Any) -> None:
        with self._lock:
            self._counts[f"{service}:{model.name}"] += 1

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


@dataclass
class Read:
    """What the reads of every region brought back, before parsing."""

    queues: list[ListedQueue] = field(default_factory=list)
    functions: list[ListedFunction] = field(default_factory=list)
    rules: list[ListedRule] = field(default_factory=list)
    subscriptions: list[ListedSubscription] = field(default_factory=list)
    guards: list[Guard] = field(default_factory=list)


def read_fleet(clients: Clients, regions: Sequence[str], *, now: int, readers: int = READERS) -> Fleet:
    """Every queue of ``regions`` that something dead-letters into (or a re-driver guards), with its
    depth, oldest age, sources and guards; the dead-letter destinations that are not queues; every
    problem met; and the calls made. ``readers`` reads run at once."""
    calls = CallCount()
    counted = calls.counting(clients)
    gaps = Gaps()
    read = Read()
    pool = ThreadPoolExecutor(max_workers=max(1, readers))
    try:
        for region in regions:
            _read_region(counted, region, pool, read, gaps)
        listing = parse_listing(
            read.queues, functions=read.functions, rules=read.rules, subscriptions=read.subscriptions
        )
        dlqs = sorted(dead_letter_refs(listing, read.guards))
        holding = [ref for ref in dlqs if _holds_messages(listing, ref)]
        # A session is not thread-safe: clients are made here, then used by the readers.
        metrics = {region: counted("cloudwatch", region) for region in {ref.region for ref in holding}}
        ages = dict(pool.map(lambda ref: _read_age(metrics[ref.region], ref, now, gaps.problems), holding))
    finally:
        # Ctrl-C (or a setup error) ends the reads at once instead of after every queued read.
        pool.shutdown(wait=False, cancel_futures=True)
    fleet = assemble(listing, read.guards, ages, at=now, regions=regions, gaps=gaps)
    return replace(fleet, calls=calls.counts())


def _read_region(clients: Clients, region: str, pool: ThreadPoolExecutor, read: Read, gaps: Gaps) -> None:
    """The region's queues, stacks, functions, rules and subscriptions: each listed, then each read
    by the pool's readers (with clients made here: a session is not thread-safe)."""
    sqs = clients("sqs", region)
    read.queues.extend(pool.map(partial(_read_attributes, sqs, region), _list_queues(sqs, region, gaps)))
    read.guards.extend(_read_guards(clients("cloudformation", region), region, gaps))
    functions = clients("lambda", region)
    listed = _list_functions(functions, region, gaps)
    read.functions.extend(pool.map(partial(_read_invoke_configs, functions, region), listed))
    events = clients("events", region)
    read.rules.extend(pool.map(partial(_read_targets, events, region), _list_rules(events, region, gaps)))
    sns = clients("sns", region)
    subscriptions = _list_subscriptions(sns, region, gaps)
    read.subscriptions.extend(pool.map(partial(_read_subscription, sns, region), subscriptions))


def _listed(
    region: str, gaps: Gaps, action: str, pages: Callable[[], Iterable[Any]], key: str, what: str
) -> tuple[list[Any], bool]:
    """Every entry under ``key`` of every page, and whether the listing went to its end: on a
    failure, the ``what`` listed so far and a problem naming the action."""
    entries: list[Any] = []
    try:
        for page in pages():
            entries.extend(_entries(page, key))
    except SETUP_ERRORS:
        raise
    except AWS_FAILURES as exc:
        so_far = f" (after {len(entries)} {what})" if entries else ""
        unlisted = f"; the {what} of {region} are not all listed"
        gaps.problems.append(Problem(region, "", f"{action} failed{so_far}: {explain(exc) or exc}{unlisted}"))
        return entries, False
    return entries, True


def _entries(page: Any, key: str) -> list[Any]:
    found = page.get(key) if isinstance(page, Mapping) else None
    return found if isinstance(found, list) else []


def _list_queues(sqs: Any, region: str, gaps: Gaps) -> list[str]:
    """Every queue URL of the region; when not all could be listed, the region is ``unlisted``."""
    pages = partial(sqs.get_paginator("list_queues").paginate, PaginationConfig={"PageSize": LIST_PAGE_SIZE})
    urls, listed_all = _listed(region, gaps, "sqs:ListQueues", pages, "QueueUrls", "queues")
    if not listed_all:
        gaps.unlisted.add(region)
    return [str(url) for url in urls]


def _read_attributes(sqs: Any, region: str, url: str) -> ListedQueue:
    try:
        response = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    except SETUP_ERRORS:
        raise
    except AWS_FAILURES as exc:
        return ListedQueue(region, url, error=f"GetQueueAttributes failed: {explain(exc) or exc}")
    return ListedQueue(region, url, attributes=response.get("Attributes", {}))


def _list_functions(functions: Any, region: str, gaps: Gaps) -> list[Any]:
    pages = partial(
        functions.get_paginator("list_functions").paginate,
        PaginationConfig={"PageSize": FUNCTIONS_PAGE_SIZE},
    )
    return _listed(region, gaps, "lambda:ListFunctions", pages, "Functions", "functions")[0]


def _read_invoke_configs(functions: Any, region: str, function: Any) -> ListedFunction:
    """A function's asynchronous invocation configurations (its own, its aliases' and versions')."""
    name = _text(function, "FunctionName")
    if name is None:
        return ListedFunction(region, function)  # the parser says what is wrong with it
    try:
        pages = functions.get_paginator("list_function_event_invoke_configs").paginate(
            FunctionName=name, PaginationConfig={"PageSize": INVOKE_CONFIGS_PAGE_SIZE}
        )
        configs = [config for page in pages for config in _entries(page, "FunctionEventInvokeConfigs")]
    except SETUP_ERRORS:
        raise
    except AWS_FAILURES as exc:
        what = f"lambda:ListFunctionEventInvokeConfigs failed: {explain(exc) or exc}"
        return ListedFunction(region, function, error=what)
    return ListedFunction(region, function, configs)


def _list_rules(events: Any, region: str, gaps: Gaps) -> list[tuple[str, Any]]:
    """Every rule of every event bus of the region, with its bus's name."""
    buses = _listed(
        region,
        gaps,
        "events:ListEventBuses",
        partial(_token_pages, events.list_event_buses, Limit=EVENTS_PAGE_SIZE),
        "EventBuses",
        "event buses",
    )[0]
    rules: list[tuple[str, Any]] = []
    for bus in buses:
        name = _text(bus, "Name")
        if name is None:
            gaps.problems.append(Problem(region, "", f"an event bus has no Name: {_clipped(bus)}"))
            continue
        pages = partial(
            events.get_paginator("list_rules").paginate,
            EventBusName=name,
            PaginationConfig={"PageSize": EVENTS_PAGE_SIZE},
        )
        found = _listed(region, gaps, f"events:ListRules (bus {name})", pages, "Rules", "rules")[0]
        rules.extend((name, rule) for rule in found)
    return rules


def _token_pages(call: Callable[..., Any], **params: Any) -> Iterator[Any]:
    """The pages of a listing botocore has no paginator for, until a page has no NextToken (or one
    given before: an endpoint that loops)."""
    seen: set[str] = set()
    page = call(**params)
    yield page
    token = page.get("NextToken") if isinstance(page, Mapping) else None
    while isinstance(token, str) and token and token not in seen:
        seen.add(token)
        page = call(**params, NextToken=token)
        yield page
        token = page.get("NextToken") if isinstance(page, Mapping) else None


def _read_targets(events: Any, region: str, bus_rule: tuple[str, Any]) -> ListedRule:
    bus, rule = bus_rule
    name = _text(rule, "Name")
    if name is None:
        return ListedRule(region, bus, rule)  # the parser says what is wrong with it
    try:
        pages = events.get_paginator("list_targets_by_rule").paginate(
            Rule=name, EventBusName=bus, PaginationConfig={"PageSize": EVENTS_PAGE_SIZE}
        )
        targets = [target for page in pages for target in _entries(page, "Targets")]
    except SETUP_ERRORS:
        raise
    except AWS_FAILURES as exc:
        return ListedRule(region, bus, rule, error=f"events:ListTargetsByRule failed: {explain(exc) or exc}")
    return ListedRule(region, bus, rule, targets)


def _list_subscriptions(sns: Any, region: str, gaps: Gaps) -> list[Any]:
    pages = sns.get_paginator("list_subscriptions").paginate  # 100 a page, not settable
    return _listed(region, gaps, "sns:ListSubscriptions", pages, "Subscriptions", "subscriptions")[0]


def _read_subscription(sns: Any, region: str, subscription: Any) -> ListedSubscription:
    arn = _text(subscription, "SubscriptionArn")
    if arn is None or arn in NOT_SUBSCRIBED:
        return ListedSubscription(region, subscription)  # nothing to read (the parser says why)
    try:
        attributes = sns.get_subscription_attributes(SubscriptionArn=arn).get("Attributes")
    except SETUP_ERRORS:
        raise
    except AWS_FAILURES as exc:
        what = f"sns:GetSubscriptionAttributes failed: {explain(exc) or exc}"
        return ListedSubscription(region, subscription, error=what)
    return ListedSubscription(region, subscription, attributes if isinstance(attributes, Mapping) else {})


def _read_guards(cloudformation: Any, region: str, gaps: Gaps) -> list[Guard]:
    """The re-drivers every stack of the region publishes (none when the stacks cannot be listed:
    the region's guards are then unknown)."""
    guards: list[Guard] = []
    try:
        for page in cloudformation.get_paginator("describe_stacks").paginate():
            for stack in page.get("Stacks", []):
                found, bad = guards_of_stack(
                    region, str(stack.get("StackName", "")), stack.get("Outputs", [])
                )
                guards.extend(found)
                gaps.problems.extend(bad)
    except SETUP_ERRORS:
        raise
    except AWS_FAILURES as exc:
        gaps.problems.append(
            Problem(
                region,
                "",
                f"DescribeStacks failed: {explain(exc) or exc} (which re-driver guards each DLQ is unknown)",
            )
        )
        gaps.guards_unread.add(region)
        return []
    return guards


def guards_of_stack(
    region: str, stack: str, outputs: Iterable[Mapping[str, Any]]
) -> tuple[list[Guard], list[Problem]]:
    """The re-drivers among a stack's outputs, and the outputs that carry the re-driver's
    description but do not parse (named by their key)."""
    guards: list[Guard] = []
    problems: list[Problem] = []
    for output in outputs:
        if output.get("Description") != OUTPUT_DESCRIPTION:
            continue
        key = output.get("OutputKey", "?")
        try:
            deployment = Deployment.from_json(str(output.get("OutputValue", "")))
            dlq = QueueRef.from_url(deployment.dlq_url, default_region=region)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            # NotAQueueName, a source's Rejection and JSON errors are ValueErrors; KeyError and
            # TypeError: a field missing or of the wrong type.
            named = isinstance(exc, NotAQueueName | Rejection)
            what = str(exc) if named else f"{type(exc).__name__}: {exc}"
            problems.append(Problem(region, stack, f"output {key} is not a re-driver deployment ({what})"))
            continue
        re_drives = frozenset(comparable(source.address) for source in deployment.dead_letter_sources)
        guards.append(Guard(stack=stack, name=deployment.name, dlq=dlq, re_drives=re_drives))
    return guards, problems


def _holds_messages(listing: Listing, ref: QueueRef) -> bool:
    queue = listing.queues.get(ref)
    return queue is not None and queue.depth is not None and queue.depth.total > 0


def _read_age(
    cloudwatch: Any, ref: QueueRef, now: int, problems: list[Problem]
) -> tuple[QueueRef, int | None]:
    try:
        return ref, oldest_age_seconds(cloudwatch, ref.name, now)
    except AwsCallError as exc:
        if isinstance(exc.__cause__, SETUP_ERRORS):
            raise exc.__cause__ from None
        problems.append(Problem(ref.region, ref.name, f"oldest message's age not read: {exc}"))
        return ref, None
