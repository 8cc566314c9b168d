"""The re-drive function's table grant against the calls its state table adapter really makes:
every call the Lambda makes is allowed, every grant is used, and the operator's writes are not; and
what the operator's ``status`` reads, against the operator's grant."""

from __future__ import annotations

import re
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

import sqs_redriver.runtime
from sqs_redriver.cdk.access import (
    OPERATOR_INDEX_ACTIONS,
    OPERATOR_TABLE_ACTIONS,
    TableAccess,
    consumer_table_keys,
    redriver_table_access,
)
from sqs_redriver.console.status import read_status
from sqs_redriver.console.tool import Deployment
from sqs_redriver.core.breaker import Breaker, Canary
from sqs_redriver.core.source_growth import Baseline, BaselineTable
from sqs_redriver.core.table import (
    DrainRecord,
    GroupAction,
    GroupMark,
    HeldGroup,
    MessageRecord,
    Pause,
    RecordStatus,
    StateTable,
)
from sqs_redriver.kit.aws import KitAws, VerdictTally
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.keys import RecordKind, trip_subject, worker_key
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.settings import Settings
from sqs_redriver.runtime.wiring import idempotency_guard

DLQ = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq"
SOURCES = (
    "https://sqs.eu-west-1.amazonaws.com/123456789012/orders",
    "https://sqs.eu-west-1.amazonaws.com/123456789012/refunds",
)
OTHER_DLQ = "https://sqs.eu-west-1.amazonaws.com/123456789012/payments-dlq"
SETTINGS = Settings(
    dlq_url=DLQ,
    source_queue_url=SOURCES[0],
    other_source_queue_urls=SOURCES[1:],
    parking_lot_url="https://sqs.eu-west-1.amazonaws.com/123456789012/orders-parking-lot",
    table_name="state",
)
Call = tuple[str, tuple[str, ...]]  # an IAM action and the partition keys it is checked against


