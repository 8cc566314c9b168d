"""The moto world the integration tests run in: its resources, a re-driver and its settings over
them, and readers of what the queues and the table hold."""

from __future__ import annotations

import functools
from typing import Any

from local_aws.compose import local_redriver
from local_aws.resources import Clients, Resources, create_resources, create_table, new_clients
from sqs_redriver.core.breaker import BreakerPolicy
from sqs_redriver.core.transfer import TokenBucket
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, Mark
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.runtime.run import Redriver
from sqs_redriver.runtime.settings import Settings
from tests.support.factories import FakeClock, always, consume

IDEMPOTENCY_TABLE = "orders-idempotency"
MAX_RECEIVE_COUNT = 2
SOURCE_VISIBILITY_TIMEOUT = 30
# How long a failing canary takes to come back, as the re-driver computes it from the queue.
CANARY_WINDOW = SOURCE_VISIBILITY_TIMEOUT * (MAX_RECEIVE_COUNT + 1)
Aws = Resources  # what the `aws` fixture yields
REMAINING = lambda: 60_000  # noqa: E731 - the Lambda context's clock, plenty of time


def create_aws(*, fifo: bool = False, clients: Clients | None = None) -> Aws:
    """A source queue with its DLQ (maxReceiveCount 2), a parking lot, the state table and the
    consumer's idempotency table; inside mock_aws. With ``clients``, or new ones."""
    aws = create_resources(
        fifo=fifo,
        max_receive_count=MAX_RECEIVE_COUNT,
        source_visibility_timeout=SOURCE_VISIBILITY_TIMEOUT,
        clients=clients,
    )
    create_table(aws.dynamodb, IDEMPOTENCY_TABLE, "id")
    return aws


@functools.cache
def reused_clients() -> Clients:
    """One set of clients for the worlds of a test that builds hundreds of them, one after another,
    each in its own mock_aws (moto answers a client whenever a mock is on, whenever it was made):
    a client costs more to make than a world's calls. Only for worlds whose clients no test
    changes (an event handler registered on one would stay for every later world)."""
    return new_clients()


def handler_environment(aws: Aws, **extra: str) -> dict[str, str]:
    """The re-drive handler's environment over ``aws``'s resources, and ``extra``. The real handler
    runs on the real clock: its slow start would sleep real seconds (a run waits to send its second
    batch), so it is off here; slow start is tested in simulated time (test_slow_start.py). One batch
    at a time: moto's receive is not atomic across threads (SQS's is), so parallel batches could both
    receive one message (a busy machine made one run park a dead letter twice)."""
    return {
        "DLQ_URL": aws.dlq_url,
        "SOURCE_QUEUE_URL": aws.source_url,
        "PARKING_LOT_URL": aws.parking_lot_url,
        "DYNAMODB_TABLE_NAME": aws.table_name,
        "RECEIVE_WAIT_SECONDS": "0",
        "SLOW_START_SECONDS": "0",
        "PARALLEL_BATCHES": "1",
        **extra,
    }


def make_settings(aws: Aws, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "dlq_url": aws.dlq_url,
        "source_queue_url": aws.source_url,
        "parking_lot_url": aws.parking_lot_url,
        "table_name": aws.table_name,
        "archive_bucket": aws.archive_bucket,
        "base_delay_seconds": 0,
        "max_delay_seconds": 0,
        "receive_wait_seconds": 0,
        "max_redrives_per_second": 500,  # the limiter has tests of its own; here it must not slow runs
        # moto's in-process receive is not atomic across threads (SQS's is): parallel batches are
        # tested on their own, with receives serialized as SQS does.
        "parallel_batches": 1,
        # Slow start paces by time; it has tests of its own (tests/unit/test_slow_start.py, the e2e recovery).
        "slow_start_seconds": 0,
        "breaker": BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2),
    }
    values.update(overrides)
    return Settings(**values)


def make_redriver(
    aws: Aws,
    settings: Settings,
    clock: FakeClock,
    sqs: Any = None,
    dynamodb: Any = None,
    limiter: TokenBucket | None = None,
    s3: Any = None,
) -> Redriver:
    """A re-driver on the fake clock (its sleeps move it), over ``aws``'s clients or the proxies given."""
    return local_redriver(
        settings,
        sqs=sqs or aws.sqs,
        dynamodb=dynamodb or aws.dynamodb,
        s3=s3 or aws.s3,
        clock=clock,
        sleep=clock.advance,
        logger_name="redriver-tests",
        limiter=limiter,
    )


def fail_into_dlq(aws: Aws, queue_url: str, *bodies: str) -> None:
    """Send to a source queue and let its broken consumer fail the messages into the DLQ."""
    for body in bodies:
        aws.sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    consume(aws.sqs, queue_url, always)


def mark_of(message: dict[str, Any]) -> Mark:
    """The mark a message received from a queue carries."""
    return Mark.from_json(message["MessageAttributes"][MARK_ATTRIBUTE]["StringValue"])


def stored_item(aws: Aws, key: str) -> dict[str, Any] | None:
    """The state table's item under ``key``, read consistently; None if there is none."""
    found: dict[str, Any] | None = aws.dynamodb.get_item(
        TableName=aws.table_name, Key={"pk": {"S": key}}, ConsistentRead=True
    ).get("Item")
    return found


def stored_breaker(aws: Aws) -> dict[str, Any] | None:
    """The breaker record of ``aws``'s source queue, as stored."""
    return stored_item(aws, RecordKind.BREAKER.key(aws.source_url))
