"""local_aws.async_lambda on moto: Lambda's asynchronous invocations played for a function moto
stores (its event invoke config read from moto), each failure after the last retry sent to the
on-failure destination as the record Lambda writes, which the re-driver reads as the function's."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local_aws import ACCOUNT, REGION
from local_aws.async_lambda import AsyncInvocations
from local_aws.resources import queue_arn
from sqs_redriver.protocol.dead_letters import Cause, compact_json, read_dead_letter
from sqs_redriver.protocol.sources import DeadLetterSource, SourceKind, TargetKind

NAME = "notifier"
ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{NAME}"
SOURCE = DeadLetterSource(kind=SourceKind.FUNCTION, arn=ARN, target_kind=TargetKind.FUNCTION, target_arn=ARN)
EVENT = {"order_id": "o-1", "email": "ada@example.com"}


class Played:
    """The function's code: fails its first ``failures`` attempts with a ValueError."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.runs: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.runs.append(event)
        if len(self.runs) <= self.failures:
            raise ValueError(f"attempt {len(self.runs)} failed")


@pytest.fixture
def clients() -> Iterator[dict[str, Any]]:
    """The function in moto, with its DLQ as the on-failure destination and 2 retries."""
    with mock_aws():
        clients = {name: boto3.client(name, region_name=REGION) for name in ("iam", "lambda", "sqs")}
        trust = {"Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}]}
        role = clients["iam"].create_role(RoleName=NAME, AssumeRolePolicyDocument=json.dumps(trust))
        clients["lambda"].create_function(
            FunctionName=NAME,
            Runtime="python3.13",
            Role=role["Role"]["Arn"],
            Handler="app.handler",
            Code={"ZipFile": _package()},
        )
        dlq_url = clients["sqs"].create_queue(QueueName="notifier-dlq")["QueueUrl"]
        clients["lambda"].put_function_event_invoke_config(
            FunctionName=NAME,
            MaximumRetryAttempts=2,
            DestinationConfig={"OnFailure": {"Destination": queue_arn(clients["sqs"], dlq_url)}},
        )
        yield clients | {"dlq_url": dlq_url}


def _package() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    pass\n")
    return buffer.getvalue()


def invoke(service: AsyncInvocations, event: Any = EVENT) -> str:
    response = service.invoke(FunctionName=ARN, InvocationType="Event", Payload=json.dumps(event).encode())
    assert response["StatusCode"] == 202
    request_id: str = response["ResponseMetadata"]["RequestId"]
    return request_id


def dead_letters(clients: dict[str, Any]) -> list[dict[str, Any]]:
    response = clients["sqs"].receive_message(
        QueueUrl=clients["dlq_url"], MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    )
    return response.get("Messages", [])


def test_an_accepted_invocation_runs_only_when_lambda_runs_its_queue(clients: dict[str, Any]) -> None:
    code = Played(failures=0)
    service = AsyncInvocations(clients["lambda"], clients["sqs"], {NAME: code})

    invoke(service)
    queued_before = (service.queued, list(code.runs))
    [outcome] = service.run_queued()

    assert queued_before == (1, [])
    assert (outcome.succeeded, outcome.attempts, code.runs) == (True, 1, [EVENT])
    assert service.queued == 0 and dead_letters(clients) == []


def test_a_failure_of_every_attempt_sends_lambdas_record_which_reads_as_the_functions(
    clients: dict[str, Any],
) -> None:
    service = AsyncInvocations(clients["lambda"], clients["sqs"], {NAME: Played(failures=3)})

    request_id = invoke(service)
    [outcome] = service.run_queued()
    [message] = dead_letters(clients)

    record = json.loads(message["Body"])
    assert outcome.attempts == 3 and outcome.destination == clients["dlq_url"]
    assert record["requestContext"] == {
        "requestId": request_id,
        "functionArn": f"{ARN}:$LATEST",
        "condition": "RetriesExhausted",
        "approximateInvokeCount": 3,
    }
    assert record["requestPayload"] == EVENT
    assert record["responseContext"]["functionError"] == "Unhandled"
    dead_letter = read_dead_letter(message["Body"], {}, (SOURCE,))
    assert (dead_letter.source, dead_letter.payload) == (SOURCE, compact_json(EVENT))
    assert (dead_letter.request_id, dead_letter.cause) == (
        request_id,
        Cause("ValueError", "attempt 3 failed"),
    )


def test_the_same_event_invoked_again_fails_in_a_new_record_with_a_new_request_id(
    clients: dict[str, Any],
) -> None:
    service = AsyncInvocations(clients["lambda"], clients["sqs"], {NAME: Played(failures=6)})

    first, second = invoke(service), invoke(service)
    service.run_queued()

    ids = {json.loads(m["Body"])["requestContext"]["requestId"] for m in dead_letters(clients)}
    assert first != second and ids == {first, second}


def test_a_success_on_a_retry_writes_no_record(clients: dict[str, Any]) -> None:
    service = AsyncInvocations(clients["lambda"], clients["sqs"], {NAME: Played(failures=2)})

    invoke(service)
    [outcome] = service.run_queued()

    assert (outcome.succeeded, outcome.attempts) == (True, 3)
    assert dead_letters(clients) == []


def test_the_retries_are_the_event_invoke_configs(clients: dict[str, Any]) -> None:
    # moto 5.2.5 keeps the first config's retries through a later put or update: replace it
    config = clients["lambda"].get_function_event_invoke_config(FunctionName=NAME)
    clients["lambda"].delete_function_event_invoke_config(FunctionName=NAME)
    clients["lambda"].put_function_event_invoke_config(
        FunctionName=NAME, MaximumRetryAttempts=0, DestinationConfig=config["DestinationConfig"]
    )
    code = Played(failures=1)
    service = AsyncInvocations(clients["lambda"], clients["sqs"], {NAME: code})

    invoke(service)
    [outcome] = service.run_queued()

    assert (outcome.succeeded, outcome.attempts, len(code.runs)) == (False, 1, 1)
    assert len(dead_letters(clients)) == 1


@pytest.mark.parametrize(
    ("name", "invocation_type", "payload", "code"),
    [
        (NAME, "RequestResponse", b"{}", "InvalidParameterValueException"),
        ("invoices", "Event", b"{}", "ResourceNotFoundException"),
        (NAME, "Event", b"not json", "InvalidRequestContentException"),
    ],
)
def test_only_asynchronous_invocations_of_a_played_function_with_json_are_taken(
    clients: dict[str, Any], name: str, invocation_type: str, payload: bytes, code: str
) -> None:
    service = AsyncInvocations(clients["lambda"], clients["sqs"], {NAME: Played(failures=0)})

    with pytest.raises(ClientError) as refused:
        service.invoke(FunctionName=name, InvocationType=invocation_type, Payload=payload)

    assert refused.value.response["Error"]["Code"] == code
    assert service.queued == 0
