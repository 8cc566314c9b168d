"""The tool every command and page works through: where its calls go (``Connection``), the
re-driver it works on (``Deployment``, named by a ``Target`` or found in a stack's outputs), the
adapters built on them and the audit record around each action (``Tool``), and reading the queues
without consuming them (``read_all``, ``find_message``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import InvalidRegionError
from botocore.utils import is_valid_endpoint_url, is_valid_ipv6_endpoint_url, validate_region_name

from sqs_redriver.console.audit import ActionResult, AuditLog
from sqs_redriver.console.aws import AWS_FAILURES, Coverage, QueueScan, aws_date, caller
from sqs_redriver.console.errors import BadConnection, DeploymentNotFound, NotFound, UsageError
from sqs_redriver.console.inventory import GroupIndex, Inspected, Where
from sqs_redriver.console.safe_text import inert_str, some
from sqs_redriver.core import delivery
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.sqs import SqsQueue
from sqs_redriver.core.table import StateTable
from sqs_redriver.protocol.dead_letters import FUNCTION_ARN
from sqs_redriver.protocol.failure import VERDICT_RECORD_TTL_SECONDS
from sqs_redriver.protocol.keys import queue_key_from_arn, queue_key_from_url
from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION
from sqs_redriver.protocol.sources import DeadLetterSource, Retries, SourceKind, TargetKind, read_source_list
from sqs_redriver.protocol.wire import Rejection

# An operator waits for the answer: retry throttling, but not for long.
TOOL_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30)


@dataclass(frozen=True)
class Connection:
    """Where the tool's calls go: the standard credential chain, or a profile, region, endpoint.
    The endpoint and the region are checked on first use (BadConnection), so ``--help`` works."""

    profile: str | None = None
    region: str | None = None
    endpoint_url: str | None = None

    @cached_property
    def _session(self) -> boto3.Session:
        self._check()
        return boto3.Session(profile_name=self.profile, region_name=self.region)

    def _check(self) -> None:
        if self.region is not None:
            try:
                validate_region_name(self.region)
            except InvalidRegionError:
                named = inert_str(self.region)
                raise BadConnection(
                    f"--region (or AWS_REGION) {named!r} is not a region name (like eu-west-1)"
                ) from None
        url = self.endpoint_url
        if url is not None and not _is_endpoint(url):
            raise BadConnection(
                f"--endpoint-url (or AWS_ENDPOINT_URL) {inert_str(url)!r} is not an http:// or https:// "
                "URL with a host (like http://localhost:4566)"
            )

    def knows_region(self) -> bool:
        """Whether botocore knows the connection's region in some partition (a region it does not
        know still gets an endpoint: this only explains a failure)."""
        session = self._session
        return any(
            self.region_name in session.get_available_regions("sqs", partition)
            for partition in session.get_available_partitions()
        )

    @property
    def region_name(self) -> str | None:
        """The region calls go to: ``region``, else the profile's or the environment's."""
        return self._session.region_name

    def client(self, service: str, *, region: str | None = None, config: Config | None = None) -> Any:
        # boto3-stubs types client() per literal service name; the tool asks for its clients by name.
        session: Any = self._session
        try:
            return session.client(
                service, region_name=region, endpoint_url=self.endpoint_url, config=config or TOOL_CONFIG
            )
        except ValueError as exc:  # an endpoint from the environment or the profile botocore refuses
            raise BadConnection(
                f"the endpoint for {service} (AWS_ENDPOINT_URL_{service.upper()}, or endpoint_url in the "
                f"profile) is not one AWS's clients take: {inert_str(str(exc))}"
            ) from None


def _is_endpoint(url: str) -> bool:
    """An http(s) URL with a host and a port in range, as botocore's clients take it."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return False
    valid = is_valid_endpoint_url(url) or is_valid_ipv6_endpoint_url(url)
    return parts.scheme in ("http", "https") and bool(valid)


SOURCES_FIELD = "dead_letter_sources"


