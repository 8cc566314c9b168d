"""What a valid mark lets through fits everything built from it: keys, FIFO ids, sends, routes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.breaker import Canary
from sqs_redriver.core.message import Tracked, deduplication_id
from sqs_redriver.core.sqs import TOO_LONG, Outgoing, SqsQueue, chunks_by_size
from sqs_redriver.core.table import ParkCause, ParkReason
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.limits import (
    DYNAMODB_MAX_KEY_BYTES,
    IDENTITY_PATTERN,
    MAX_IDENTITY_CHARS,
    MAX_VERDICT_KEY_CHARS,
    S3_MAX_KEY_BYTES,
    SQS_DEDUPLICATION_ID_PATTERN,
    SQS_MAX_BATCH_SIZE,
    SQS_MAX_MESSAGE_BYTES,
    VERDICT_KEY_PATTERN,
)
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.parking import archive_key, unknown_source_reason
from sqs_redriver.runtime.plan import Park
from sqs_redriver.runtime.routing import Routes
from tests.support.fakes import ACCOUNT, dlq_message, queue_url

NOW = 1_800_000_000
identities = st.from_regex(IDENTITY_PATTERN, fullmatch=True).filter(lambda i: len(i) <= MAX_IDENTITY_CHARS)
# SQS MessageIds are UUIDs; up to 100 characters is what SQS documents for batch entry ids.
message_ids = st.text(alphabet="0123456789abcdef-", min_size=1, max_size=100)
LONGEST_QUEUE_NAME = "q" * 75 + ".fifo"


@given(identities, message_ids)
def test_every_key_built_from_a_valid_identity_fits_its_store(identity: str, message_id: str) -> None:
    tracked = Tracked(dlq_message(message_id=message_id), Mark(identity, 1, NOW))
    reason = ParkReason(ParkCause.OVER_LIMIT, "x", 1, NOW, NOW, queue_url(LONGEST_QUEUE_NAME), message_id)

    assert len(f"MSG#{identity}".encode()) <= DYNAMODB_MAX_KEY_BYTES
    assert len(archive_key(Park(tracked, reason), NOW).encode()) <= S3_MAX_KEY_BYTES
    verdict_key = Canary((identity,), NOW, sent_at=NOW).verdict_key
    assert len(verdict_key) <= MAX_VERDICT_KEY_CHARS and VERDICT_KEY_PATTERN.fullmatch(verdict_key)


steps = st.one_of(st.integers(0, 60).map(str), st.sampled_from(["parked", "replay"]))
dedup_inputs = st.tuples(message_ids, st.text(max_size=300), steps, st.none() | st.integers(0, 2**40))


def tracked_for(message_id: str, identity: str, replayed_at: int | None) -> Tracked:
    replays = ((replayed_at, 3),) if replayed_at is not None else ()
    return Tracked(dlq_message(message_id=message_id), Mark(identity, 1, NOW, replays=replays))


@given(dedup_inputs)
def test_a_deduplication_id_is_always_one_sqs_accepts(parts: tuple[str, str, str, int | None]) -> None:
    message_id, identity, step, replayed_at = parts
    dedup = deduplication_id(tracked_for(message_id, identity, replayed_at), step)
    assert SQS_DEDUPLICATION_ID_PATTERN.fullmatch(dedup)


@given(st.lists(dedup_inputs, min_size=2, max_size=20, unique=True))
def test_distinct_messages_and_steps_never_share_a_deduplication_id(
    inputs: list[tuple[str, str, str, int | None]],
) -> None:
    ids = {deduplication_id(tracked_for(m, i, r), s) for m, i, s, r in inputs}
    assert len(ids) == len(inputs)


def test_two_messages_sharing_a_forged_identity_and_count_get_different_ids() -> None:
    first, second = (tracked_for(m, "same-identity", None) for m in ("m-1", "m-2"))
    assert deduplication_id(first, "2") != deduplication_id(second, "2")


def outgoing(index: int, size: int) -> Outgoing:
    return Outgoing(str(index), "x" * size, {})


@given(st.lists(st.integers(0, SQS_MAX_MESSAGE_BYTES), max_size=30))
def test_calls_hold_at_most_ten_entries_and_one_mib_in_order(sizes: list[int]) -> None:
    messages = [outgoing(i, size) for i, size in enumerate(sizes)]
    chunks = list(chunks_by_size(messages))

    assert [m for chunk in chunks for m in chunk] == messages
    for chunk in chunks:
        assert 1 <= len(chunk) <= SQS_MAX_BATCH_SIZE
        assert sum(m.size for m in chunk) <= SQS_MAX_MESSAGE_BYTES


class RecordingClient:
    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(Entries)
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


def test_a_message_over_the_limit_fails_alone_and_the_rest_are_sent() -> None:
    client = RecordingClient()
    queue = SqsQueue(queue_url("orders"), client)  # type: ignore[arg-type]
    messages = [outgoing(0, 10), outgoing(1, SQS_MAX_MESSAGE_BYTES + 1), outgoing(2, 10)]

    result = queue.send(messages)

    assert result.succeeded == ["0", "2"] and result.call_error is None
    assert result.failed["1"].code == TOO_LONG and result.failed["1"].sender_fault
    assert [[e["Id"] for e in call] for call in client.calls] == [["0", "2"]]


# -- routing by the consumer kit's err.src -----------------------------------------------------

ORDERS, PAYMENTS = queue_url("orders"), queue_url("payments")
ROUTES = Routes((ORDERS, PAYMENTS))


def arn(name: str) -> str:
    return f"arn:aws:sqs:us-east-1:{ACCOUNT}:{name}"


def dead_lettered_by_the_kit(src: str, sqs_names: str | None = None) -> Tracked:
    failure = Failure(FailureKind.TRANSIENT, "E", "m", "fp", NOW, 2, src)
    message = dlq_message(source=sqs_names)
    return Tracked(message, Mark("id-1", 0, NOW, failure=failure))


def test_a_message_the_kit_dead_lettered_from_the_second_source_goes_back_there() -> None:
    assert ROUTES.source_url(dead_lettered_by_the_kit(arn("payments"))) == PAYMENTS


def test_the_source_sqs_names_wins_over_the_kits() -> None:
    assert ROUTES.source_url(dead_lettered_by_the_kit(arn("payments"), sqs_names="orders")) == ORDERS


def test_a_kit_source_that_is_not_a_queue_arn_is_ignored() -> None:
    assert ROUTES.source_url(dead_lettered_by_the_kit("not an arn")) == ORDERS
    assert ROUTES.source_url(dead_lettered_by_the_kit("")) == ORDERS


def test_a_kit_source_that_is_not_configured_is_parked_naming_the_field() -> None:
    tracked = dead_lettered_by_the_kit(arn("legacy"))

    assert ROUTES.source_url(tracked) is None
    why = unknown_source_reason(tracked, now=NOW, routes=ROUTES).why
    assert f"no configured source queue is {arn('legacy')} (the consumer kit's err.src)" in why


@given(st.text(max_size=300))
def test_any_kit_source_routes_to_a_configured_queue_or_to_parking(src: str) -> None:
    assert ROUTES.source_url(dead_lettered_by_the_kit(src)) in (ORDERS, PAYMENTS, None)
