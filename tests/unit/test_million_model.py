"""bench.million_model and bench.million: a large drain in simulated time over a model of SQS and
the consumer, with the re-driver's own pace, width, slow start and breaker (seconds of wall time)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.million import Result, cost_per_million, line, stack_from_template, without_kit
from bench.million_model import FIRST_POLLERS, Consumer, MillionWorld, Outage, Stack, worker_rate
from sqs_redriver.runtime.pace import Pace
from sqs_redriver.runtime.settings import Settings
from tests.support.fakes import queue_url

SETTINGS = Settings(
    dlq_url=queue_url("dlq"),
    source_queue_url=queue_url("orders"),
    parking_lot_url=queue_url("lot"),
    table_name="state",
    consumer_verdicts=True,
)
STACK = Stack(SETTINGS, source_visibility_timeout=180, max_receive_count=5, schedule_seconds=300,
              function_timeout=120, memory_mb=512)  # fmt: skip
FAST, SLOW = Consumer(concurrency=200), Consumer(concurrency=20)


def test_every_message_is_delivered_and_the_drain_fans_out_to_the_consumers_capacity() -> None:
    figures = MillionWorld(STACK, FAST, 300_000).run()

    assert figures.drained_s is not None
    assert figures.delivered == pytest.approx(300_000, abs=1)
    assert figures.workers_max > 8 and figures.peak_rate > FAST.capacity
    assert figures.throttled == 0


def test_a_slow_consumer_is_paced_to_its_capacity_its_backlog_small_and_never_throttled() -> None:
    figures = MillionWorld(STACK, SLOW, 60_000).run()

    assert figures.throttled == 0 and figures.oldest_age_max_s < 120
    paced = figures.rate_by_minute[3:]  # after the first run (its slow start), the climb, the ramp
    assert sum(paced) / len(paced) > 0.8 * SLOW.capacity


class FixedRate(MillionWorld):
    """A drain that ignores its consumer: the pace stays where it started."""

    def _step_pace(self) -> None:
        super()._step_pace()
        self.pace = Pace(2000)
        self.width = 14


def test_the_model_throttles_a_consumer_flooded_past_its_capacity() -> None:
    figures = FixedRate(STACK, SLOW, 60_000).run()

    assert figures.throttled > 0 and figures.oldest_age_max_s > 120


def test_an_outage_opens_the_breaker_within_a_batch_and_the_drain_resumes_after_it() -> None:
    figures = MillionWorld(STACK, SLOW, 100_000, outage=Outage(after_fraction=0.5, minutes=10)).run()

    assert figures.outage_start_s is not None and figures.breaker_opened_s is not None
    assert figures.breaker_opened_s - figures.outage_start_s < 0.5
    # the backlog when it began, and the pace times the time to hear and to stop (under 0.3 s)
    assert figures.deliveries_into_outage <= figures.backlog_at_outage + 0.3 * SLOW.capacity
    assert figures.resumed_after_s is not None and figures.drained_s is not None
    assert figures.delivered == pytest.approx(100_000, abs=1)


def test_a_consumer_without_the_kit_is_drained_by_one_chain_at_its_rate() -> None:
    world = MillionWorld(without_kit(STACK), FAST, 30_000, kit=False)
    figures = world.run()

    assert not world.fans_out and figures.workers_max == 1
    assert figures.peak_rate <= SETTINGS.max_redrives_per_second + 10
    assert figures.delivered == pytest.approx(30_000, abs=1)


def test_no_worker_moves_more_than_its_share_of_a_vcpu_allows() -> None:
    world = MillionWorld(replace(STACK, memory_mb=256), FAST, 60_000, cpu_ms_per_msg=2.0)
    figures = world.run()

    assert world.worker_rate == pytest.approx(1000 * (256 / 1769) / 2.0)
    assert max(figures.rate_by_minute) <= figures.workers_max * world.worker_rate
    assert worker_rate(10_240, 0.1) == 230.0  # AWS's latency bounds it too


def test_the_consumers_pollers_start_at_five_batches_and_grow_while_messages_wait() -> None:
    world = MillionWorld(STACK, FAST, 60_000)
    assert world.pollers == FIRST_POLLERS

    world.run()

    assert world.pollers > 100  # at most 300 a minute: the drain of 60,000 took about three


def test_one_worker_allowed_drains_in_one_chain_at_the_chains_rate() -> None:
    figures = MillionWorld(STACK, FAST, 20_000, max_workers=1).run()

    assert figures.workers_max == 1 and figures.peak_rate <= SETTINGS.max_redrives_per_second + 10


def test_each_scenario_prints_one_line_for_scripts() -> None:
    world = MillionWorld(STACK, FAST, 20_000)
    figures = world.run()
    result = Result("fast", world, figures, cost_per_million(figures, STACK, kit=True), 0.1)

    text = line(result)

    assert text.startswith("million: scenario=fast messages=20000 capacity=2000 drained_s=")
    fields = dict(pair.split("=") for pair in text.removeprefix("million: ").split())
    assert {"oldest_age_max_s", "throttled", "deliveries_into_outage", "cost_per_million_usd"} <= set(fields)
    assert float(fields["cost_per_million_usd"]) > 0
    share, cpu, rate = (float(fields[k]) for k in ("vcpu_share", "worker_cpu_ms_per_msg", "worker_rate"))
    assert share == pytest.approx(512 / 1769, abs=1e-3) and rate <= 1000 * share / cpu
    assert fields["poller_ramp"] == "1"


def test_the_stack_is_read_from_the_template() -> None:
    template = {
        "Resources": {
            "F": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Handler": "sqs_redriver.runtime.handler.lambda_handler",
                    "Timeout": 120,
                    "MemorySize": 256,
                    "Environment": {
                        "Variables": {
                            "DLQ_URL": {"Ref": "Dlq"},
                            "SOURCE_QUEUE_URL": {"Ref": "Source"},
                            "PARKING_LOT_URL": {"Ref": "Lot"},
                            "DYNAMODB_TABLE_NAME": {"Ref": "Table"},
                            "MAX_WORKERS": "8",
                        }
                    },
                },
            },
            "Q": {
                "Type": "AWS::SQS::Queue",
                "Properties": {"VisibilityTimeout": 180, "RedrivePolicy": {"maxReceiveCount": 5}},
            },
            "R": {"Type": "AWS::Events::Rule", "Properties": {"ScheduleExpression": "rate(5 minutes)"}},
        }
    }

    stack = stack_from_template(template)

    assert (stack.settings.max_workers, stack.source_visibility_timeout, stack.schedule_seconds) == (
        8,
        180,
        300,
    )


def test_a_consumer_that_stops_taking_messages_stalls_the_drain_instead_of_filling_its_queue() -> None:
    world = MillionWorld(STACK, Consumer(concurrency=0), 200_000, cap_seconds=1_200)
    figures = world.run()

    sent = 200_000 - world.dlq
    assert figures.stalls >= 1 and figures.delivered == 0
    assert sent < 40_000, sent  # a 20-minute pace at its climb's peak would have sent all