class RecordingClient:
    """A DynamoDB client that answers with nothing and records each call as IAM authorizes it:
    an action per operation (per item of a transaction) with the partition keys it touches."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.index_keys: list[str] = []  # what a Query of the identity index lists

    def query(self, **request: Any) -> dict[str, Any]:
        # Authorized on the index's ARN: LeadingKeys is the table's partition key, not the index's.
        self.calls.append(("dynamodb:Query", (f"index/{request['IndexName']}",)))
        return {"Items": [{"pk": {"S": key}} for key in self.index_keys]}

    def get_item(self, **request: Any) -> dict[str, Any]:
        self.calls.append(("dynamodb:GetItem", (request["Key"]["pk"]["S"],)))
        return {}

    def put_item(self, **request: Any) -> dict[str, Any]:
        self.calls.append(("dynamodb:PutItem", (request["Item"]["pk"]["S"],)))
        return {}

    def update_item(self, **request: Any) -> dict[str, Any]:
        self.calls.append(("dynamodb:UpdateItem", (request["Key"]["pk"]["S"],)))
        return {}

    def delete_item(self, **request: Any) -> dict[str, Any]:
        self.calls.append(("dynamodb:DeleteItem", (request["Key"]["pk"]["S"],)))
        return {}

    def batch_get_item(self, **request: Any) -> dict[str, Any]:
        [wanted] = request["RequestItems"].values()
        self.calls.append(("dynamodb:BatchGetItem", tuple(key["pk"]["S"] for key in wanted["Keys"])))
        return {"Responses": {}, "UnprocessedKeys": {}}

    def batch_write_item(self, **request: Any) -> dict[str, Any]:
        [items] = request["RequestItems"].values()
        keys = [
            (item["PutRequest"]["Item"] if "PutRequest" in item else item["DeleteRequest"]["Key"])["pk"]["S"]
            for item in items
        ]
        self.calls.append(("dynamodb:BatchWriteItem", tuple(keys)))
        return {"UnprocessedItems": {}}

    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        for item in request["TransactItems"]:
            [(operation, body)] = item.items()
            key = body["Item"]["pk"]["S"] if "Item" in body else body["Key"]["pk"]["S"]
            self.calls.append((f"dynamodb:{operation}Item", (key,)))
        return {}


def calls_of(use: Callable[[StateTable], object], *, kit_scope: str | None = DLQ) -> list[Call]:
    """The calls ``use`` makes of a state table that reads the kit records of ``kit_scope`` (the
    re-driver of an SQS consumer's DLQ, as the wiring makes it), or none (one of dead letters)."""
    client = RecordingClient()
    table = StateTable(SETTINGS.table_name, client, ttl_seconds=60, clock=lambda: 1_000, kit_scope=kit_scope)  # type: ignore[arg-type]
    use(table)
    return client.calls


def allowed(call: Call, grants: tuple[TableAccess, ...]) -> bool:
    """IAM's ForAllValues:StringLike on dynamodb:LeadingKeys: every key matches one pattern."""
    action, keys = call
    return any(
        grant.action == action and all(any(fnmatchcase(key, p) for p in grant.keys) for key in keys)
        for grant in grants
    )


CANARY = Canary(identities=("id-1",), verdict_at=2_000, sent_at=1_000)
DRAIN = DrainRecord(
    rate=50, phase="climb", fell_behind_at=0, workers=2, messages_left=10, stepped_at=1, started_at=1
)
RECORD = MessageRecord(Mark(identity="id-1", count=1), RecordStatus.REDRIVEN, SOURCES[1])
TRIP = MessageRecord(
    Mark(identity="sha256:1", count=1), RecordStatus.REDRIVEN, SOURCES[1], key=trip_subject("sha256:1", "r")
)
HELD_KEY = RecordKind.HELD.key(DLQ)
# Every state table call of the re-drive function (runtime/run, act), with the keys it uses.
LAMBDA_USES: dict[str, Callable[[StateTable], object]] = {
    "load each source's breaker": lambda t: [t.load_breaker(RecordKind.BREAKER.key(url)) for url in SOURCES],
    "save each source's breaker": lambda t: [
        t.save_breaker(RecordKind.BREAKER.key(url), Breaker(canary=CANARY), expected_version=0)
        for url in SOURCES
    ],
    "offer a continuation": lambda t: t.offer_continuation(SETTINGS.dlq_url, "token", stale_after=60),
    "take a continuation": lambda t: t.take_continuation(SETTINGS.dlq_url, "token", hold_seconds=60),
    "release a continuation": lambda t: t.release_continuation(SETTINGS.dlq_url, "token"),
    "load a large drain": lambda t: t.load_drain(SETTINGS.drain_key),
    "save a large drain": lambda t: t.save_drain(SETTINGS.drain_key, DRAIN, expected_version=0),
    "check a worker's batch": lambda t: [
        t.load_fleet_view(RecordKind.BREAKER.key(url), SETTINGS.pause_key, SETTINGS.drain_key)
        for url in SOURCES
    ],
    "check a worker's batch and its verdicts": lambda t: t.load_fleet_view(
        RecordKind.BREAKER.key(SOURCES[0]), SETTINGS.pause_key, SETTINGS.drain_key, "run/1000/abcd1234"
    ),
    "offer a worker's lease": lambda t: t.offer_worker(worker_key(DLQ, 3), "token", expires_at=2_000),
    "hold a worker's lease": lambda t: t.hold_worker(worker_key(DLQ, 3), "token", expires_at=2_000),
    "release a worker's lease": lambda t: t.release_worker(worker_key(DLQ, 3), "token"),
    "load the sweep due": lambda t: t.load_sweep_due(SETTINGS.sweep_key),
    "save the sweep due": lambda t: t.save_sweep_due(SETTINGS.sweep_key, 2_000),
    "load the operator's pause": lambda t: t.load_pause(SETTINGS.pause_key),
    "load marks and kit failures": lambda t: t.load_marks(["id-1", "id-2"]),
    "load the operator's group marks": lambda t: t.load_group_marks(["fp-1"]),
    "load group marks and the held groups": lambda t: t.load_failure_groups(["fp-1"], HELD_KEY),
    "load the held groups": lambda t: t.load_held(HELD_KEY),
    "save the held groups": lambda t: t.save_held(HELD_KEY, [HeldGroup("fp-1", since=1_000)]),
    "record a run": lambda t: t.record_run(SETTINGS.runs_key, {"redriven": 1}),
    "load a run's verdicts": lambda t: t.load_verdicts("run/1000/abcd1234"),
    "load a canary's verdicts": lambda t: t.load_verdicts(CANARY.verdict_key),
    "save message records": lambda t: t.save_records([RECORD]),
    "save a dead letter's trip": lambda t: t.save_records([TRIP]),
}
# What only the operator's tool does: the function's grant must refuse each.
OPERATOR_USES: dict[str, Callable[[StateTable], object]] = {
    "pause": lambda t: t.save_pause(SETTINGS.pause_key, Pause("why", "me", 1)),
    "resume": lambda t: t.clear_pause(SETTINGS.pause_key),
    "park a group": lambda t: t.save_group_mark(GroupMark("fp-1", GroupAction.PARK)),
    "retry a group": lambda t: t.save_group_mark(GroupMark("fp-1", GroupAction.RETRY)),
    "forget a group": lambda t: t.clear_group_mark("fp-1"),
    "forget marks and kit failures": lambda t: t.forget_marks(["id-1"]),
    "save another re-driver's breaker": lambda t: t.save_breaker(
        RecordKind.BREAKER.key(OTHER_DLQ), Breaker(), expected_version=0
    ),
    "record another re-driver's run": lambda t: t.record_run(f"RUNS#{OTHER_DLQ}", {}),
    "list an identity's trips": lambda t: t.load_trips(["sha256:1"]),
}
GRANTS = redriver_table_access(DLQ, SOURCES)
# The adapter's methods LAMBDA_USES exercises: every one the function's code calls.
FUNCTION_METHODS = {
    "load_breaker",
    "save_breaker",
    "offer_continuation",
    "take_continuation",
    "release_continuation",
    "load_drain",
    "save_drain",
    "load_fleet_view",
    "offer_worker",
    "hold_worker",
    "release_worker",
    "load_sweep_due",
    "save_sweep_due",
    "load_pause",
    "load_marks",
    "load_group_marks",
    "load_failure_groups",
    "load_held",
    "save_held",
    "record_run",
    "load_verdicts",
    "save_records",
}


@pytest.mark.parametrize("use", LAMBDA_USES.values(), ids=LAMBDA_USES.keys())
def test_every_call_of_the_redrive_function_is_allowed(use: Callable[[StateTable], object]) -> None:
    calls = calls_of(use)

    assert calls and [call for call in calls if not allowed(call, GRANTS)] == []


def baseline_calls(source: str) -> list[Call]:
    """The calls of a chain's look at its source's growth (runtime/source_growth.py): a read and a
    write of the source's baseline (core/source_growth.BaselineTable)."""
    client = RecordingClient()
    table = BaselineTable(SETTINGS.table_name, client, clock=lambda: 1_000)  # type: ignore[arg-type]
    key = RecordKind.BACKLOG.key(source)
    table.load_baseline(key)
    table.save_baseline(key, Baseline(depth=10, since=1_000, until=1_900))
    return client.calls


def test_a_re_driver_of_one_sqs_source_may_read_and_write_its_growth_baseline_alone() -> None:
    calls = baseline_calls(SOURCES[0])
    grants = redriver_table_access(DLQ, SOURCES[:1])

    assert {action for action, _ in calls} == {"dynamodb:GetItem", "dynamodb:PutItem"}
    assert [call for call in calls if not allowed(call, grants)] == []
    assert [call for call in baseline_calls(SOURCES[1]) if allowed(call, grants)] == []
    # several sources, or dead letters of another kind: no chain watches a source's growth
    assert [call for call in calls if allowed(call, GRANTS)] == []
    assert [call for call in calls if allowed(call, redriver_table_access(DLQ, SOURCES[:1], kit=False))] == []


@pytest.mark.parametrize("use", OPERATOR_USES.values(), ids=OPERATOR_USES.keys())
def test_what_only_the_operator_does_is_refused(use: Callable[[StateTable], object]) -> None:
    calls = calls_of(use)

    assert [call for call in calls if not allowed(call, GRANTS)] != []


class RepeatedEvents(RecordingClient):
    """Refuses a second put of a key, as the guard's condition does for a repeated event, without
    the old item (so Powertools reads it with GetItem); the read finds nothing."""

    def put_item(self, **request: Any) -> dict[str, Any]:
        seen = ("dynamodb:PutItem", (request["Item"]["pk"]["S"],)) in self.calls
        super().put_item(**request)
        if seen:
            error = {"Error": {"Code": "ConditionalCheckFailedException", "Message": "exists"}}
            raise ClientError(error, "PutItem")  # type: ignore[arg-type]
        return {}


def idempotency_calls() -> list[Call]:
    """The calls of the handler's idempotency guard (Powertools): a first event, the same event
    again (a repeated delivery), and a run that raised (its record is deleted, so a retry runs)."""
    client = RepeatedEvents()
    _, guard = idempotency_guard(SETTINGS, client)
    run = guard(lambda event: {"redriven": 0})
    run(event={"id": "evt-1"})
    with pytest.raises(Exception):  # noqa: B017 - what Powertools makes of a record it cannot find
        run(event={"id": "evt-1"})

    def failing(event: dict[str, Any]) -> None:
        raise RuntimeError("the run failed")

    with pytest.raises(RuntimeError):
        guard(failing)(event={"id": "evt-2"})
    return client.calls


def test_the_handler_s_idempotency_records_are_its_own_and_allowed() -> None:
    calls = idempotency_calls()

    assert {action for action, _ in calls} == {
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:GetItem",
    }
    assert all(key.startswith(f"IDEMPOTENCY#{DLQ}#") for _, keys in calls for key in keys), calls
    assert [call for call in calls if not allowed(call, GRANTS)] == []
    assert [call for call in calls if allowed(call, redriver_table_access(OTHER_DLQ, SOURCES))] == []


def test_every_grant_is_used_by_some_call() -> None:
    calls = [call for use in LAMBDA_USES.values() for call in calls_of(use)] + idempotency_calls()

    def used(action: str, pattern: str) -> bool:
        return any(a == action and any(fnmatchcase(key, pattern) for key in keys) for a, keys in calls)

    unused = [(grant.action, p) for grant in GRANTS for p in grant.keys if not used(grant.action, p)]
    assert unused == []


def test_the_function_never_writes_an_operator_or_kit_record() -> None:
    writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}
    written = [pattern for grant in GRANTS if grant.action in writes for pattern in grant.keys]

    assert not [p for p in written if p.startswith(("PAUSE#", "RETRY#", "PARK#", "VERDICTS#", "FAILURE#"))]
    # UpdateItem: Powertools' idempotency records alone (the state table adapter makes none)
    updated = [pattern for grant in GRANTS if grant.action == "dynamodb:UpdateItem" for pattern in grant.keys]
    assert updated == [f"IDEMPOTENCY#{DLQ}#*"]


