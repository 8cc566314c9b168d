"""Where one re-driver's resources are: what the construct publishes as a stack output and the
command-line tool reads back. Standard library only (the tool must start fast)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from sqs_redriver.protocol.settings import OUTPUT_DESCRIPTION

# The construct's output carries this description; the tool finds its re-drivers by it.


class DeploymentNotFound(LookupError):
    """No re-driver (or more than one, and none chosen) among a stack's outputs."""


@dataclass(frozen=True)
class Deployment:
    """One re-driver: its construct path, queues, table, function, archive bucket and audit log
    group."""

    name: str
    dlq_url: str
    source_queue_urls: tuple[str, ...]
    parking_lot_url: str
    table_name: str
    function_name: str = ""
    archive_bucket: str = ""
    audit_log_group: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Deployment:
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
        )


def from_stack_outputs(stack_name: str, outputs: Iterable[Mapping[str, str]], name: str | None) -> Deployment:
    """The re-driver among a stack's ``Outputs`` (DescribeStacks), chosen by ``name`` (its construct
    path, or the end of it) when the stack has several."""
    every = [
        Deployment.from_json(output["OutputValue"])
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


def _names(deployments: Iterable[Deployment]) -> str:
    return ", ".join(sorted(d.name for d in deployments))
