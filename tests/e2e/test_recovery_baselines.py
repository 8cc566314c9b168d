"""The recovery benchmark's baselines in the simulated world, at a tiny size: the published design
on its schedule and the console's redrive clicked at the outage's end both get every order
fulfilled (the books balance: nothing lost, nothing parked); only the published design re-drives
into the outage."""

from __future__ import annotations

import logging
import warnings

import pytest

from bench.recovery_baselines import console_outage, published_outage
from local_aws.recovery_figures import RecoveryFigures

MESSAGES = 20
OUTAGE_MINUTES = 20


@pytest.fixture(scope="module")
def published() -> RecoveryFigures:
    logging.getLogger("moto").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # moto: no CloudFormation support for QueuePolicy
        return published_outage(MESSAGES, OUTAGE_MINUTES, cap_hours=3)


@pytest.fixture(scope="module")
def console() -> RecoveryFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return console_outage(MESSAGES, OUTAGE_MINUTES, cap_hours=3)


@pytest.mark.parametrize("design", ["published", "console"])
def test_every_order_is_fulfilled_once_and_none_is_lost(design: str, request: pytest.FixtureRequest) -> None:
    figures: RecoveryFigures = request.getfixturevalue(design)
    assert figures.lost == ()
    assert figures.fulfilled == figures.good == MESSAGES
    assert figures.good_parked == 0
    assert figures.duplicates == 0
    assert figures.settled_minutes_after_recovery is not None


def test_the_published_design_redrives_into_the_outage_five_a_run(published: RecoveryFigures) -> None:
    assert published.redrives_in_outage > 0
    assert published.redriven_deliveries_in_outage >= published.redrives_in_outage
    assert published.redrives <= 5 * published.runs
    assert published.requests_by_operation  # its calls, counted as the re-driver's


def test_the_console_moves_everything_at_the_outages_end_in_one_request(console: RecoveryFigures) -> None:
    assert console.redrives_in_outage == 0
    assert console.redriven_deliveries_in_outage == 0
    assert console.redrives == MESSAGES
    assert console.redriver_requests == 1
    # The move (500/s) and the consumer (10 a second) are done within a minute and a half.
    assert console.settled_minutes_after_recovery is not None
    assert console.settled_minutes_after_recovery <= 1.5
