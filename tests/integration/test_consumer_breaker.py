"""The re-driver reads a target's own Powertools circuit breaker as the target does: the real utility
(``aws_lambda_powertools.utilities.circuit_breaker``, DynamoDB persistence) drives the record on a
moto table, and ``ConsumerBreakerReader`` reads the same record into its gate. A read that fails is
SEND, with the reason and a warning."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.circuit_breaker import (
    CircuitBreakerConfig,
    CircuitBreakerOpenError,
    circuit_breaker,
)
from aws_lambda_powertools.utilities.circuit_breaker.persistence import CircuitBreakerDynamoDBPersistence
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from freezegun import freeze_time
from moto import mock_aws

from local_aws.simulated_time import SIM_EPOCH, UNFROZEN
from sqs_redriver.protocol.sources import ConsumerBreaker
from sqs_redriver.runtime.consumer_breaker import ConsumerBreakerReader, ConsumerGate, GateReading

SEND, HOLD, PROBE = ConsumerGate.SEND, ConsumerGate.HOLD, ConsumerGate.PROBE
TABLE = "CircuitBreakerState"
FAILURES = 3  # the consumer's failure_threshold
RECOVERY = 30  # its recovery_timeout, which the re-driver is told
LOG = logging.getLogger("tests.consumer_breaker")


@pytest.fixture
def frozen() -> Iterator[Any]:
    """Powertools, moto and the reader on one clock that moves only when a test moves it."""
    with freeze_time(datetime.fromtimestamp(SIM_EPOCH, UTC), ignore=UNFROZEN) as frozen_time, mock_aws():
        yield frozen_time


@pytest.fixture
def circuit(request: pytest.FixtureRequest) -> str:
    """A circuit name per test: Powertools counts failures per name in module-level state."""
    return f"payments-{request.node.name}"


def now() -> int:
    return int(time.time())


def create_table(client: Any, *, key_attr: str = "id", sort_key_attr: str = "") -> None:
    """The table as Powertools documents it: a string partition key (and a sort key, composite),
    TTL on ``expiration``."""
    keys = [(key_attr, "HASH")] + ([(sort_key_attr, "RANGE")] if sort_key_attr else [])
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": name, "KeyType": kind} for name, kind in keys],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name, _ in keys],
        BillingMode="PAY_PER_REQUEST",
    )
    client.update_time_to_live(
        TableName=TABLE, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiration"}
    )


def protected(
    persistence: CircuitBreakerDynamoDBPersistence, circuit: str, *, successes_to_close: int = 1
) -> Callable[[bool], str]:
    """The consumer's work behind its breaker: fails when told to."""
    config = CircuitBreakerConfig(
        failure_threshold=FAILURES,
        recovery_timeout=RECOVERY,
        success_threshold=successes_to_close,
        local_cache_max_age=0,
    )

    def handle(fail: bool) -> str:
        if fail:
            raise ConnectionError("the consumer's downstream is down")
        return "done"

    guarded: Callable[[bool], str] = circuit_breaker(
        name=circuit, persistence_store=persistence, config=config
    )(handle)
    return guarded


def trip(handle: Callable[[bool], str]) -> None:
    for _ in range(FAILURES):
        with pytest.raises(ConnectionError):
            handle(True)


def consumer(client: Any, circuit: str, *, successes_to_close: int = 1) -> Callable[[bool], str]:
    """A consumer with Powertools' default layout (the circuit's name in ``id``) on a new table."""
    create_table(client)
    persistence = CircuitBreakerDynamoDBPersistence(table_name=TABLE, boto3_client=client)
    return protected(persistence, circuit, successes_to_close=successes_to_close)


def read(client: Any, breaker: ConsumerBreaker) -> GateReading:
    return ConsumerBreakerReader(client, LOG).read(breaker, now())


def stored_state(client: Any, circuit: str) -> str:
    return str(client.get_item(TableName=TABLE, Key={"id": {"S": circuit}})["Item"]["state"]["S"])


def test_a_breaker_that_never_opened_lets_the_redriver_send(frozen: Any, circuit: str) -> None:
    client = boto3.client("dynamodb")
    handle = consumer(client, circuit)
    handle(False)

    reading = read(client, ConsumerBreaker(table=TABLE, name=circuit))

    assert reading == GateReading(SEND, "no record: the consumer's breaker has not opened")


def test_a_breaker_tripped_by_failures_holds_everything_while_the_consumer_refuses_calls(
    frozen: Any, circuit: str
) -> None:
    client = boto3.client("dynamodb")
    handle = consumer(client, circuit)
    breaker = ConsumerBreaker(table=TABLE, name=circuit, recovery_timeout_seconds=RECOVERY)

    trip(handle)
    frozen.tick(RECOVERY - 1)

    assert read(client, breaker).gate is HOLD
    with pytest.raises(CircuitBreakerOpenError):
        handle(False)


def test_past_its_recovery_timeout_the_redriver_probes_and_a_probe_success_closes_it(
    frozen: Any, circuit: str
) -> None:
    client = boto3.client("dynamodb")
    handle = consumer(client, circuit)
    breaker = ConsumerBreaker(table=TABLE, name=circuit, recovery_timeout_seconds=RECOVERY)
    trip(handle)

    frozen.tick(RECOVERY)
    probing = read(client, breaker)
    answer = handle(False)  # a canary: Powertools lets it through as its probe

    assert probing.gate is PROBE
    assert answer == "done"
    assert stored_state(client, circuit) == "CLOSED"
    assert read(client, breaker) == GateReading(SEND, "CLOSED")