def test_the_function_calls_exactly_the_adapter_methods_checked_here() -> None:
    methods = {name for cls in StateTable.__mro__ for name in vars(cls) if not name.startswith("_")}
    lambda_code = Path(sqs_redriver.runtime.__file__).parents[1]
    adapter = lambda_code / "core" / "table.py"
    packages = (lambda_code / "runtime", lambda_code / "core")
    code = "\n".join(p.read_text() for package in packages for p in package.rglob("*.py") if p != adapter)

    called = set(re.findall(r"\.(\w+)\(", code)) & methods

    # a new call: add it to LAMBDA_USES, and its grant to infra/sqs_redriver/cdk/access.py
    assert called == FUNCTION_METHODS


# --- a re-driver of dead letters of another kind: no kit, no kit record ------------------------

DEAD_LETTER_GRANTS = redriver_table_access(DLQ, SOURCES, kit=False)
KIT_KINDS = (RecordKind.FAILURE.value, RecordKind.VERDICTS.value)


@pytest.mark.parametrize("use", LAMBDA_USES.values(), ids=LAMBDA_USES.keys())
def test_a_re_driver_of_dead_letters_reads_no_kit_record_and_is_allowed_every_call(
    use: Callable[[StateTable], object],
) -> None:
    calls = calls_of(use, kit_scope=None)

    assert [call for call in calls if not allowed(call, DEAD_LETTER_GRANTS)] == []
    assert [key for _, keys in calls for key in keys if key.startswith(KIT_KINDS)] == []


