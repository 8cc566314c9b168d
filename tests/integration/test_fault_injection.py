"""Nothing lost under faults: every AWS call of a run, failed in every way, and a crash before each;
with one batch at a time, with parallel batches, with long holds (backoff steps past 900 s
waited out hidden in the DLQ, some longer than SQS lets a message hide, over a day of healthy runs),
and with a DLQ shared by two sources, each with its own breaker (each part gives the other's back).

Each case: seed the DLQ, run the re-driver with one fault planned (S3 archive writes included), let
time pass, then run healthy re-drivers until the DLQ is empty (at most HEALTHY_RUNS). Then every
message must be in exactly one place (source queue or parking lot, and every parked one in the
archive; nothing consumes here), duplicates only where a crash or a failed delete fell between a
send and its delete (and then with one identity), counts never lower than before, and the breaker
record the last of its writes, each one version on, with fields that fit its state. Every planned
fault must fire (the first of a schedule; the later ones may miss once it changed the flow). The
figures are printed at the end of the session.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from local_aws.queues import drain, make_visible, queue_counts
from local_aws.server import moto_sqs_sped_up
from sqs_redriver.core.breaker import Breaker, BreakerPolicy, State
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import StateTable
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE
from sqs_redriver.protocol.keys import RecordKind
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.runtime.backoff import backoff_step
from sqs_redriver.runtime.routing import turn_order
from tests.support.aws import REMAINING, Aws, create_aws, make_redriver, make_settings, reused_clients
from tests.support.factories import LONG_AGO, TEN_ATTRIBUTES, FakeClock, NamesTheSource
from tests.support.faults import (
    BATCH_ENTRY_OPERATIONS,
    BATCH_ITEM_OPERATIONS,
    FIGURES,
    Fault,
    Faults,
    Outcome,
    SimulatedCrash,
    breaker_problems,
)
from tests.support.lockstep import Lockstep

MAX_REDRIVE_COUNT = 3
HEALTHY_RUNS = 8
DYNAMODB_OPERATIONS = {"get_item", "put_item", "delete_item", "batch_get_item", "batch_write_item"}
# A chain: the faulted run stops at this per-run limit and hands over to continuations.
CHAIN_LIMIT = 5
CHAIN_RUNS = 4
# A chain or a shared DLQ (runs of many calls): one fault of each path (throttling and timeouts
# take the 5xx path).
PATH_FAULTS = {Fault.CRASH, Fault.SERVER_ERROR, Fault.PARTIAL, Fault.CONDITIONAL}
PARALLEL_BATCHES = 4
# Faults that fit any call, planned at every call of a parallel run: a death, a whole call failing
# (a read timeout and throttling take the same path as a 5xx), a partial batch.
PARALLEL_FAULTS = [Fault.CRASH, Fault.SERVER_ERROR, Fault.PARTIAL]
# Shared DLQ: the second source's messages, named by the body's prefix (others go to the first).
OTHER_SOURCE = "payments"
# Long holds: every step past 900 s; a 2nd re-drive waits 15,000-30,000 s, a 3rd 30,000-60,000 s (a
# hold of 12 h less a run, then another). The healthy runs then cover a day and a half.
BASE_DELAY, MAX_DELAY = 15_000, 86_400
HEALTHY_STEP_SECONDS = {False: 60, True: 4 * 3600}
START = int(FakeClock().now)
# The enumerated cases are hundreds of runs: each test takes every PARTS-th of them, so that
# xdist's workers share them.
PARTS = 4
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def moto_without_its_depth_costs() -> Iterator[None]:
    """Hundreds of cases, each with up to 40 messages in the DLQ: moto's per-message scans were a
    quarter of their time. Which messages moto returns does not change (local_aws/server.py)."""
    with moto_sqs_sped_up():
        yield


def part_id(part: int) -> str:
    return f"part {part + 1} of {PARTS}"


@dataclass
class Seeded:
    body: str
    count: int  # re-drives before the faulted run
    attributes: dict[str, Any] = field(default_factory=dict)
    last_at: int = 0  # its last re-drive: long ago (due), or just now (long holds: it must wait)


def seed_messages(fresh: int = 7, long_holds: bool = False, shared: bool = False) -> list[Seeded]:
    """Fresh, already re-driven, at-the-limit (poison) and mark-less messages: two receive batches
    (with the default ``fresh``); with long holds, two more re-driven just now, that must wait; with
    a shared DLQ, the other source's, mixed in."""
    seeded = [Seeded(f"fresh-{i}", 0) for i in range(fresh)]
    if shared:
        seeded += [Seeded(f"{OTHER_SOURCE}:fresh-{i}", 0) for i in range(3)]
        seeded += [Seeded(f"{OTHER_SOURCE}:again", 2), Seeded(f"{OTHER_SOURCE}:poison", MAX_REDRIVE_COUNT)]
    seeded += [Seeded(f"again-{i}", 2) for i in range(2)]
    seeded.append(Seeded("poison", MAX_REDRIVE_COUNT))
    seeded.append(Seeded("ten-attributes", 0, dict(TEN_ATTRIBUTES)))
    seeded.append(Seeded("unicode-✓-東京-🙂", 1))
    if long_holds:
        seeded += [Seeded(f"held-{count}", count, last_at=START) for count in (1, MAX_REDRIVE_COUNT - 1)]
    return seeded


