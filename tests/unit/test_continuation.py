"""When a run is followed at once by another, and the event that starts it."""

from __future__ import annotations

import json
from dataclasses import replace

import boto3
import pytest
from botocore.stub import Stubber

from sqs_redriver.core.breaker import Mode, State
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import Resume
from sqs_redriver.runtime.continuation import continues, start_continuation
from sqs_redriver.runtime.report import RunReport, StopReason, Tally, combine

PROGRESS = Tally(redriven=500)


def report(
    stop: StopReason = StopReason.PER_RUN_LIMIT,
    state: State = State.CLOSED,
    tally: Tally = PROGRESS,
) -> RunReport:
    return RunReport(Mode.REDRIVE, state, tally=tally, stopped_because=stop)


@pytest.mark.parametrize("stop", [StopReason.PER_RUN_LIMIT, StopReason.TIME_BUDGET, StopReason.LARGE_BACKLOG])
def test_a_closed_run_that_ran_out_of_room_with_progress_continues(stop: StopReason) -> None:
    assert continues(report(stop), generation=0, max_continuations=100)


def test_parking_alone_is_progress() -> None:
    assert continues(report(tally=Tally(parked=3)), generation=0, max_continuations=100)


@pytest.mark.parametrize(
    "stop",
    [
        StopReason.DLQ_EMPTY,
        StopReason.SOURCE_BACKLOG,
        StopReason.AWS_ERROR,
        StopReason.BREAKER_OPENED,
        StopReason.HALTED,
        StopReason.CANARY_SENT,
    ],
)
def test_any_other_stop_leaves_the_next_run_to_the_schedule(stop: StopReason) -> None:
    assert not continues(report(stop), generation=0, max_continuations=100)


@pytest.mark.parametrize("state", [State.OPEN, State.HALF_OPEN])
def test_a_breaker_not_closed_never_continues(state: State) -> None:
    assert not continues(report(state=state), generation=0, max_continuations=100)


def test_a_run_that_moved_nothing_does_not_continue() -> None:
    assert not continues(report(tally=Tally(received=500)), generation=0, max_continuations=100)


def test_a_chain_stops_at_its_limit_and_zero_turns_continuation_off() -> None:
    assert continues(report(), generation=99, max_continuations=100)
    assert not continues(report(), generation=100, max_continuations=100)
    assert not continues(report(), generation=0, max_continuations=0)


def test_a_shared_dlq_continues_when_any_sources_part_ran_out_of_room() -> None:
    broken = RunReport(Mode.SKIP, State.OPEN, stopped_because=StopReason.BREAKER_OPEN, source="a")
    drained = replace(report(StopReason.DLQ_EMPTY), source="b")
    busy = replace(report(StopReason.TIME_BUDGET), source="b")

    assert continues(combine([broken, busy], source_queue_url="a"), generation=0, max_continuations=100)
    assert not continues(
        combine([broken, drained], source_queue_url="a"), generation=0, max_continuations=100
    )


def test_a_shared_dlqs_run_shows_the_worst_breaker_and_the_source_queues_mode() -> None:
    first = replace(report(StopReason.DLQ_EMPTY), source="q/a", full_rate=True)
    other = RunReport(
        Mode.PROBE, State.HALF_OPEN, Tally(redriven=1), StopReason.CANARY_SENT, ["OPEN->HALF_OPEN"]
    )

    run = combine([replace(other, source="q/b"), first], source_queue_url="q/a")

    assert (run.mode, run.breaker_state, run.stopped_because) == (Mode.REDRIVE, State.HALF_OPEN, "DLQ empty")
    assert (run.redriven, run.breaker_transitions) == (501, ["b: OPEN->HALF_OPEN"])


def test_a_shared_dlqs_continuation_is_at_full_rate_when_every_closed_source_was() -> None:
    at_full_rate = replace(report(), source="a", full_rate=True)
    slow = replace(report(), source="b")
    broken = RunReport(Mode.SKIP, State.OPEN, source="b")

    assert combine([at_full_rate, broken], source_queue_url="a").full_rate
    assert not combine([at_full_rate, slow], source_queue_url="a").full_rate


def test_a_continuation_event_round_trips_and_a_scheduled_event_is_none() -> None:
    resume = Resume(token="t-1", generation=3, full_rate=True)

    assert Resume.from_event(resume.to_event()) == resume
    assert Resume.from_event({"id": "evt-1", "source": "aws.events", "detail": {}}) is None


def test_a_malformed_continuation_event_is_a_clear_error() -> None:
    event = Resume(token="t-1", generation=3, full_rate=True).to_event()
    event["detail"]["generation"] = "3"

    with pytest.raises(ValueError, match="malformed continuation event"):
        Resume.from_event(event)


def test_a_continuation_is_an_asynchronous_invocation_of_the_function_with_its_event() -> None:
    client = boto3.client("lambda", region_name="eu-west-1")
    resume = Resume(token="t-1", generation=1, full_rate=False)
    with Stubber(client) as stubber:
        stubber.add_response(
            "invoke",
            {"StatusCode": 202},
            {
                "FunctionName": "redriver",
                "InvocationType": "Event",
                "Payload": json.dumps(resume.to_event()).encode(),
            },
        )

        start_continuation(client, "redriver", resume)

        stubber.assert_no_pending_responses()


def test_a_refused_invocation_is_an_aws_call_error() -> None:
    client = boto3.client("lambda", region_name="eu-west-1")
    with Stubber(client) as stubber:
        stubber.add_client_error("invoke", "TooManyRequestsException")

        with pytest.raises(AwsCallError, match="Lambda Invoke of redriver failed"):
            start_continuation(client, "redriver", Resume(token="t-1", generation=1, full_rate=False))
