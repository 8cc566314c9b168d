"""The simulated-time world (local_aws.simulation): a short outage, checked for what must hold
whatever the re-driver's policy (nothing lost, nothing both parked and fulfilled, time simulated);
the same with the consumer kit and poison among the orders (poison parked on the consumer's word,
never re-driven; the breaker opened by the trial's verdicts, closed after recovery); and the
harness's own clock (it wakes when a message becomes visible, and while a run waits)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from local_aws.consumers import Consumer
from local_aws.recovery import KitUse, outage
from local_aws.recovery_figures import RecoveryFigures
from local_aws.simulation import World, open_world
from tests.support.factories import order_body

SOURCE_VISIBILITY_TIMEOUT = 180  # the default stack's: 6 x the consumer's 30 s timeout
OUTAGE_MINUTES = 30


@pytest.fixture(scope="module")
def short_outage() -> RecoveryFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # moto: no CloudFormation support for QueuePolicy
        return outage(n_messages=30, outage_minutes=OUTAGE_MINUTES, cap_hours=4)


@pytest.fixture(scope="module")
def kit_outage() -> RecoveryFigures:
    """30 good orders and 2 poison ones into a 30-minute outage, the kit consumer behind the queue."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return outage(n_messages=30, outage_minutes=OUTAGE_MINUTES, kit=KitUse.ON, n_poison=2, cap_hours=4)


class Verdicts:
    """A consumer that fails or succeeds every record as told."""

    def __init__(self, *, fail: bool) -> None:
        self.fail = fail

    def __call__(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        failed = [r["messageId"] for r in event["Records"]] if self.fail else []
        return {"batchItemFailures": [{"itemIdentifier": i} for i in failed]}


@contextmanager
def _world(consumer: Consumer) -> Iterator[World]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # moto: no CloudFormation support for QueuePolicy
        with open_world(lambda _host: consumer) as world:
            yield world


@pytest.fixture
def healthy_world() -> Iterator[World]:
    with _world(Verdicts(fail=False)) as world:
        yield world


@pytest.fixture
def failing_world() -> Iterator[World]:
    with _world(Verdicts(fail=True)) as world:
        yield world


def test_no_good_order_is_lost(short_outage: RecoveryFigures) -> None:
    assert short_outage.lost == ()
    assert short_outage.fulfilled + short_outage.good_parked <= short_outage.good == 30


def test_no_order_is_both_parked_and_fulfilled(short_outage: RecoveryFigures) -> None:
    assert short_outage.parked_and_fulfilled == ()


def test_hours_pass_in_simulated_time(short_outage: RecoveryFigures) -> None:
    # Until every order is fulfilled and the DLQ is empty, or the 4-hour cap: past the outage.
    assert 30 < short_outage.simulated_minutes <= 4 * 60
    assert short_outage.runs >= 30 // 5  # one run per 5 simulated minutes
    assert short_outage.redriver_requests > 0


def test_orders_failed_during_the_outage_are_redriven(short_outage: RecoveryFigures) -> None:
    assert short_outage.redriven_deliveries_in_outage > 0
    assert short_outage.deliveries > short_outage.good


def test_with_the_kit_no_good_order_is_lost_or_parked(kit_outage: RecoveryFigures) -> None:
    assert kit_outage.lost == ()
    assert kit_outage.good_parked == 0
    assert kit_outage.fulfilled == kit_outage.good == 30
    assert kit_outage.parked_and_fulfilled == ()


def test_with_the_kit_poison_is_parked_with_the_consumers_error_and_never_redriven(
    kit_outage: RecoveryFigures,
) -> None:
    assert kit_outage.poison_parked == kit_outage.poison == 2
    assert kit_outage.poison_redrives_before_parking == (0, 0)
    for error in kit_outage.poison_parked_errors:
        assert error["class"].rsplit(".", 1)[-1] == "InvalidOrder"
        assert error["kind"] == "terminal"
        assert error["fp"]  # the fingerprint the kit computed


def test_with_the_kit_the_breaker_opens_in_the_outage_and_closes_after_recovery(
    kit_outage: RecoveryFigures,
) -> None:
    assert kit_outage.breaker_opened_at_minutes is not None
    assert kit_outage.breaker_opened_at_minutes < OUTAGE_MINUTES
    assert kit_outage.closed_minutes_after_recovery is not None
    assert kit_outage.breaker_final == "CLOSED"
    assert kit_outage.kit_requests > 0  # the kit's own calls, counted apart from the re-driver's


def test_the_world_wakes_when_a_delayed_message_becomes_visible(healthy_world: World) -> None:
    # GIVEN a message delayed by 37 s, and nothing else (the first run is due at 300 s)
    healthy_world.send([order_body("o-1")], delay_seconds=37)

    # WHEN the world runs until it is delivered
    healthy_world.run(until=lambda: bool(healthy_world.journal.deliveries), for_seconds=250)

    # THEN it was delivered the millisecond its delay ended, by a jump of the clock
    [delivery] = healthy_world.journal.deliveries
    assert delivery.at == pytest.approx(37.0, abs=0.0011)
    assert healthy_world.clock.elapsed == delivery.at


def test_the_world_wakes_when_a_visibility_timeout_ends(failing_world: World) -> None:
    failing_world.send([order_body("o-1")])

    failing_world.run(until=lambda: len(failing_world.journal.deliveries) == 2, for_seconds=250)

    first, second = (d.at for d in failing_world.journal.deliveries)
    assert first == 0
    assert SOURCE_VISIBILITY_TIMEOUT < second - first <= SOURCE_VISIBILITY_TIMEOUT + 0.0011


def test_a_wait_of_the_redriver_lets_the_consumer_run(healthy_world: World) -> None:
    healthy_world.send([order_body("o-1")])

    healthy_world.sleep(2.5)

    assert [json.loads(order_body("o-1"))["order_id"]] == [d.key for d in healthy_world.journal.deliveries]
    assert healthy_world.clock.elapsed == 2.5
    assert not healthy_world.journal.runs  # a wait inside a run fires no schedule tick