def fill(aws: Aws, seeded: list[Seeded]) -> None:
    for item in seeded:
        attributes = dict(item.attributes)
        if item.count and not attributes:
            last = item.last_at or LONG_AGO + item.count
            history = tuple(range(last - item.count + 1, last + 1))
            mark = Mark(f"id-{item.body}", item.count, LONG_AGO, history)
            attributes[MARK_ATTRIBUTE] = {"DataType": "String", "StringValue": mark.to_json()}
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=item.body, MessageAttributes=attributes)


def fault_settings(aws: Aws, parallel_batches: int = 1, *, long_holds: bool = False, **overrides: Any) -> Any:
    # The breaker must not stop the healthy runs from draining (no ratio trip below 1,000 returns,
    # 100 failed runs), but it must write: the breaker is seeded with a failure (seed_breaker), so a
    # run resets it, or counts one more, and PutItem is a step.
    delays = {"base_delay_seconds": BASE_DELAY, "max_delay_seconds": MAX_DELAY} if long_holds else {}
    return make_settings(
        aws,
        max_redrive_count=MAX_REDRIVE_COUNT,
        parallel_batches=parallel_batches,
        breaker=BreakerPolicy(failure_threshold=100, failure_ratio=0.2, minimum_volume=1000),
        **delays,
        **overrides,
    )


def seed_breaker(aws: Aws, settings: Any) -> list[dict[str, Any]]:
    """A breaker (each source's) with one failed run behind it; returns the writes, for the books
    of the breaker."""
    seeder = Faults()
    table = StateTable(aws.table_name, seeder.wrap(aws.dynamodb), ttl_seconds=1)
    for url in settings.source_queue_urls:
        table.save_breaker(RecordKind.BREAKER.key(url), Breaker(failures=1, version=1), expected_version=0)
    return seeder.puts


def shared_sources(aws: Aws, shared: bool) -> dict[str, Any]:
    """The settings of a DLQ shared with a second source queue (none unless ``shared``)."""
    if not shared:
        return {}
    return {"other_source_queue_urls": (aws.sqs.create_queue(QueueName=OTHER_SOURCE)["QueueUrl"],)}


def source_queue_leads(clock: FakeClock) -> None:
    """Move the clock (at most minutes) to the start of a minute whose scheduled run takes the source
    queue (SOURCE_QUEUE_URL's first) first: the faulted run's calls are then those of the healthy
    run measured before it."""
    clock.advance(60 - clock.now % 60)
    while turn_order(2, generation=0, now=int(clock.now))[0] != 0:
        clock.advance(60)


def routed(sqs: Any, shared: bool) -> Any:
    """Moto names no DLQ message's source: the other source's messages are named by their body."""
    return NamesTheSource(sqs, {OTHER_SOURCE: OTHER_SOURCE}) if shared else sqs


