"""The re-driver on the dead letters of a Lambda function and of an EventBridge rule's target, in
simulated time (local_aws.dead_letter_world: Lambda, EventBridge and the function played, the real
re-driver on the default stack's settings), against issue 33's targets, on the scenarios of
``python -m bench.dead_letters`` at their full size: at most 30 deliveries into a 60-minute outage
of 300 orders, an empty DLQ within 10 minutes of recovery, poison parked within 90 minutes, no good
order parked or lost. A target the re-driver misses today is marked ``xfail(strict=True)`` with the
figure and its cause: the assertion stands, and passing it makes the mark fail until it is removed.

And the world itself: what it writes into the DLQ is what the re-driver reads as the configured
source's dead letters, and it publishes the function's and the rule's metrics."""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterator

import boto3
import pytest

from local_aws import REGION
from local_aws.consumers import order_body
from local_aws.dead_letter_recovery import DeadLetterFigures, outage, poison
from local_aws.dead_letter_world import (
    FUNCTION_NAME,
    RULE_NAME,
    DeadLetterWorld,
    open_dead_letter_world,
    order_key,
)
from local_aws.recovery_figures import MINUTE
from local_aws.simulated_time import SIM_EPOCH
from sqs_redriver.protocol.dead_letters import read_dead_letter
from sqs_redriver.protocol.sources import SourceKind

FUNCTION, RULE_TARGET = SourceKind.FUNCTION, SourceKind.RULE_TARGET
KINDS = [pytest.param(FUNCTION, id="lambda"), pytest.param(RULE_TARGET, id="eventbridge")]
OUTAGE_MINUTES = 60


@pytest.fixture(scope="module")
def function_outage() -> DeadLetterFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return outage(FUNCTION, 300, OUTAGE_MINUTES)


@pytest.fixture(scope="module")
def rule_target_outage() -> DeadLetterFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return outage(RULE_TARGET, 300, OUTAGE_MINUTES)


@pytest.fixture(scope="module")
def guarded_function_outage() -> DeadLetterFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return outage(FUNCTION, 300, OUTAGE_MINUTES, circuit=True)


@pytest.fixture(scope="module", params=KINDS)
def poison_figures(request: pytest.FixtureRequest) -> DeadLetterFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return poison(request.param, 10, 40)


# --- a function's dead letters (its on-failure destination) ---------------------------------------


def test_a_function_gets_at_most_30_deliveries_into_an_outage(function_outage: DeadLetterFigures) -> None:
    assert function_outage.redriver_invocations_in_outage <= 30


def test_a_functions_dlq_is_empty_minutes_after_recovery(function_outage: DeadLetterFigures) -> None:
    settled = function_outage.settled_minutes_after_recovery
    assert settled is not None and settled <= 10


def test_a_functions_orders_are_fulfilled_none_parked_or_lost(function_outage: DeadLetterFigures) -> None:
    assert function_outage.fulfilled == function_outage.good == 300
    assert function_outage.good_parked == 0 and function_outage.lost == ()


# --- a function that keeps its own Powertools breaker ---------------------------------------------


def test_a_function_with_its_own_breaker_gets_a_probe_per_run_at_most(
    guarded_function_outage: DeadLetterFigures,
) -> None:
    figures = guarded_function_outage
    runs_in_outage = OUTAGE_MINUTES // 5  # the default schedule: every 5 minutes
    assert figures.redriver_invocations_in_outage <= min(runs_in_outage, 30)
    assert figures.circuit_timeline[0][1] == "OPEN"  # the function's own breaker held the outage
    assert figures.circuit_timeline[-1][1] == "CLOSED"


def test_a_function_with_its_own_breaker_is_drained_minutes_after_recovery(
    guarded_function_outage: DeadLetterFigures,
) -> None:
    figures = guarded_function_outage
    assert figures.settled_minutes_after_recovery is not None and figures.settled_minutes_after_recovery <= 10
    assert figures.fulfilled == 300 and figures.good_parked == 0 and figures.lost == ()