@dataclass(frozen=True)
class Deployment:
    """One re-driver: its construct path, queues, table, function, archive bucket and audit log
    group, as the construct publishes them in a stack output; for a DLQ of another kind (a
    function's, a rule target's, a subscription's), its sources instead of source queues."""

    name: str
    dlq_url: str
    source_queue_urls: tuple[str, ...]
    parking_lot_url: str
    table_name: str
    function_name: str = ""
    archive_bucket: str = ""
    audit_log_group: str = ""
    # Each with the one target its dead letters go back to (protocol/sources.py).
    dead_letter_sources: tuple[DeadLetterSource, ...] = ()

    @property
    def sources(self) -> tuple[str, ...]:
        """Each source as the runs name it (its breaker is ``BREAKER#<source>``): a source queue's
        URL, or a source of another kind's address."""
        return self.source_queue_urls or tuple(source.address for source in self.dead_letter_sources)

    def to_json(self) -> str:
        document = {item.name: getattr(self, item.name) for item in fields(self)}
        document[SOURCES_FIELD] = [source.to_json() for source in self.dead_letter_sources]
        return json.dumps(document, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Deployment:
        """The output's JSON; a ``Rejection`` naming the field of a source that is not one (a
        JSON, key or type error for the rest, as before sources were published)."""
        payload = json.loads(text)
        return cls(
            name=str(payload["name"]),
            dlq_url=str(payload["dlq_url"]),
            source_queue_urls=tuple(str(url) for url in payload["source_queue_urls"]),
            parking_lot_url=str(payload["parking_lot_url"]),
            table_name=str(payload["table_name"]),
            function_name=str(payload.get("function_name", "")),
            archive_bucket=str(payload.get("archive_bucket", "")),
            audit_log_group=str(payload.get("audit_log_group", "")),
            dead_letter_sources=read_deployment_sources(payload.get(SOURCES_FIELD, [])),
        )


def read_deployment_sources(value: object) -> tuple[DeadLetterSource, ...]:
    """An output's ``dead_letter_sources`` (untrusted: anyone who may update the stack wrote it);
    a ``Rejection`` naming the field at fault."""
    return read_source_list(value, SOURCES_FIELD, subject="a re-driver's source")


def from_stack_outputs(stack_name: str, outputs: Iterable[Mapping[str, str]], name: str | None) -> Deployment:
    """The re-driver among a stack's ``Outputs`` (DescribeStacks), chosen by ``name`` (its construct
    path, or the end of it) when the stack has several."""
    every = [
        _deployment_of(stack_name, output)
        for output in outputs
        if output.get("Description") == OUTPUT_DESCRIPTION
    ]
    found = [d for d in every if name is None or d.name == name or d.name.endswith(f"/{name}")]
    if len(found) == 1:
        return found[0]
    if not every:
        raise DeploymentNotFound(
            f"stack {stack_name} has no sqs-redriver deployment output (deploy a version of the "
            "construct that publishes one, or pass the queue URLs and table)"
        )
    if not found:
        raise DeploymentNotFound(
            f"stack {stack_name} has no re-driver named {name!r}; its re-drivers: {_names(every)} "
            "(--redriver takes a name or the end of one)"
        )
    raise DeploymentNotFound(
        f"stack {stack_name} has several re-drivers ({_names(found)}): choose one with --redriver"
    )


def _deployment_of(stack_name: str, output: Mapping[str, str]) -> Deployment:
    """The deployment an output describes; DeploymentNotFound naming the output and what is wrong."""
    try:
        return Deployment.from_json(output["OutputValue"])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # Rejection and JSON errors are ValueErrors; KeyError and TypeError: a field missing or mistyped.
        what = str(exc) if isinstance(exc, Rejection) else f"{type(exc).__name__}: {exc}"
        raise DeploymentNotFound(
            f"stack {stack_name}: output {output.get('OutputKey', '?')} is not a re-driver's "
            f"deployment ({what})"
        ) from None


def _names(deployments: Iterable[Deployment]) -> str:
    return ", ".join(sorted(d.name for d in deployments))


def find_deployment(cloudformation: Any, stack_name: str, redriver: str | None) -> Deployment:
    """The re-driver the stack's outputs name (``redriver`` picks one of several)."""
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except AWS_FAILURES as exc:
        raise AwsCallError(f"cannot read stack {stack_name}: {exc}") from exc
    return from_stack_outputs(stack_name, stacks[0].get("Outputs", []), redriver)


@dataclass(frozen=True)
class Target:
    """How the operator named the re-driver: a stack (and which re-driver in it), or its resources."""

    stack: str | None = None
    redriver: str | None = None
    dlq_url: str | None = None
    source_urls: tuple[str, ...] = ()
    parking_lot_url: str | None = None
    table: str | None = None
    audit_log_group: str | None = None
    archive_bucket: str | None = None
    # A DLQ of another kind: its sources, in place of source queues (the library's callers only).
    dead_letter_sources: tuple[DeadLetterSource, ...] = ()

    def explicit(self) -> Deployment | None:
        """The deployment the options name directly, when they name it whole. A ``--source-url``
        that is a Lambda function's ARN names a function's re-driver (its dead letters read as the
        function's records)."""
        given = [self.dlq_url, self.source_urls or self.dead_letter_sources, self.parking_lot_url, self.table]
        if not any(given):
            return None
        if not all(given):
            raise UsageError(
                "name the re-driver by --stack, or by all of --dlq-url, --source-url, "
                "--parking-lot-url and --table"
            )
        assert self.dlq_url and self.parking_lot_url and self.table
        queues, functions = _named_sources(self.source_urls)
        return Deployment(
            name="(given on the command line)",
            dlq_url=self.dlq_url,
            source_queue_urls=queues,
            parking_lot_url=self.parking_lot_url,
            table_name=self.table,
            audit_log_group=self.audit_log_group or "",
            archive_bucket=self.archive_bucket or "",
            dead_letter_sources=self.dead_letter_sources + functions,
        )


# A function named on the command line: its retries are unknown there, so its return window is the
# longest Lambda's default retries take (3 attempts of its longest timeout, 900 s, and the longest
# wait between two, 120 s), as the construct reckons a function's (cdk/dead_letters.py).
COMMAND_LINE_FUNCTION_RETRIES = Retries(attempts=3, attempt_seconds=900 + 120)


def _named_sources(named: Sequence[str]) -> tuple[tuple[str, ...], tuple[DeadLetterSource, ...]]:
    """``--source-url`` values: the source queues' URLs, or the functions' ARNs (each a source of
    a function's re-driver); a UsageError for a mix, or an ARN of another kind."""
    queues, functions = [], []
    for value in named:
        function = FUNCTION_ARN.fullmatch(value)
        if function is not None:
            functions.append(
                DeadLetterSource(
                    kind=SourceKind.FUNCTION,
                    arn=function.group(1),
                    target_kind=TargetKind.FUNCTION,
                    target_arn=function.group(1),
                    retries=COMMAND_LINE_FUNCTION_RETRIES,
                )
            )
        elif value.startswith("arn:"):
            raise UsageError(
                f"--source-url {inert_str(value)!r} is an ARN but not a Lambda function's: give a source "
                "queue's URL or a function's ARN (a rule target's or a subscription's re-driver is named by "
                "--stack)"
            )
        else:
            queues.append(value)
    if queues and functions:
        raise UsageError(
            "--source-url names queues and functions: a re-driver's DLQ holds the dead letters of one kind"
        )
    return tuple(queues), tuple(functions)


@dataclass
class Tool:
    """The connection and the deployment, resolved on first use; the adapters built on them."""

    connection: Connection
    target: Target
    clock: Any = time.time
    # Actions done whose end the audit trail could not record (take_warnings).
    warnings: list[str] = field(default_factory=list)
    # The AWS clients by service, made on first use; one put here first is used as it is (a proxy,
    # a fake).
    clients: dict[str, Any] = field(default_factory=dict)
    _queues: dict[str, SqsQueue] = field(default_factory=dict)
    _targets: dict[str, delivery.Target] = field(default_factory=dict)  # by source address
    # How far AWS's clock (the Date of its latest response) is ahead of ``clock``; None: no answer yet.
    _aws_ahead: float | None = None

    def client(self, service: str, region: str | None = None) -> Any:
        """The client of ``service``, in the connection's region or in ``region`` (a dead letter's
        target is called in its own: ``clients`` keys that one ``service@region``)."""
        key = service if region is None or region == self.connection.region_name else f"{service}@{region}"
        if key not in self.clients:
            if key == service:
                client = self.connection.client(service)
            else:
                client = self.connection.client(service, region=region)
            client.meta.events.register("after-call", self._note_aws_time)
            self.clients[key] = client
        return self.clients[key]

    def _note_aws_time(self, http_response: Any = None, **_: Any) -> None:
        sent = aws_date(http_response)
        if sent is not None:
            self._aws_ahead = sent - self.clock()

    @cached_property
    def deployment(self) -> Deployment:
        explicit = self.target.explicit()
        if explicit is not None:
            return explicit
        if not self.target.stack:
            raise UsageError(
                "which re-driver? pass --stack STACK_NAME (or set SQS_REDRIVER_STACK), or its queue "
                "URLs and table with --dlq-url, --source-url, --parking-lot-url and --table"
            )
        return find_deployment(self.client("cloudformation"), self.target.stack, self.target.redriver)

    @cached_property
    def table(self) -> StateTable:
        deployment = self.deployment
        return StateTable(
            deployment.table_name,
            self.client("dynamodb"),
            ttl_seconds=VERDICT_RECORD_TTL_SECONDS,
            # The kit's records are its re-driver's (a DLQ of another kind has none).
            kit_scope=None if deployment.dead_letter_sources else deployment.dlq_url,
        )

    @cached_property
    def group_index(self) -> GroupIndex:
        return GroupIndex(self.deployment.table_name, self.client("dynamodb"))

    @cached_property
    def who(self) -> str:
        return caller(self.client("sts"))

    @cached_property
    def audit_log(self) -> AuditLog | None:
        """The deployment's audit trail; None when it publishes none (a construct older than the
        trail, or a re-driver named by its resources without --audit-log-group)."""
        group = self.deployment.audit_log_group
        return AuditLog(self.client("logs"), group, target=self.deployment.name) if group else None

    @contextmanager
    def action(self, action: str, **details: str) -> Iterator[ActionResult]:
        """Run an operator action inside its audit record (see audit.AuditLog.action); without a
        trail, run it unrecorded (``audit_log`` is None: the caller says so)."""
        if self.audit_log is None:
            yield ActionResult()
            return
        with self.audit_log.action(action, self.who, self.now, **details) as tally:
            yield tally
        if tally.unrecorded_end:
            self.warnings.append(tally.unrecorded_end)

    def take_warnings(self) -> list[str]:
        """What the actions since the last call did not get recorded, to tell the operator."""
        taken, self.warnings = self.warnings, []
        return taken

    def now(self) -> int:
        """The tool's clock, but never more than a second ahead of AWS's: the re-driver refuses a
        time from the future in what the tool writes (a breaker moved, a pause, a replay), and an
        operator's laptop may run minutes fast."""
        local = self.clock()
        if self._aws_ahead is None:
            return int(local)
        return int(local + min(0.0, self._aws_ahead + 1))

    def queue(self, url: str) -> SqsQueue:
        return self._queues.setdefault(url, SqsQueue(url, self.client("sqs")))

    def scan(self, where: Where) -> QueueScan:
        """A scan of the DLQ or the parking lot; a DLQ of another kind's messages read as dead letters,
        those of its parking lot with the parking reasons the state table holds."""
        url = self.deployment.parking_lot_url if where is Where.PARKING_LOT else self.deployment.dlq_url
        sources = self.deployment.dead_letter_sources
        records = self.table if sources and where is Where.PARKING_LOT else None
        return QueueScan(self.queue(url), self.client("sqs"), where, sources=sources, park_records=records)

    def target_of(self, source: DeadLetterSource) -> delivery.Target:
        """The one target a source's dead letters go back to (core/delivery.py), called in its
        region; DeploymentNotFound when the deployment's source names no target of its kind."""
        if source.address not in self._targets:
            try:
                self._targets[source.address] = delivery.target_for(source, self.client)
            except Rejection as rejection:
                raise DeploymentNotFound(
                    f"the re-driver's source {source.address} has no target to deliver to: {rejection}"
                ) from None
        return self._targets[source.address]

    def source_for(self, item: Inspected, override: str | None = None) -> SqsQueue | delivery.Target | None:
        """The source queue a message goes back to: ``override``, else the one its parking reason
        or SQS names, if it is one of this re-driver's; a message that names none goes to the first.
        A dead letter of another service goes to its source's target alone (None: it names no
        configured source); ``override`` is refused for it."""
        if item.dead_letter is not None:
            if override:
                raise UsageError("a dead letter of another service goes back to its source's target only")
            source = item.dead_letter.source
            return None if source is None else self.target_of(source)
        if override:
            return self.queue(override)
        named = item.source
        if not named:
            return self.queue(self.deployment.source_queue_urls[0])
        key = queue_key_from_arn(named) if named.startswith("arn:") else queue_key_from_url(named)
        for url in self.deployment.source_queue_urls:
            if queue_key_from_url(url) == key:
                return self.queue(url)
        return None


# Reading the queues without consuming them: every message of a queue, or the first one wanted of
# the parking lot and the DLQ. Every message read is given back at once.
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