def run_with_faults(
    plan: dict[int, Fault],
    parallel_batches: int = 1,
    *,
    long_holds: bool = False,
    chain: bool = False,
    shared: bool = False,
) -> tuple[Outcome, list[str]]:
    """One case, in a fresh mock: the faulted run, healthy runs, then the books. With parallel
    batches, the DLQ holds a batch for each worker. With ``chain``, the faulted run stops at a
    per-run limit and its continuations follow under the same plan (its slot writes are calls).
    With ``shared``, the DLQ has two sources, each with its own breaker."""
    with mock_aws():
        aws = create_aws(clients=reused_clients())
        sources = shared_sources(aws, shared)
        seeded = seed_messages(fresh=7 + 10 * (parallel_batches - 1), long_holds=long_holds, shared=shared)
        fill(aws, seeded)
        seeded_breaker = seed_breaker(aws, fault_settings(aws, **sources))
        clock = FakeClock()
        if shared:
            source_queue_leads(clock)
        faults = Faults(plan=dict(plan))
        # Parallel workers take turns at every AWS call (tests/lockstep.py), so call k is the same
        # call in every run of a case, however busy the machine is.
        lockstep = Lockstep()
        faulty = make_redriver(
            aws,
            fault_settings(
                aws,
                parallel_batches,
                long_holds=long_holds,
                **({"max_messages_per_run": CHAIN_LIMIT} if chain else {}),
                **sources,
            ),
            clock,
            sqs=lockstep.client(routed(faults.wrap(aws.sqs), shared)),
            dynamodb=lockstep.client(faults.wrap(aws.dynamodb)),
            s3=lockstep.client(faults.wrap(aws.s3)),
        )
        try:
            with lockstep.installed():
                report = faulty.run(REMAINING)
                for _ in range(CHAIN_RUNS if chain else 0):
                    if report.continue_with is None:
                        break
                    report = faulty.run(REMAINING, report.continue_with)
        except (SimulatedCrash, AwsCallError):
            pass  # the invocation died or failed; what matters is what it left behind
        outcome = Outcome(
            fault=" + ".join(f.value for f in faults.fired.values()) or "none",
            call=min(faults.fired, default=0),
            operation=faults.calls[min(faults.fired) - 1] if faults.fired else "-",
            parallel_batches=parallel_batches,
            long_holds=long_holds,
            planned=len(plan),
            fired=len(faults.fired),
        )
        if plan and not faults.fired:
            outcome.fault = "none (the run ended before the planned call)"
        recorder = Faults()  # no faults: it records the healthy runs' breaker writes
        healthy = make_redriver(
            aws,
            fault_settings(aws, long_holds=long_holds, **sources),
            clock,
            sqs=routed(aws.sqs, shared),
            dynamodb=recorder.wrap(aws.dynamodb),
        )
        for _ in range(HEALTHY_RUNS):
            # A held message shows up before its hold ends, as a released one does: held again.
            make_visible(aws.dlq_url)
            clock.advance(HEALTHY_STEP_SECONDS[long_holds])
            healthy.run(REMAINING)
            if queue_counts(aws.sqs, aws.dlq_url).total == 0:
                break  # the runs after would find nothing to move
        check_books(aws, seeded, faults, seeded_breaker + faults.puts + recorder.puts, outcome, sources)
        return outcome, faults.calls