def test_a_half_open_breaker_gets_canaries_until_its_probe_successes_close_it(
    frozen: Any, circuit: str
) -> None:
    client = boto3.client("dynamodb")
    handle = consumer(client, circuit, successes_to_close=2)
    breaker = ConsumerBreaker(table=TABLE, name=circuit, recovery_timeout_seconds=RECOVERY)
    trip(handle)
    frozen.tick(RECOVERY)

    handle(False)

    assert stored_state(client, circuit) == "HALF_OPEN"
    assert read(client, breaker).gate is PROBE
    handle(False)
    assert read(client, breaker).gate is SEND


def test_a_failed_probe_reopens_the_breaker_and_holds_the_redrives_for_another_timeout(
    frozen: Any, circuit: str
) -> None:
    client = boto3.client("dynamodb")
    handle = consumer(client, circuit)
    breaker = ConsumerBreaker(table=TABLE, name=circuit, recovery_timeout_seconds=RECOVERY)
    trip(handle)
    frozen.tick(RECOVERY + 5)

    with pytest.raises(ConnectionError):
        handle(True)

    assert read(client, breaker).gate is HOLD
    frozen.tick(RECOVERY - 1)
    assert read(client, breaker).gate is HOLD
    frozen.tick(1)
    assert read(client, breaker).gate is PROBE


def test_the_composite_key_layout_and_renamed_attributes_are_read(frozen: Any, circuit: str) -> None:
    client = boto3.client("dynamodb")
    create_table(client, key_attr="pk", sort_key_attr="sk")
    persistence = CircuitBreakerDynamoDBPersistence(
        table_name=TABLE,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value="circuit_breaker#orders-consumer",
        state_attr="circuit_state",
        opened_at_attr="opened",
        boto3_client=client,
    )
    breaker = ConsumerBreaker(
        table=TABLE,
        name=circuit,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value="circuit_breaker#orders-consumer",
        state_attr="circuit_state",
        opened_at_attr="opened",
        recovery_timeout_seconds=RECOVERY,
    )

    trip(protected(persistence, circuit))

    assert read(client, breaker).gate is HOLD
    frozen.tick(RECOVERY)
    assert read(client, breaker).gate is PROBE


def test_a_reader_told_the_wrong_key_layout_reports_the_breaker_unreadable(
    frozen: Any, circuit: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = boto3.client("dynamodb")
    create_table(client, key_attr="pk", sort_key_attr="sk")

    with caplog.at_level(logging.WARNING, logger=LOG.name):
        reading = read(client, ConsumerBreaker(table=TABLE, name=circuit))

    assert reading.gate is SEND
    assert reading.reason.startswith("breaker unreadable: ValidationException: ")
    assert [(r.levelname, getattr(r, "circuit", None)) for r in caplog.records] == [("WARNING", circuit)]


def test_a_record_powertools_cannot_parse_is_send_as_the_consumer_itself_runs_every_call(
    frozen: Any, circuit: str
) -> None:
    client = boto3.client("dynamodb")
    handle = consumer(client, circuit)
    client.put_item(
        TableName=TABLE,
        Item={"id": {"S": circuit}, "state": {"S": "TRIPPED"}, "opened_at": {"N": str(now())}},
    )

    reading = read(client, ConsumerBreaker(table=TABLE, name=circuit))

    assert handle(False) == "done"  # Powertools fails open on the record it cannot read
    assert reading.gate is SEND
    assert "'TRIPPED' is not CLOSED, OPEN or HALF_OPEN" in reading.reason


def test_a_missing_table_is_an_unreadable_breaker_send_and_a_warning(
    frozen: Any, circuit: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = boto3.client("dynamodb")

    with caplog.at_level(logging.WARNING, logger=LOG.name):
        reading = read(client, ConsumerBreaker(table=TABLE, name=circuit))

    assert reading.gate is SEND
    assert reading.reason.startswith("breaker unreadable: ResourceNotFoundException")
    [warning] = caplog.records
    assert (warning.levelname, getattr(warning, "table", None)) == ("WARNING", TABLE)
    assert "ResourceNotFoundException" in getattr(warning, "error", "")


def test_the_reader_asks_for_a_strongly_consistent_read_of_the_circuits_key() -> None:
    client = boto3.client("dynamodb")
    breaker = ConsumerBreaker(table=TABLE, name="payments", recovery_timeout_seconds=RECOVERY)
    item = {"id": {"S": "payments"}, "state": {"S": "OPEN"}, "opened_at": {"N": "1000"}}
    expected = {"TableName": TABLE, "Key": {"id": {"S": "payments"}}, "ConsistentRead": True}

    with Stubber(client) as stubber:
        stubber.add_response("get_item", {"Item": item}, expected)
        reading = ConsumerBreakerReader(client, LOG).read(breaker, 1_010)
        stubber.assert_no_pending_responses()

    assert reading.gate is HOLD


@pytest.mark.parametrize(
    "code", ["AccessDeniedException", "ThrottlingException", "ProvisionedThroughputExceededException"]
)
def test_a_refused_read_is_an_unreadable_breaker_never_a_held_source(code: str) -> None:
    client = boto3.client("dynamodb")

    with Stubber(client) as stubber:
        stubber.add_client_error("get_item", service_error_code=code, service_message="not this time")
        reading = ConsumerBreakerReader(client, LOG).read(ConsumerBreaker(table=TABLE, name="payments"), 0)

    assert reading == GateReading(SEND, f"breaker unreadable: {code}: not this time")


class Unreachable:
    def get_item(self, **_: Any) -> Any:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.eu-west-1.amazonaws.com")


def test_an_unreachable_table_is_an_unreadable_breaker() -> None:
    reading = ConsumerBreakerReader(Unreachable(), LOG).read(ConsumerBreaker(table=TABLE, name="payments"), 0)

    assert reading.gate is SEND
    assert reading.reason.startswith("breaker unreadable: EndpointConnectionError: ")
