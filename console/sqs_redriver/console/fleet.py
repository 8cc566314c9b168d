"""The fleet view: every dead-letter queue of the account in the regions asked, read from AWS.

``read_fleet`` lists the queues (all pages), reads each one's attributes (a few at a time), finds
the re-drivers every stack publishes, and reads the oldest message's age of each DLQ that holds
messages; ``parse_listing`` checks what the queues' attributes say, and ``assemble`` (pure) decides
the rest: each DLQ's depth, age, time to expiry, sources and guard. Queues are named by
``QueueRef``, whatever form names them. A queue, stack or region that cannot be read
is a ``Problem`` in the answer, never an exception (an answer that is not AWS's too): only a failure
to find credentials or a region at all (nothing could be read anywhere) is raised."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import NoRegionError

from sqs_redriver.console.advice import SETUP_ERRORS, explain
from sqs_redriver.console.aws import AWS_FAILURES, FLEET_CONFIG, oldest_age_seconds
from sqs_redriver.console.errors import NotAQueueName, UsageError
from sqs_redriver.console.safe_text import inert_str
from sqs_redriver.console.status import EXPIRY_WARNING_SECONDS
from sqs_redriver.console.tool import Connection, Deployment
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION

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


# The fleet view's pure part (no AWS): from every queue's parsed attributes and the re-drivers the
# stacks publish, the account's dead-letter queues with their depth, age, time to expiry, sources and
# guards.


@dataclass(frozen=True)
class Guard:
    """A re-driver deployment that a stack publishes, and the DLQ it guards."""

    stack: str
    name: str
    dlq: QueueRef

    @property
    def label(self) -> str:
        """The re-driver's construct path, and its stack when the path does not start with it."""
        return self.name if self.name.startswith(f"{self.stack}/") else f"{self.name} (stack {self.stack})"

    def to_dict(self) -> dict[str, str]:
        return {"stack": self.stack, "name": self.name}


@dataclass(frozen=True)
class Source:
    """A queue whose redrive policy names a DLQ."""

    ref: QueueRef
    url: str
    max_receive_count: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.ref.name, "url": self.url, "max_receive_count": self.max_receive_count}


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
    """The account's dead-letter queues in the regions read, most messages first, and the problems."""

    at: int
    regions: tuple[str, ...]
    rows: tuple[FleetRow, ...]
    problems: tuple[Problem, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "regions": list(self.regions),
            "dead_letter_queues": [row.to_dict() for row in self.rows],
            "problems": [problem.to_dict() for problem in self.problems],
        }