def check_books(
    aws: Aws,
    seeded: list[Seeded],
    faults: Faults,
    breaker_writes: list[dict[str, Any]],
    outcome: Outcome,
    sources: dict[str, Any],
) -> None:
    outcome.messages = len(seeded)
    config = fault_settings(aws, **sources)
    left_in_dlq = drain(aws.sqs, aws.dlq_url)
    by_source = {url: drain(aws.sqs, url) for url in config.source_queue_urls}
    in_source = [message for messages in by_source.values() for message in messages]
    parked = drain(aws.sqs, aws.parking_lot_url)
    where = Counter(m["Body"] for m in in_source + parked)
    by_body = {item.body: item for item in seeded}

    outcome.lost = sorted(body for body in by_body if where[body] == 0)
    outcome.duplicates = sorted(body for body, n in where.items() if n > 1)
    if left_in_dlq:
        outcome.problems.append(f"{len(left_in_dlq)} left in the DLQ after {HEALTHY_RUNS} healthy runs")
    if unknown := set(where) - set(by_body):
        outcome.problems.append(f"unknown messages appeared: {sorted(unknown)}")
    if outcome.duplicates and not faults.may_duplicate():
        outcome.problems.append(f"duplicates without a send/delete gap: {outcome.duplicates}")
    if "poison" not in {m["Body"] for m in parked}:
        outcome.problems.append("the poison message was not parked")
    if unarchived := {m["Body"] for m in parked} - archived_bodies(aws):
        outcome.problems.append(f"parked but not archived: {sorted(unarchived)}")
    for url, messages in by_source.items():
        if strays := [
            m["Body"] for m in messages if m["Body"].startswith(OTHER_SOURCE) != url.endswith(OTHER_SOURCE)
        ]:
            outcome.problems.append(f"re-driven to the wrong source {url}: {strays}")

    for message in in_source + parked:
        item = by_body.get(message["Body"])
        mark_value = (message.get("MessageAttributes") or {}).get(MARK_ATTRIBUTE)
        if item is None or item.attributes:
            continue
        if mark_value is None:
            outcome.problems.append(f"{item.body} lost its mark")
            continue
        mark = Mark.from_json(mark_value["StringValue"])
        if mark.count < item.count:
            outcome.problems.append(f"{item.body}: count went back from {item.count} to {mark.count}")
        if mark.count > MAX_REDRIVE_COUNT:
            outcome.problems.append(f"{item.body}: re-driven {mark.count} times, past the limit")
        if item.last_at and mark.count > item.count:
            # Equal jitter keeps at least half of the step.
            step = backoff_step(item.count + 1, base_seconds=BASE_DELAY, max_seconds=MAX_DELAY)
            if (early := item.last_at + step // 2 - mark.redriven_at[item.count]) > 0:
                outcome.problems.append(f"{item.body}: re-driven {early} s before it was due")
    copies = {}
    for message in in_source + parked:
        mark_value = (message.get("MessageAttributes") or {}).get(MARK_ATTRIBUTE)
        if mark_value:
            copies.setdefault(message["Body"], set()).add(json.loads(mark_value["StringValue"])["id"])
    for body in outcome.duplicates:
        if len(copies.get(body, set())) > 1:
            outcome.problems.append(f"the copies of {body} carry different identities")
    ten = [m for m in in_source + parked if m["Body"] == "ten-attributes"]
    if any(m.get("MessageAttributes") != TEN_ATTRIBUTES for m in ten):
        outcome.problems.append("the 10-attribute message lost or gained attributes")

    for url in config.source_queue_urls:
        key = RecordKind.BREAKER.key(url)
        outcome.problems += breaker_problems(
            aws.dynamodb, aws.table_name, key, breaker_writes, config.breaker
        )
        breaker = StateTable(aws.table_name, aws.dynamodb, ttl_seconds=1).load_breaker(key)
        if breaker.state is not State.CLOSED:  # it takes 100 failed runs to open it
            outcome.problems.append(f"the breaker of {url} left CLOSED: {breaker}")


def archived_bodies(aws: Aws) -> set[str]:
    listed = aws.s3.list_objects_v2(Bucket=aws.archive_bucket).get("Contents", [])
    return {
        json.loads(aws.s3.get_object(Bucket=aws.archive_bucket, Key=o["Key"])["Body"].read())["body"]
        for o in listed
    }


def applicable(operation: str) -> list[Fault]:
    kinds = [Fault.CRASH, Fault.THROTTLE, Fault.SERVER_ERROR, Fault.TIMEOUT]
    if operation in BATCH_ENTRY_OPERATIONS or operation in BATCH_ITEM_OPERATIONS:
        kinds.append(Fault.PARTIAL)
    if operation in DYNAMODB_OPERATIONS:
        kinds += [Fault.THROUGHPUT, Fault.TRANSACTION]
    if operation in ("put_item", "delete_item"):
        kinds.append(Fault.CONDITIONAL)
    return kinds


@functools.cache
def healthy_calls(
    parallel_batches: int = 1, *, long_holds: bool = False, chain: bool = False, shared: bool = False
) -> tuple[str, ...]:
    """The calls of a run without faults, measured once. With one batch at a time every run makes
    these same calls up to its first fault; parallel runs make as many, in a varying order."""
    _, calls = run_with_faults({}, parallel_batches, long_holds=long_holds, chain=chain, shared=shared)
    return tuple(calls)


def every_fault_point(
    *, long_holds: bool = False, chain: bool = False, shared: bool = False
) -> list[tuple[int, str, Fault]]:
    """Every call and the faults that fit it. In a chain, from the first run's offer of a
    continuation on (the run before is the one-run case); in a chain or a shared DLQ, one fault of
    each path."""
    calls = healthy_calls(long_holds=long_holds, chain=chain, shared=shared)
    first = calls.index("delete_item") if chain else 1  # the offer is the call before the first take
    return [
        (index, operation, fault)
        for index, operation in enumerate(calls, 1)
        if index >= first
        for fault in applicable(operation)
        if not (chain or shared) or fault in PATH_FAULTS
    ]


def test_a_healthy_run_loses_nothing() -> None:
    outcome, calls = run_with_faults({})
    FIGURES.append(outcome)
    assert not outcome.lost and not outcome.duplicates and not outcome.problems, outcome
    # the steps the suite must fault: a re-drive, a delete, the breaker write (PutItem), the
    # DLQ's retention read and the archive write
    assert {
        "send_message_batch",
        "delete_message_batch",
        "put_item",
        "get_queue_attributes",
        "put_object",
    } <= set(calls), calls


def test_a_healthy_run_with_long_holds_loses_nothing_and_holds_in_the_dlq() -> None:
    outcome, calls = run_with_faults({}, long_holds=True)
    FIGURES.append(outcome)
    assert not outcome.lost and not outcome.duplicates and not outcome.problems, outcome
    assert "change_message_visibility_batch" in calls, calls  # the hold: a step the suite faults


def test_a_healthy_run_of_a_shared_dlq_loses_nothing_and_gives_each_part_the_others_back() -> None:
    outcome, calls = run_with_faults({}, shared=True)
    FIGURES.append(outcome)
    assert not outcome.lost and not outcome.duplicates and not outcome.problems, outcome
    # each source's breaker is written, and a part gives the other source's messages back
    assert calls.count("put_item") >= 2 and "change_message_visibility_batch" in calls, calls


def test_a_healthy_chain_of_continuations_loses_nothing() -> None:
    outcome, calls = run_with_faults({}, chain=True)
    FIGURES.append(outcome)
    assert not outcome.lost and not outcome.duplicates and not outcome.problems, outcome
    # the slot is offered, held and handed on (PutItem) by the chain's runs, and freed (DeleteItem)
    # by the last, which finds the DLQ empty
    assert calls.count("delete_item") == 1 and calls.count("put_item") >= 4, calls


@pytest.mark.parametrize("part", range(PARTS), ids=part_id)
@pytest.mark.parametrize(
    ("long_holds", "chain", "shared"),
    [(False, False, False), (True, False, False), (False, True, False), (False, False, True)],
    ids=["delays", "long-holds", "continuation chain", "shared DLQ"],
)
def test_every_enumerated_fault_point_loses_nothing(
    long_holds: bool, chain: bool, shared: bool, part: int
) -> None:
    failures = []
    for index, _, fault in every_fault_point(long_holds=long_holds, chain=chain, shared=shared)[part::PARTS]:
        outcome, _ = run_with_faults({index: fault}, long_holds=long_holds, chain=chain, shared=shared)
        FIGURES.append(outcome)
        if outcome.lost or outcome.problems or outcome.call != index:  # one batch at a time: it must fire
            failures.append(outcome)
    assert not failures, "\n".join(
        f"{o.fault} at call {o.call} ({o.operation}): lost {o.lost}, {o.problems}" for o in failures
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_fault_schedules_lose_nothing(data: st.DataObject) -> None:
    # Call numbers a healthy run reaches, so the first planned fault always fires.
    plan = data.draw(
        st.dictionaries(
            keys=st.integers(min_value=1, max_value=len(healthy_calls())),
            values=st.sampled_from([f for f in Fault if f is not Fault.CONDITIONAL]),
            min_size=1,
            max_size=3,
        ),
        label="plan",
    )
    outcome, _ = run_with_faults(plan)
    FIGURES.append(outcome)
    assert outcome.call == min(plan), f"the first planned fault (call {min(plan)}) did not fire: {outcome}"
    assert not outcome.lost and not outcome.problems, outcome


def test_a_parallel_run_makes_the_same_calls_in_the_same_order_every_time() -> None:
    # What the parallel cases rest on: call k of a plan is the same call in every run of it.
    _, again = run_with_faults({}, PARALLEL_BATCHES)
    assert tuple(again) == healthy_calls(PARALLEL_BATCHES)
    assert "send_message_batch" in again and "delete_message_batch" in again, again


@pytest.mark.parametrize("part", range(PARTS), ids=part_id)
def test_every_fault_point_of_a_parallel_run_loses_nothing(part: int) -> None:
    failures = []
    for index in range(1, len(healthy_calls(PARALLEL_BATCHES)) + 1)[part::PARTS]:
        for fault in PARALLEL_FAULTS:
            outcome, _ = run_with_faults({index: fault}, PARALLEL_BATCHES)
            FIGURES.append(outcome)
            if outcome.lost or outcome.problems or outcome.call != index:  # in lockstep: it must fire
                failures.append(
                    f"{fault.value} planned at call {index}, fired at {outcome.call}: "
                    f"lost {outcome.lost}, {outcome.problems}"
                )
    assert not failures, "\n".join(failures)
