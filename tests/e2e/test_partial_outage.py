"""A partial outage is held, not parked (issue 40), in simulated time: the real re-driver on the
default stack's settings, live traffic throughout, a downstream refusing the customers of one domain
in five for an hour (``DownstreamUnavailable: ... Connection refused``) while it takes every other
order; every 40th order is poison. The scenarios of ``python -m bench --recovery --scenarios
partial-outage`` and ``python -m bench.dead_letters --scenarios partial-outage`` at their full size.

What users are promised: no good order parked, the DLQ empty within 10 minutes of the domain's
recovery, poison still parked, nothing lost. For an SQS consumer with the kit (its classes name the
failure transient) and a Lambda function (its error, read with the default rules, names it). An SQS
consumer without the kit names nothing: its failures are judged as before (BENCHMARKS.md)."""

from __future__ import annotations

import warnings

import pytest

from local_aws.dead_letter_recovery import DeadLetterFigures
from local_aws.dead_letter_recovery import partial_outage as function_partial_outage
from local_aws.recovery import KitUse, partial_outage
from local_aws.recovery_figures import RecoveryFigures
from sqs_redriver.protocol.sources import SourceKind

OUTAGE_MINUTES = 60
DRAINED_WITHIN_MINUTES = 10


@pytest.fixture(scope="module")
def kit_consumer() -> RecoveryFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return partial_outage(OUTAGE_MINUTES, kit=KitUse.ON)


@pytest.fixture(scope="module")
def function() -> DeadLetterFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function_partial_outage(SourceKind.FUNCTION, OUTAGE_MINUTES)


def test_with_the_kit_no_good_order_is_parked_or_lost(kit_consumer: RecoveryFigures) -> None:
    assert kit_consumer.good_parked == 0 and kit_consumer.lost == ()
    assert kit_consumer.fulfilled == kit_consumer.good


def test_with_the_kit_the_dlq_is_empty_within_10_minutes_of_the_domain_s_recovery(
    kit_consumer: RecoveryFigures,
) -> None:
    drained = kit_consumer.settled_minutes_after_recovery
    assert drained is not None and 0 <= drained <= DRAINED_WITHIN_MINUTES


def test_with_the_kit_poison_is_still_parked(kit_consumer: RecoveryFigures) -> None:
    assert kit_consumer.poison_parked == kit_consumer.poison > 0


def test_a_function_s_good_events_are_held_not_parked_and_none_lost(function: DeadLetterFigures) -> None:
    assert function.good_parked == 0 and function.lost == ()
    assert function.fulfilled == function.good


def test_a_function_s_dlq_is_empty_within_10_minutes_of_the_domain_s_recovery(
    function: DeadLetterFigures,
) -> None:
    drained = function.settled_minutes_after_recovery
    assert drained is not None and 0 <= drained <= DRAINED_WITHIN_MINUTES


def test_a_function_s_poison_is_still_parked_as_poison(function: DeadLetterFigures) -> None:
    assert function.poison_parked == function.poison > 0
    assert all("poison, not an outage" in reason for reason in function.parking_reasons)
