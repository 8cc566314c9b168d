"""Lambda's asynchronous invocations, played: moto stores a function and its event invoke config
but cannot run its code, so the code is a Python callable here.

``AsyncInvocations.invoke`` is the Invoke API of an ``InvocationType=Event`` call (what a producer
and the re-driver's ``FunctionTarget`` call): Lambda answers 202 and queues the event.
``run_queued`` then runs each queued event as Lambda does: the first attempt and the retries of
the function's event invoke config (``MaximumRetryAttempts``, 2 unless set; played at once, without
Lambda's one- and two-minute waits), and after the last failed attempt the invocation record goes
to the config's on-failure destination, an SQS queue, in the shape the Lambda Developer Guide
documents (``destination_record``). A new invocation of the same event has a new request id.
"""

from __future__ import annotations

import json
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

# Lambda's default for an asynchronous invocation: two retries after the first attempt.
DEFAULT_RETRY_ATTEMPTS = 2
RETRIES_EXHAUSTED = "RetriesExhausted"

PlayedCode = Callable[[Any], Any]


@dataclass(frozen=True)
class Invocation:
    """An event Lambda accepted for a function, under its request id."""

    function_name: str
    request_id: str
    event: Any


@dataclass(frozen=True)
class Outcome:
    """What became of an invocation: its attempts, and the error of the last one (None: it
    succeeded); ``destination``, the queue URL its record went to after the last failure."""

    invocation: Invocation
    attempts: int
    error: BaseException | None = None
    destination: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.error is None


def destination_record(
    function_arn: str, request_id: str, event: Any, error: BaseException, attempts: int, at: datetime
) -> dict[str, Any]:
    """The record Lambda sends to an on-failure destination after an invocation's last attempt
    failed with ``error`` (the Python runtime's errorType, errorMessage and stackTrace)."""
    return {
        "version": "1.0",
        "timestamp": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "requestContext": {
            "requestId": request_id,
            "functionArn": f"{function_arn}:$LATEST",
            "condition": RETRIES_EXHAUSTED,
            "approximateInvokeCount": attempts,
        },
        "requestPayload": event,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {
            "errorMessage": str(error),
            "errorType": type(error).__name__,
            "requestId": request_id,
            "stackTrace": traceback.format_tb(error.__traceback__),
        },
    }


class AsyncInvocations:
    """The Lambda service's asynchronous side for the functions in ``code`` (by function name):
    ``lambda_client`` reads their configuration from moto, ``sqs`` writes their failure records."""

    def __init__(self, lambda_client: Any, sqs: Any, code: Mapping[str, PlayedCode]) -> None:
        self._lambda = lambda_client
        self._sqs = sqs
        self._code = dict(code)
        self._queued: list[Invocation] = []

    @property
    def queued(self) -> int:
        return len(self._queued)

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes | str) -> dict[str, Any]:  # noqa: N803
        """Lambda's Invoke: an asynchronous invocation is queued and answered with 202."""
        name = FunctionName.rsplit(":function:", 1)[-1].split(":", 1)[0]
        if InvocationType != "Event":
            raise _client_error("InvalidParameterValueException", "only InvocationType=Event is played")
        if name not in self._code:
            raise _client_error("ResourceNotFoundException", f"Function not found: {FunctionName}")
        try:
            event = json.loads(Payload)
        except ValueError:
            raise _client_error(
                "InvalidRequestContentException", "Could not parse request body into json"
            ) from None
        request_id = str(uuid.uuid4())
        self._queued.append(Invocation(name, request_id, event))
        return {"StatusCode": 202, "ResponseMetadata": {"RequestId": request_id}}

    def run_queued(self) -> list[Outcome]:
        """Run every queued invocation, in order, with its retries; failures go to their destination."""
        queued, self._queued = self._queued, []
        return [self._run(invocation) for invocation in queued]

    def _run(self, invocation: Invocation) -> Outcome:
        config = self._invoke_config(invocation.function_name)
        attempts = 1 + int(config.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS))
        error: BaseException | None = None
        for attempt in range(1, attempts + 1):
            try:
                self._code[invocation.function_name](invocation.event)
            except Exception as failure:  # noqa: BLE001 - any error fails the attempt, as in Lambda
                error = failure
                continue
            return Outcome(invocation, attempt)
        assert error is not None
        destination = config.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        if not destination:
            return Outcome(invocation, attempts, error)
        arn = self._lambda.get_function(FunctionName=invocation.function_name)["Configuration"]["FunctionArn"]
        at = datetime.now(UTC)
        record = destination_record(arn, invocation.request_id, invocation.event, error, attempts, at)
        url = self._queue_url(destination)
        self._sqs.send_message(QueueUrl=url, MessageBody=json.dumps(record))
        return Outcome(invocation, attempts, error, url)

    def _invoke_config(self, function_name: str) -> dict[str, Any]:
        try:
            config: dict[str, Any] = self._lambda.get_function_event_invoke_config(FunctionName=function_name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
            return {}
        return config

    def _queue_url(self, queue_arn: str) -> str:
        """The URL of the destination queue (an SQS ARN: ``arn:aws:sqs:<region>:<account>:<name>``)."""
        _, _, _, _, account, name = queue_arn.split(":", 5)
        url: str = self._sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
        return url


def _client_error(code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "Invoke")
