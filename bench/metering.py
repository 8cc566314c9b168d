"""Counting every AWS request of a client, and the units AWS bills for them, with botocore event
hooks; optionally adding a fixed latency to each request."""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

SQS_BILLING_CHUNK = 64 * 1024
# Published on-demand prices, us-east-1 (per million): SQS standard requests, DynamoDB write and
# read request units.
PRICE_SQS_REQUEST = 0.40
PRICE_WRU = 0.625
PRICE_RRU = 0.125


@dataclass
class Meter:
    """Counts requests by operation and the units AWS bills for them."""

    latency_seconds: float = 0.0
    operations: Counter[str] = field(default_factory=Counter)
    sqs_requests: float = 0
    write_units: float = 0
    read_units: float = 0

    def attach(self, client: Any) -> Any:
        client.meta.events.register("provide-client-params.*.*", self._count)
        if self.latency_seconds:
            client.meta.events.register("before-send.*.*", self._wait)
        return client

    def _wait(self, **_: Any) -> None:
        time.sleep(self.latency_seconds)

    def _count(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        self.operations[name] += 1
        service = model.service_model.service_name
        if name in {"SendMessageBatch", "SendMessage"}:
            entries = params.get("Entries") or [params]
            payload = sum(len(e.get("MessageBody", "").encode()) for e in entries)
            self.sqs_requests += max(1, math.ceil(payload / SQS_BILLING_CHUNK))
        elif name in {"BatchWriteItem"}:
            self.write_units += sum(len(items) for items in params["RequestItems"].values())
        elif name in {"PutItem", "UpdateItem", "DeleteItem"}:
            self.write_units += 1
        elif name == "BatchGetItem":
            for request in params["RequestItems"].values():
                self.read_units += len(request["Keys"]) * (1 if request.get("ConsistentRead") else 0.5)
        elif name == "GetItem":
            self.read_units += 1 if params.get("ConsistentRead") else 0.5
        elif service != "dynamodb":
            self.sqs_requests += 1

    @property
    def calls(self) -> int:
        return sum(self.operations.values())

    @property
    def billable(self) -> float:
        return self.sqs_requests + self.write_units + self.read_units

    def cost_per_million(self, messages: int) -> float:
        dollars = (
            self.sqs_requests * PRICE_SQS_REQUEST + self.write_units * PRICE_WRU + self.read_units * PRICE_RRU
        )
        return dollars / messages  # $ per million requests x (requests / message) x 1e6 / 1e6