# --- a rule target's dead letters -----------------------------------------------------------------


def test_a_rule_target_gets_at_most_30_deliveries_into_an_outage(
    rule_target_outage: DeadLetterFigures,
) -> None:
    assert rule_target_outage.redriver_invocations_in_outage <= 30
    # Invoke refused each of them (the target was throttled): the function never ran one while down
    assert rule_target_outage.refused_in_outage == rule_target_outage.redriver_invocations_in_outage


def test_a_rule_targets_dlq_is_empty_minutes_after_recovery(rule_target_outage: DeadLetterFigures) -> None:
    settled = rule_target_outage.settled_minutes_after_recovery
    assert settled is not None and settled <= 10


def test_a_rule_targets_events_are_delivered_none_parked_or_lost(
    rule_target_outage: DeadLetterFigures,
) -> None:
    assert rule_target_outage.fulfilled == rule_target_outage.good == 300
    assert rule_target_outage.good_parked == 0 and rule_target_outage.lost == ()


# --- poison ----------------------------------------------------------------------------------------


def test_poison_is_parked_within_90_minutes_and_no_good_order_with_it(
    poison_figures: DeadLetterFigures,
) -> None:
    figures = poison_figures
    assert figures.poison_parked == figures.poison == 10
    assert max(figures.poison_parked_at_minutes) <= 90
    assert figures.good_parked == 0 and figures.fulfilled == 40 and figures.lost == ()


def test_the_parking_reason_says_why(poison_figures: DeadLetterFigures) -> None:
    # a function's: its error, from the destination record; a rule target's: Invoke's refusal
    expected = "InvalidOrder" if poison_figures.target == FUNCTION.value else "InvalidRequestContentException"
    assert all(expected in reason for reason in poison_figures.parking_reasons)


# --- the world -------------------------------------------------------------------------------------


@pytest.fixture(params=KINDS)
def failed_world(request: pytest.FixtureRequest) -> Iterator[DeadLetterWorld]:
    """Three orders failed into the DLQ by an outage of the target, before the re-driver's first run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outages = [(float(SIM_EPOCH), SIM_EPOCH + 30 * MINUTE)]
        with open_dead_letter_world(request.param, outages=outages) as world:
            world.produce([order_body(f"o-{i}", rng=random.Random(i)) for i in range(3)])
            world.run(for_seconds=4 * MINUTE)
            yield world


def test_what_the_world_writes_the_redriver_reads_as_the_sources_dead_letters(
    failed_world: DeadLetterWorld,
) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    received = sqs.receive_message(
        QueueUrl=failed_world.resources.dlq_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    )["Messages"]
    letters = [
        read_dead_letter(m["Body"], m.get("MessageAttributes", {}), [failed_world.source]) for m in received
    ]
    assert len(letters) == 3
    assert all(letter.replayable and letter.source == failed_world.source for letter in letters)
    assert sorted(order_key(str(letter.payload)) for letter in letters) == ["o-0", "o-1", "o-2"]


def test_the_world_publishes_the_functions_and_the_rules_metrics(failed_world: DeadLetterWorld) -> None:
    failed_world.run(for_seconds=5 * MINUTE)  # every try's minute published (2 minutes late)
    published = failed_world.metrics
    if failed_world.kind is FUNCTION:
        # Lambda's three tries of each order at 0, 1 and 3 minutes, all failed
        assert sum(published.sums("Invocations", FUNCTION_NAME).values()) >= 9
        assert published.sums("Errors", FUNCTION_NAME) == published.sums("Invocations", FUNCTION_NAME)
    else:
        assert published.sums("Invocations", RULE_NAME) == {SIM_EPOCH: 3}
        assert published.sums("FailedInvocations", RULE_NAME) == {SIM_EPOCH: 3}
        assert sum(published.sums("Throttles", FUNCTION_NAME).values()) >= 3
