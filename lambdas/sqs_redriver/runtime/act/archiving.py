"""What the archive keeps of a parked message, and under which key."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from typing import Any

from sqs_redriver.protocol.keys import ARCHIVE_PREFIX
from sqs_redriver.runtime.model.intents import Park


def archive_key(park: Park, now: int) -> str:
    """Unique per parking and browsable: by source queue, parking date, identity, DLQ MessageId."""
    tracked = park.tracked
    # A queue URL or ARN ends with the queue's name (a message SQS named no source: "None").
    source = park.reason.source_queue.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    day = time.strftime("%Y/%m/%d", time.gmtime(now))
    identity = tracked.mark.identity.replace("/", "_")
    return f"{ARCHIVE_PREFIX}/{source}/{day}/{identity}/{tracked.message_id}-{now}.json"


def archive_document(park: Park, now: int) -> bytes:
    """Body, message and system attributes, mark, reason and parking time, as JSON."""
    tracked = park.tracked
    message = tracked.message
    document = {
        "parked_at": now,
        "reason": park.reason.to_dict(),
        "mark": json.loads(tracked.mark.to_json()),
        "dlq_message_id": tracked.message_id,
        "body": message.body,
        "message_attributes": {name: _attribute(value) for name, value in message.attributes.items()},
        "system_attributes": dict(message.system_attributes),
    }
    return json.dumps(document, ensure_ascii=False, sort_keys=True).encode("utf-8")


def _attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    """A message attribute as JSON can hold it: binary values in base64."""
    if "BinaryValue" in value:
        binary = value["BinaryValue"]
        encoded = base64.b64encode(binary if isinstance(binary, bytes) else bytes(binary)).decode("ascii")
        return {"DataType": value["DataType"], "BinaryValue": encoded}
    return {"DataType": value["DataType"], "StringValue": value.get("StringValue", "")}