def test_a_re_driver_of_dead_letters_is_granted_no_kit_record() -> None:
    patterns = [pattern for grant in DEAD_LETTER_GRANTS for pattern in grant.keys]

    assert [p for p in patterns if p.startswith(KIT_KINDS)] == []


# --- the kit's records: scoped to their re-driver, on a table several share ----------------------

FAILURE = Failure(FailureKind.TERMINAL, "ValueError", "bad order", "0123456789abcdef", 1_000, 1, "arn")


def kit_calls(dlq_url: str) -> list[Call]:
    """The kit's writes for the re-driver of ``dlq_url``: a failure record and a verdict record."""
    client = RecordingClient()
    kit = KitAws(SETTINGS.table_name, dlq_url=dlq_url, sqs=None, dynamodb=client)
    kit.put_failure("sha256:1", FAILURE, now=1_000)
    kit.add_verdicts("run/1000/abcd1234", VerdictTally(ok=1), now=1_000)
    return client.calls


def test_the_kit_writes_exactly_the_records_its_re_driver_reads() -> None:
    written = {key for _, keys in kit_calls(DLQ) for key in keys}
    read = {
        key
        for use in (lambda t: t.load_marks(["sha256:1"]), lambda t: t.load_verdicts("run/1000/abcd1234"))
        for _, keys in calls_of(use)
        for key in keys
    }

    assert written and written <= read
    assert [call for call in kit_calls(DLQ) if not allowed(call, consumer_grant(DLQ))] == []


