"""The fleet view: every dead-letter queue of the account in the regions asked, read from AWS.

``read_fleet`` lists the queues (all pages), reads each one's attributes (a few at a time), finds
the re-drivers every stack publishes, and reads the oldest message's age of each DLQ that holds
messages; ``fleet_model.assemble`` decides the rest. A queue, stack or region that cannot be read
is a ``Problem`` in the answer, never an exception (an answer that is not AWS's too): only a failure
to find credentials or a region at all (nothing could be read anywhere) is raised."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from botocore.exceptions import NoRegionError

from sqs_redriver.console.advice import SETUP_ERRORS, explain
from sqs_redriver.console.aws import AWS_FAILURES, FLEET_CONFIG, oldest_age_seconds
from sqs_redriver.console.connection import Connection
from sqs_redriver.console.deployment import Deployment
from sqs_redriver.console.fleet_listing import ListedQueue, Listing, Problem, parse_listing
from sqs_redriver.console.fleet_model import Fleet, Gaps, Guard, assemble, dead_letter_refs
from sqs_redriver.console.queue_ref import REGION_LABEL, NotAQueueName, QueueRef
from sqs_redriver.console.shown import inert_str
from sqs_redriver.console.tool import UsageError
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from sqs_redriver.runtime.adapters import AwsCallError

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
