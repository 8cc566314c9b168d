"""Start a continuation: an asynchronous invocation of the re-driver's own function."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sqs_redriver.runtime.adapters import AwsCallError
from sqs_redriver.runtime.model.continuation import Resume


def start_continuation(client: Any, function_name: str, resume: Resume) -> None:
    """Invoke ``function_name`` with the continuation event (InvocationType Event: Lambda queues
    it, and with reserved concurrency 1 retries it as soon as the current run has returned)."""
    try:
        client.invoke(
            FunctionName=function_name,
            InvocationType="Event",
            Payload=json.dumps(resume.to_event()).encode(),
        )
    except (ClientError, BotoCoreError) as exc:
        raise AwsCallError(f"Lambda Invoke of {function_name} failed: {exc}") from exc