def test_a_consumer_of_one_re_driver_cannot_write_a_record_another_reads() -> None:
    # GIVEN the kit of the re-driver of OTHER_DLQ, and what the re-driver of DLQ reads
    theirs = kit_calls(OTHER_DLQ)
    read_by_ours = [call for use in LAMBDA_USES.values() for call in calls_of(use)]
    ours = {key for _, keys in read_by_ours for key in keys if key.startswith(KIT_KINDS)}

    # THEN no record the other kit writes is one ours reads, and its grant refuses ours
    assert ours and not ours & {key for _, keys in theirs for key in keys}
    assert [call for call in kit_calls(DLQ) if allowed(call, consumer_grant(OTHER_DLQ))] == []
    assert [
        call for call in read_by_ours if allowed(("dynamodb:UpdateItem", call[1]), consumer_grant(OTHER_DLQ))
    ] == []


def consumer_grant(dlq_url: str) -> tuple[TableAccess, ...]:
    return (TableAccess("dynamodb:UpdateItem", consumer_table_keys(dlq_url)),)


# --- what the operator's tool reads ---------------------------------------------------------------


class QuietQueues:
    """SQS and CloudWatch answering ``status`` with empty queues and no datapoint."""

    def get_queue_attributes(self, **_request: Any) -> dict[str, Any]:
        return {"Attributes": {}}

    def get_metric_statistics(self, **_request: Any) -> dict[str, Any]:
        return {"Datapoints": []}


def test_what_status_reads_of_the_table_the_operator_s_grant_allows() -> None:
    client, quiet = RecordingClient(), QuietQueues()
    deployment = Deployment("orders", DLQ, SOURCES, SETTINGS.parking_lot_url, SETTINGS.table_name)
    table = StateTable(SETTINGS.table_name, client, ttl_seconds=60, clock=lambda: 1_000)  # type: ignore[arg-type]

    read_status(deployment, sqs=quiet, cloudwatch=quiet, table=table, now=1_000)

    assert ("dynamodb:GetItem", (RecordKind.DRAIN.key(DLQ),)) in client.calls  # a large drain's progress
    assert {action for action, _keys in client.calls} <= set(OPERATOR_TABLE_ACTIONS)


def test_what_outcome_reads_of_a_function_s_trips_the_operator_s_grant_allows() -> None:
    client = RecordingClient()
    client.index_keys = [RecordKind.MESSAGE.key(TRIP.key), RecordKind.MESSAGE.key("sha256:2")]
    table = StateTable(SETTINGS.table_name, client, ttl_seconds=60, clock=lambda: 1_000)  # type: ignore[arg-type]

    table.load_trips(["sha256:1"])

    # the identity index, then the identity's own records alone (not another's the index listed)
    assert client.calls == [
        ("dynamodb:Query", ("index/identity",)),
        ("dynamodb:BatchGetItem", (RecordKind.MESSAGE.key(TRIP.key),)),
    ]
    assert {action for action, _keys in client.calls} <= {*OPERATOR_TABLE_ACTIONS, *OPERATOR_INDEX_ACTIONS}
