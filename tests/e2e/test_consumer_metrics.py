"""A consumer without the kit, judged by its queue's metrics, in simulated time (local_aws.simulation
publishes them as AWS does: per-minute sums, two minutes late, nothing for an idle minute): an
outage gets about a probe per interval and drains minutes after recovery; poison is told apart and
parked, and fresh failures never wait for it. Bad readings (CloudWatch silent, GetMetricData
throttled) fall back to the DLQ and never open the breaker; a consumer that never reports the
verdicts it is expected to is noticed, and meets the same targets as one without the kit: a consumer
granted the kit (CONSUMER_VERDICTS on) whose handler does not use it yet."""

from __future__ import annotations

import logging
import random
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from botocore.exceptions import ClientError

from local_aws.consumers import order_body, plain_order_consumer
from local_aws.recovery import KitUse, Settled, outage, poison_then_fresh
from local_aws.recovery_figures import MINUTE, RecoveryFigures
from local_aws.simulated_time import SIM_EPOCH
from local_aws.simulation import World, open_world, without_consumer_verdicts
from sqs_redriver.core.breaker import SILENT_PROBES_LIMIT

OUTAGE_MINUTES = 30


@pytest.fixture(scope="module", params=[KitUse.OFF, KitUse.SILENT], ids=["no kit", "silent kit"])
def outage_figures(request: pytest.FixtureRequest) -> RecoveryFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # moto: no CloudFormation support for QueuePolicy
        return outage(n_messages=60, outage_minutes=60, kit=request.param, cap_hours=4)


@pytest.fixture(scope="module", params=[KitUse.OFF, KitUse.SILENT], ids=["no kit", "silent kit"])
def poison_figures(request: pytest.FixtureRequest) -> RecoveryFigures:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return poison_then_fresh(10, 40, 20, kit=request.param, hours=2.5)


def test_an_outage_gets_about_one_probe_per_interval(outage_figures: RecoveryFigures) -> None:
    # the target for 300 messages (make bench-recovery measures that): at most 30
    assert outage_figures.redriven_deliveries_in_outage <= 30
    assert outage_figures.lost == () and outage_figures.good_parked == 0


def test_the_dlq_is_empty_minutes_after_recovery(outage_figures: RecoveryFigures) -> None:
    settled = outage_figures.settled_minutes_after_recovery
    assert settled is not None and settled <= 10


def test_poison_is_parked_as_a_suspect_and_no_good_order_with_it(poison_figures: RecoveryFigures) -> None:
    figures = poison_figures
    assert figures.poison_parked == 10 and max(figures.poison_parked_at_minutes) <= 90
    assert figures.good_parked == 0 and figures.fulfilled == 40 and figures.lost == ()


def test_fresh_failures_never_wait_for_poison(poison_figures: RecoveryFigures) -> None:
    waited = poison_figures.fresh_consumed_minutes_after_recovery
    assert waited is not None and waited <= 15


def test_the_parking_reason_says_what_the_consumer_did_meanwhile() -> None:
    with world_of(20, 5, adjust=without_consumer_verdicts) as watched:
        watched.world.run(for_seconds=90 * MINUTE)
        reasons = [p.why for p in watched.world.journal.parkings]
    assert len(reasons) == 5
    assert all(r.startswith("failed 3 times while the consumer processed ") for r in reasons)
    assert all(r.endswith("others (limit 3): poison, not an outage") for r in reasons)


def test_a_silent_cloudwatch_leaves_the_breaker_to_the_dlq() -> None:
    with world_of(30, 0, publish_metrics=False, adjust=without_consumer_verdicts) as watched:
        watched.drain()
    assert watched.evidence() and "metrics" not in watched.evidence()


def test_a_throttled_read_is_logged_and_never_opens_the_breaker() -> None:
    with world_of(30, 0, adjust=without_consumer_verdicts) as watched:
        setattr(watched.world.redriver_cloudwatch, "get_metric_data", throttled)  # noqa: B010
        watched.drain()
    assert watched.evidence() and "metrics" not in watched.evidence()
    assert watched.logged("queue metrics not read")


def test_a_consumer_that_never_reports_its_verdicts_is_noticed_and_judged_by_its_metrics() -> None:
    with world_of(30, 0) as watched:  # CONSUMER_VERDICTS on (the default stack), no kit behind it
        watched.drain()
        world = watched.world
        breaker = world.dynamodb.get_item(
            TableName=world.settings.table_name, Key={"pk": {"S": world.settings.breaker_key}}
        )["Item"]
    assert int(breaker["silent_probes"]["N"]) >= SILENT_PROBES_LIMIT
    assert len(watched.logged("CONSUMER_VERDICTS is on")) == 1


# -- helpers -------------------------------------------------------------------------------------


@dataclass
class Watched:
    """A world, what its re-driver logged, and its good orders."""

    world: World
    records: list[logging.LogRecord]
    good_keys: set[str]

    def drain(self) -> None:
        settled = Settled.of(self.world, self.good_keys)
        self.world.run(until=settled.check, for_seconds=4 * 3600)
        assert settled.at is not None, "the DLQ was not drained"

    def evidence(self) -> list[str]:
        """The evidence of every breaker transition so far."""
        return [str(getattr(r, "evidence", "")) for r in self.logged("breaker transition")]

    def logged(self, prefix: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.getMessage().startswith(prefix)]


@contextmanager
def world_of(good: int, poison: int, **options: Any) -> Iterator[Watched]:
    """A plain consumer (no kit) behind the default stack, ``good`` orders sent at t=0 into a
    downstream down for OUTAGE_MINUTES when there is no poison, ``poison`` bad ones among them."""
    rng = random.Random(7)
    bodies = [order_body(f"o-{i:05d}", rng=rng) for i in range(good)]
    bodies += [order_body(f"p-{i:05d}", rng=rng, poison=True) for i in range(poison)]
    down = [] if poison else [(SIM_EPOCH, SIM_EPOCH + OUTAGE_MINUTES * MINUTE)]
    adjust = options.pop("adjust", None)
    log = logging.getLogger("redriver-simulation")
    captured, level = Captured(), log.level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # moto: no CloudFormation support for QueuePolicy
        with open_world(plain_order_consumer(down), adjust_settings=adjust, **options) as world:
            log.addHandler(captured)
            log.setLevel(logging.INFO)
            try:
                world.send(bodies)
                yield Watched(world, captured.records, {world.key_of(b) for b in bodies[:good]})
            finally:
                log.removeHandler(captured)
                log.setLevel(level)


def throttled(**_: Any) -> Any:
    raise ClientError({"Error": {"Code": "Throttling", "Message": "Rate exceeded"}}, "GetMetricData")


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
