"""What every command and page needs: the connection, the deployment it works on, its adapters,
and the audit record around each action."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sqs_redriver.console.audit import AuditLog, Tally
from sqs_redriver.console.aws import QueueScan, aws_date, caller, find_deployment
from sqs_redriver.console.connection import Connection
from sqs_redriver.console.deployment import Deployment
from sqs_redriver.console.group_index import GroupIndex
from sqs_redriver.console.inventory import Inspected, Where
from sqs_redriver.protocol.failure import VERDICT_RECORD_TTL_SECONDS
from sqs_redriver.protocol.keys import queue_key_from_arn, queue_key_from_url
from sqs_redriver.runtime.adapters.sqs_queue import SqsQueue
from sqs_redriver.runtime.adapters.state_table import StateTable


class UsageError(ValueError):
    """The command line does not say enough (exit code 2)."""


class NotFound(LookupError):
    """The command line names a group, fingerprint or message that does not exist (exit code 1);
    the message says what does."""


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

    def explicit(self) -> Deployment | None:
        """The deployment the options name directly, when they name it whole."""
        given = [self.dlq_url, self.source_urls, self.parking_lot_url, self.table]
        if not any(given):
            return None
        if not all(given):
            raise UsageError(
                "name the re-driver by --stack, or by all of --dlq-url, --source-url, "
                "--parking-lot-url and --table"
            )
        assert self.dlq_url and self.parking_lot_url and self.table
        return Deployment(
            name="(given on the command line)",
            dlq_url=self.dlq_url,
            source_queue_urls=self.source_urls,
            parking_lot_url=self.parking_lot_url,
            table_name=self.table,
            audit_log_group=self.audit_log_group or "",
            archive_bucket=self.archive_bucket or "",
        )


@dataclass
class Tool:
    """The connection and the deployment, resolved on first use; the adapters built on them."""

    connection: Connection
    target: Target
    clock: Any = time.time
    # Actions done whose end the audit trail could not record (take_warnings).
    warnings: list[str] = field(default_factory=list)
    _clients: dict[str, Any] = field(default_factory=dict)
    _queues: dict[str, SqsQueue] = field(default_factory=dict)
    # How far AWS's clock (the Date of its latest response) is ahead of ``clock``; None: no answer yet.
    _aws_ahead: float | None = None

    def client(self, service: str) -> Any:
        if service not in self._clients:
            client = self.connection.client(service)
            client.meta.events.register("after-call", self._note_aws_time)
            self._clients[service] = client
        return self._clients[service]

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
        return StateTable(
            self.deployment.table_name, self.client("dynamodb"), ttl_seconds=VERDICT_RECORD_TTL_SECONDS
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
    def action(self, action: str, **details: str) -> Iterator[Tally]:
        """Run an operator action inside its audit record (see audit.AuditLog.action); without a
        trail, run it unrecorded (``audit_log`` is None: the caller says so)."""
        if self.audit_log is None:
            yield Tally()
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
        url = self.deployment.parking_lot_url if where is Where.PARKING_LOT else self.deployment.dlq_url
        return QueueScan(self.queue(url), self.client("sqs"), where)

    def source_for(self, item: Inspected, override: str | None = None) -> SqsQueue | None:
        """The source queue a message goes back to: ``override``, else the one its parking reason
        or SQS names, if it is one of this re-driver's; a message that names none goes to the first."""
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