def dead_letter_refs(listing: Listing, guards: Sequence[Guard]) -> set[QueueRef]:
    """Every queue some redrive policy names or some re-driver guards."""
    named = {queue.dead_letter_target for queue in listing.queues.values()}
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
    name), and every problem, read or found, sorted."""
    gaps = gaps or Gaps()
    found = [*gaps.problems, *listing.problems]
    rows = []
    for ref in dead_letter_refs(listing, guards):
        if ref.region not in regions:
            continue
        row = _row(ref, listing, None if ref.region in gaps.guards_unread else guards, ages)
        missing = ref not in listing.queues and ref.region not in gaps.unlisted
        found.extend(_row_problems(row, missing))
        rows.append(row)
    rows.sort(key=_most_messages_first)
    return Fleet(at=at, regions=tuple(regions), rows=tuple(rows), problems=tuple(sorted(set(found))))


def _most_messages_first(row: FleetRow) -> tuple[bool, int, str, str, str]:
    total = row.depth.total if row.depth else 0
    return row.depth is None, -total, row.queue.name, row.queue.region, row.queue.account


def _row(
    ref: QueueRef, listing: Listing, guards: Sequence[Guard] | None, ages: Mapping[QueueRef, int | None]
) -> FleetRow:
    queue = listing.queues.get(ref)
    sources = sorted(
        (
            Source(q.ref, q.url, q.max_receive_count)
            for q in listing.queues.values()
            if q.dead_letter_target == ref
        ),
        key=lambda source: source.ref,
    )
    return FleetRow(
        queue=ref,
        url=None if queue is None else queue.url,
        depth=None if queue is None else queue.depth,
        retention_seconds=None if queue is None else queue.retention_seconds,
        oldest_age_seconds=ages.get(ref),
        sources=tuple(sources),
        guards=None
        if guards is None
        else tuple(sorted((g for g in guards if g.dlq == ref), key=lambda g: (g.stack, g.name))),
    )


def _row_problems(row: FleetRow, missing: bool) -> list[Problem]:
    ref = row.queue
    found = []
    if missing:
        named_by = ", ".join(source.ref.name for source in row.sources) or "-"
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
    expiry = row.time_to_expiry_seconds
    if expiry is not None and expiry < EXPIRY_WARNING_SECONDS:
        found.append(Problem(ref.region, ref.name, f"the oldest message expires in {expiry} s"))
    return found


# Reading the fleet from AWS.

# (service, region) -> a boto3 client of that service in that region.
Clients = Callable[[str, str], Any]
LIST_PAGE_SIZE = 1000  # ListQueues' MaxResults at most
READERS = 8  # GetQueueAttributes and metric reads at once


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


def read_fleet(clients: Clients, regions: Sequence[str], *, now: int, readers: int = READERS) -> Fleet:
    """Every queue of ``regions`` that is some queue's DLQ (or a re-driver's), with its depth, oldest
    age, sources and guards, and every problem met; ``readers`` reads run at once."""
    gaps = Gaps()
    listed: list[ListedQueue] = []
    guards: list[Guard] = []
    pool = ThreadPoolExecutor(max_workers=max(1, readers))
    try:
        for region in regions:
            sqs = clients("sqs", region)
            urls = _list_queue_urls(sqs, region, gaps)
            listed.extend(pool.map(partial(_read_attributes, sqs, region), urls))
            guards.extend(_read_guards(clients("cloudformation", region), region, gaps))
        listing = parse_listing(listed)
        holding = [ref for ref in sorted(dead_letter_refs(listing, guards)) if _holds_messages(listing, ref)]
        # A session is not thread-safe: clients are made here, then used by the readers.
        metrics = {region: clients("cloudwatch", region) for region in {ref.region for ref in holding}}
        ages = dict(pool.map(lambda ref: _read_age(metrics[ref.region], ref, now, gaps.problems), holding))
    finally:
        # Ctrl-C (or a setup error) ends the reads at once instead of after every queued queue.
        pool.shutdown(wait=False, cancel_futures=True)
    return assemble(listing, guards, ages, at=now, regions=regions, gaps=gaps)


def _list_queue_urls(sqs: Any, region: str, gaps: Gaps) -> list[str]:
    """Every queue URL of the region, all pages; on a failure, those listed so far and a problem."""
    urls: list[str] = []
    try:
        pages = sqs.get_paginator("list_queues").paginate(PaginationConfig={"PageSize": LIST_PAGE_SIZE})
        for page in pages:
            urls.extend(str(url) for url in page.get("QueueUrls", []))
    except SETUP_ERRORS:
        raise
    except AWS_FAILURES as exc:
        listed_so_far = f" (after {len(urls)} queues)" if urls else ""
        gaps.problems.append(Problem(region, "", f"ListQueues failed{listed_so_far}: {explain(exc) or exc}"))
        gaps.unlisted.add(region)
    return urls


def _read_attributes(sqs: Any, region: str, url: str) -> ListedQueue:
    try:
        response = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    except SETUP_ERRORS:
        raise
    except AWS_FAILURES as exc:
        return ListedQueue(region, url, error=f"GetQueueAttributes failed: {explain(exc) or exc}")
    return ListedQueue(region, url, attributes=response.get("Attributes", {}))


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
            # NotAQueueName and JSON errors are ValueErrors; KeyError and TypeError: a field missing
            # or of the wrong type.
            what = str(exc) if isinstance(exc, NotAQueueName) else f"{type(exc).__name__}: {exc}"
            problems.append(Problem(region, stack, f"output {key} is not a re-driver deployment ({what})"))
            continue
        guards.append(Guard(stack=stack, name=deployment.name, dlq=dlq))
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
