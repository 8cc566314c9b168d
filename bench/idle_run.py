"""`python -m bench.idle_run SUMMARY`: the re-drive function's scheduled runs on an empty DLQ, as
deployed: the default stack deployed into in-process moto, the real handler imported with the
function's environment, invoked on schedule events, the first a cold start, until the run history
it keeps in the state table is full (as it is after the first hour deployed). What the handler
prints (its log lines and EMF metrics, which Lambda ships to CloudWatch Logs) is this process's
stdout; each invocation's AWS requests by operation and the DynamoDB units they are billed are
written as JSON to SUMMARY. bench.cost runs it in a process of its own: Powertools binds its logger
to the stdout it finds at import.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import threading
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from local_aws import REGION
from local_aws.cloudformation import deploy_synthesized
from local_aws.environment import environment
from local_aws.events import LambdaContext, scheduled_event
from local_aws.simulation import default_stack
from sqs_redriver.core.table import RUN_HISTORY_LENGTH

INVOCATIONS = RUN_HISTORY_LENGTH + 1
WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096


class Meter:
    """Requests by operation, and DynamoDB's units: a write unit per KB of a put item (an update or
    delete counted as one: the function's only update is of its idempotency record, under 1 KB), a
    read unit per 4 KB of an item read consistently, half one eventually."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.read_units = 0.0
        self.write_units = 0.0
        self._asked = threading.local()  # what the call in this thread asked, for its response

    def attach(self, session: Any) -> None:
        session.events.register("provide-client-params.*.*", self._request)
        session.events.register("after-call.dynamodb.GetItem", self._item_read)

    def _request(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.requests[model.name] += 1
        self._asked.consistent = bool(params.get("ConsistentRead"))
        if model.name == "PutItem":
            self.write_units += math.ceil(item_bytes(params["Item"]) / WRITE_UNIT_BYTES)
        elif model.name in ("UpdateItem", "DeleteItem"):
            self.write_units += 1
        elif model.name in ("BatchGetItem", "BatchWriteItem"):
            raise NotImplementedError(f"{model.name}: not made by an idle run; meter its items first")

    def _item_read(self, parsed: dict[str, Any], **_: Any) -> None:
        units = max(1, math.ceil(item_bytes(parsed.get("Item", {})) / READ_UNIT_BYTES))
        self.read_units += units if self._asked.consistent else units / 2

    def take(self) -> dict[str, Any]:
        taken = {
            "requests": dict(self.requests),
            "read_units": self.read_units,
            "write_units": self.write_units,
        }
        self.requests.clear()
        self.read_units = self.write_units = 0.0
        return taken


def item_bytes(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB bills it, about: its attribute names and values (as JSON)."""
    return sum(len(name.encode()) + len(json.dumps(value).encode()) for name, value in item.items())


def idle_runs(invocations: int = INVOCATIONS) -> list[dict[str, Any]]:
    """What each of ``invocations`` runs on an empty DLQ asked of AWS (``Meter.take``)."""
    app = default_stack()  # before moto: synthesis runs node
    with environment({"AWS_DEFAULT_REGION": REGION}, unset=["AWS_ENDPOINT_URL", "AWS_PROFILE"]), mock_aws():
        function = deploy_synthesized(app).redriver
        meter = Meter()
        boto3.setup_default_session(region_name=REGION)
        meter.attach(boto3.DEFAULT_SESSION)
        lambda_env = {"AWS_LAMBDA_FUNCTION_NAME": function.name, "_HANDLER": function.handler}
        with environment({**function.environment, **lambda_env}):
            from sqs_redriver.runtime.handler import lambda_handler

            runs = []
            for i in range(invocations):
                context = LambdaContext(function.name, timeout_seconds=function.timeout_seconds)
                lambda_handler(scheduled_event(f"idle-{i}"), context)
                runs.append(meter.take())
    return runs


def main(argv: list[str]) -> int:
    logging.getLogger("moto").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = idle_runs()
    Path(argv[0]).write_text(json.dumps(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
