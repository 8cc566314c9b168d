"""sqs_redriver.runtime.workers: how many workers a large drain runs, the check each makes before a
batch, the pace step and fan-out, and a worker's lease from its start to its end (in-memory ports)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.breaker import Breaker, Evidence
from sqs_redriver.core.errors import AwsCallError
from sqs_redriver.core.table import DrainRecord, Pause, Resume
from sqs_redriver.core.transfer import TokenBucket
from sqs_redriver.protocol.failure import VerdictCounts
from sqs_redriver.protocol.keys import worker_key
from sqs_redriver.runtime.pace import CONTROL_SECONDS
from sqs_redriver.runtime.report import StopReason
from sqs_redriver.runtime.settings import Settings
from sqs_redriver.runtime.workers import (
    MESSAGES_PER_WORKER,
    OFFER_SECONDS,
    WORKER_RATE,
    Drains,
    Fleet,
    looks_for_drain,
    new_drain,
    workers_wanted,
)
from tests.support.fakes import FakeQueue, FakeStateStore, queue_url

NOW = 1_000_000
SETTINGS = Settings(
    dlq_url=queue_url("dlq"),
    source_queue_url=queue_url("orders"),
    parking_lot_url=queue_url("lot"),
    table_name="state",
    max_workers=16,
    consumer_verdicts=True,
)
KEY = SETTINGS.breaker_key


class World:
    """The ports one run of a drain works with, and the workers it started."""

    def __init__(self, *, dlq_left: int = 500_000, visible: int = 0) -> None:
        self.state = FakeStateStore(now=NOW)
        self.dlq = FakeQueue("dlq", waiting=dlq_left)
        self.source = FakeQueue("orders", waiting=visible)
        self.limiter = TokenBucket(50, burst=10, clock=lambda: NOW, sleep=lambda _: None)
        self.started: list[Resume] = []
        self.clock = NOW

    def fleet(self, slot: int = 0, *, start: bool = True) -> Fleet:
        return Fleet(self.drains(), start_worker=self.started.append if start else None, slot=slot)

    def drains(self) -> Drains:
        return Drains(
            SETTINGS,
            state=self.state,
            dlq=self.dlq,
            sources=[self.source],
            limiter=self.limiter,
            clock=lambda: self.clock,
            logger=_Quiet(),
        )


class _Quiet:
    def info(self, *args: object, **kwargs: object) -> None: ...

    def warning(self, *args: object, **kwargs: object) -> None: ...


def test_the_width_follows_the_pace_the_backlog_and_the_setting() -> None:
    assert workers_wanted(50, 10**6, 16) == 1
    assert workers_wanted(WORKER_RATE * 4, 10**6, 16) == 4
    assert workers_wanted(10**5, 10**6, 16) == 16
    assert workers_wanted(10**5, MESSAGES_PER_WORKER * 3, 16) == 3
    assert workers_wanted(10**5, 0, 16) == 1


@given(st.floats(0, 10**6), st.integers(0, 10**9), st.integers(1, 200))
def test_a_drain_always_has_one_worker_and_never_more_than_allowed(rate: float, left: int, most: int) -> None:
    assert 1 <= workers_wanted(rate, left, most) <= most


def test_a_pause_stops_a_worker_before_its_next_batch() -> None:
    world = World()
    world.state.drain = new_drain(SETTINGS, 500_000, NOW)
    world.state.pause = Pause("incident", "oncall", NOW)

    assert world.fleet(3).check(KEY, at_full_rate=True).stop is StopReason.PAUSED


def test_a_breaker_another_worker_opened_stops_this_one_before_its_next_batch() -> None:
    world = World()
    world.state.drain = new_drain(SETTINGS, 500_000, NOW)
    world.state.breaker = Breaker().opened(NOW, Evidence.VERDICTS)

    assert world.fleet(3).check(KEY, at_full_rate=True).stop is StopReason.BREAKER_OPENED


def test_a_worker_past_the_width_the_pace_wants_stops() -> None:
    world = World()
    world.state.drain = replace(new_drain(SETTINGS, 500_000, NOW), workers=3, stepped_at=NOW)

    leaving = world.fleet(3)
    assert (
        leaving.check(KEY, at_full_rate=True).stop is StopReason.FEWER_WORKERS
        and leaving.last == world.state.drain
    )
    assert world.fleet(2).check(KEY, at_full_rate=True).stop is StopReason.NONE


def test_a_due_step_climbs_the_pace_fans_out_and_gives_each_worker_its_share() -> None:
    world = World()
    world.state.drain = replace(new_drain(SETTINGS, 500_000, NOW), rate=800, stepped_at=NOW - CONTROL_SECONDS)

    assert world.fleet(0).check(KEY, at_full_rate=True).stop is StopReason.NONE

    drain = world.state.drain
    assert drain is not None and (drain.rate, drain.workers, drain.stepped_at) == (1600, 11, NOW)
    assert [r.slot for r in world.started] == list(range(1, 11))
    assert all(r.drain and r.full_rate and r.generation == 0 for r in world.started)
    assert world.limiter.rate == pytest.approx(1600 / 11)
    assert world.state.leases[worker_key(SETTINGS.dlq_url, 1)][1] == NOW + OFFER_SECONDS


def test_a_consumer_behind_cuts_the_pace_and_the_width() -> None:
    world = World(visible=5_000)
    world.state.drain = replace(new_drain(SETTINGS, 500_000, NOW), rate=1600, workers=11, stepped_at=NOW - 10)

    world.fleet(0).check(KEY, at_full_rate=True)

    assert world.state.drain is not None and (world.state.drain.rate, world.state.drain.workers) == (1120, 8)


def test_overlapping_fan_outs_never_start_two_workers_in_one_slot() -> None:
    world = World()
    world.state.drain = replace(new_drain(SETTINGS, 500_000, NOW), rate=1600, workers=11, stepped_at=NOW)
    first, second = world.fleet(0), world.fleet(5)

    started = first.fan_out(11, NOW) + second.fan_out(11, NOW)

    assert started == 10 and sorted(r.slot for r in world.started) == list(range(1, 11))


def test_the_slot_of_a_worker_that_died_is_offered_again_once_its_lease_expired() -> None:
    world = World()
    key = worker_key(SETTINGS.dlq_url, 1)
    world.state.leases[key] = ("dead", NOW + 10)
    fleet = world.fleet(0)

    assert fleet.fan_out(2, NOW) == 0
    world.state.now = NOW + 11
    assert fleet.fan_out(2, NOW + 11) == 1 and world.state.leases[key][0] != "dead"


def test_a_worker_that_cannot_be_started_frees_its_slot() -> None:
    world = World()

    def refuse(resume: Resume) -> None:
        raise AwsCallError("Invoke throttled")

    fleet = world.fleet(0)
    fleet.start_worker = refuse

    assert fleet.fan_out(3, NOW) == 0 and world.state.leases == {}


def test_two_steps_at_once_write_one_pace() -> None:
    world = World()
    stored = replace(new_drain(SETTINGS, 500_000, NOW), rate=400, stepped_at=NOW - CONTROL_SECONDS)
    world.state.drain = stored
    first, second = world.fleet(0), world.fleet(2)

    first.step(stored)
    after = second.step(stored)  # read before the first wrote: its write loses, it reads the winner's

    assert after == world.state.drain and (after.rate, after.version) == (800, 1)


def test_a_worker_holds_its_lease_and_hands_it_to_its_continuation_or_releases_it() -> None:
    world = World()
    drains, key = world.drains(), worker_key(SETTINGS.dlq_url, 4)
    world.state.leases[key] = ("t-1", NOW + OFFER_SECONDS)
    resume = Resume("t-1", generation=0, full_rate=True, slot=4, drain=True)

    assert drains.hold(resume)
    assert world.state.leases[key] == ("t-1", NOW + SETTINGS.dlq_visibility_timeout_seconds)
    assert not drains.hold(replace(resume, token="t-other"))

    successor = replace(resume, token="t-2", generation=1)
    assert drains.pass_on(resume, successor) == successor and world.state.leases[key][0] == "t-2"
    assert drains.pass_on(successor, None) is None and key not in world.state.leases


def test_a_chain_that_goes_on_over_a_large_backlog_starts_a_drain_or_joins_the_one_going() -> None:
    world = World(dlq_left=SETTINGS.fan_out_backlog)

    assert world.drains().joins_or_starts(StopReason.TIME_BUDGET, generation=0)
    assert world.state.drain is not None and world.state.drain.going
    assert (
        world.drains().joins_or_starts(StopReason.TIME_BUDGET, generation=0)
        and world.state.drain.version == 1
    )  # joined, not started again


def test_a_chains_first_run_that_met_its_per_run_limit_does_not_look_its_continuation_does() -> None:
    world = World(dlq_left=SETTINGS.fan_out_backlog)

    assert not world.drains().joins_or_starts(StopReason.PER_RUN_LIMIT, generation=0)
    assert world.dlq.calls == []
    assert world.drains().joins_or_starts(StopReason.PER_RUN_LIMIT, generation=1)


def test_a_first_run_that_stopped_for_a_large_backlog_starts_the_drain() -> None:
    world = World(dlq_left=SETTINGS.fan_out_backlog)

    assert world.drains().joins_or_starts(StopReason.LARGE_BACKLOG, generation=0)
    assert world.state.drain is not None and world.state.drain.going


@given(st.booleans(), st.booleans(), st.booleans(), st.integers(0, 10**6), st.booleans())
def test_a_run_looks_for_a_drain_once_only_at_full_rate_with_progress_and_outside_a_drain(
    drains: bool, in_drain: bool, at_full_rate: bool, redriven: int, looked: bool
) -> None:
    looks = looks_for_drain(
        drains=drains, in_drain=in_drain, at_full_rate=at_full_rate, redriven=redriven, looked=looked
    )
    assert looks == (drains and not in_drain and at_full_rate and redriven > 0 and not looked)
    if looks:  # and having looked, never again in that loop
        assert not looks_for_drain(
            drains=drains, in_drain=in_drain, at_full_rate=at_full_rate, redriven=redriven, looked=True
        )


def test_a_small_backlog_never_starts_a_drain() -> None:
    world = World(dlq_left=SETTINGS.fan_out_backlog - 1)

    assert (
        not world.drains().joins_or_starts(StopReason.TIME_BUDGET, generation=0) and world.state.drain is None
    )


def test_a_chain_over_a_small_backlog_neither_joins_nor_starts_a_drain_for_one_request() -> None:
    world = World(dlq_left=SETTINGS.fan_out_backlog - 1)
    world.state.drain = replace(new_drain(SETTINGS, 500_000, NOW), stepped_at=NOW)

    assert not world.drains().joins_or_starts(StopReason.TIME_BUDGET, generation=0)
    assert world.dlq.calls == ["dlq.backlog"] and "load_drain" not in world.state.calls


def test_an_interrupted_drain_over_a_large_backlog_is_joined_and_its_pace_starts_over() -> None:
    world = World(dlq_left=SETTINGS.fan_out_backlog)
    world.state.drain = replace(new_drain(SETTINGS, 500_000, NOW), rate=3000, stepped_at=NOW - 600)

    assert world.drains().joins_or_starts(StopReason.TIME_BUDGET, generation=0)
    world.fleet(0).check(KEY, at_full_rate=True)
    assert world.state.drain.rate == 2 * SETTINGS.max_redrives_per_second


def test_a_consumer_without_the_kit_never_fans_out_its_failures_are_heard_minutes_late() -> None:
    world = World()
    drains = world.drains()
    drains.settings = replace(SETTINGS, consumer_verdicts=False)

    assert not drains.joins_or_starts(StopReason.TIME_BUDGET, generation=1)
    assert drains.fleet(Resume("t", 1, True, drain=True), None) is None
    assert world.dlq.calls == []  # not even the DLQ's depth is read


def test_the_check_before_a_batch_brings_the_runs_verdicts_in_the_same_read() -> None:
    world = World()
    world.state.drain = new_drain(SETTINGS, 500_000, NOW)
    world.state.verdicts["v1"] = [VerdictCounts(ok=7, transient=2)]

    checked = world.fleet(0).check(KEY, at_full_rate=True, verdict_key="v1")

    assert checked.verdicts == VerdictCounts(ok=7, transient=2)
    assert world.state.calls.count("load_fleet_view") == 1 and "load_verdicts" not in world.state.calls
    assert world.fleet(0).check(KEY, at_full_rate=True).verdicts is None


def test_one_worker_allowed_never_fans_out() -> None:
    world = World()
    drains = world.drains()
    drains.settings = replace(SETTINGS, max_workers=1)

    assert not drains.joins_or_starts(StopReason.TIME_BUDGET, generation=0)
    assert drains.fleet(Resume("t", 1, True, drain=True), None) is None


def test_the_drain_ends_when_a_run_finds_the_dlq_empty() -> None:
    world = World()
    world.state.drain = replace(new_drain(SETTINGS, 500_000, NOW), stepped_at=NOW)
    fleet = world.fleet(0)
    fleet.check(KEY, at_full_rate=True)
    world.clock = NOW + 30

    world.drains().end(fleet.last)

    drain = world.state.drain
    assert isinstance(drain, DrainRecord) and (drain.ended_at, drain.messages_left) == (NOW + 30, 0)


def test_a_run_outside_a_drain_re_drives_at_the_chains_rate_whatever_the_environment_took_before() -> None:
    world = World()
    drains = world.drains()
    world.limiter.set_rate(900)

    assert drains.fleet(None, None) is None and world.limiter.rate == SETTINGS.max_redrives_per_second


def test_a_runs_parallel_batches_step_the_pace_once() -> None:
    world = World()
    stored = replace(new_drain(SETTINGS, 500_000, NOW), rate=400, stepped_at=NOW - CONTROL_SECONDS)
    world.state.drain = stored
    fleet = world.fleet(0)

    first = fleet.step(stored)
    second = fleet.step(stored)  # a batch that read the record before the first step

    assert second is first and world.state.calls.count("save_drain") == 1


def test_a_consumer_that_takes_less_than_half_the_pace_over_a_large_backlog_stops_every_worker() -> None:
    limit = SETTINGS.source_backlog_limit
    world = World(visible=limit + 1_200)
    before = replace(new_drain(SETTINGS, 500_000, NOW), rate=400, stepped_at=NOW - CONTROL_SECONDS)
    world.state.drain = replace(before, source_visible=limit + 100)  # gained 1,100 of the 2,000 sent

    assert world.fleet(2).check(KEY, at_full_rate=True).stop is StopReason.SOURCE_BACKLOG
    assert world.fleet(0).check(KEY, at_full_rate=True).stop is StopReason.SOURCE_BACKLOG  # the same step


def test_a_consumer_that_takes_more_than_half_the_pace_is_paced_down_not_stopped() -> None:
    limit = SETTINGS.source_backlog_limit
    world = World(visible=limit + 900)
    before = replace(new_drain(SETTINGS, 500_000, NOW), rate=400, stepped_at=NOW - CONTROL_SECONDS)
    world.state.drain = replace(before, source_visible=limit + 100)  # gained 800 of the 2,000 sent

    assert world.fleet(0).check(KEY, at_full_rate=True)[:2] == (StopReason.NONE, True)
    assert world.state.drain.rate < 400  # cut


def test_a_worker_stops_when_no_drain_is_going() -> None:
    world = World()
    world.state.drain = replace(new_drain(SETTINGS, 500_000, NOW), ended_at=NOW)

    assert world.fleet(3).check(KEY, at_full_rate=True)[:2] == (StopReason.FEWER_WORKERS, False)


def test_a_run_with_no_drain_going_or_in_its_slow_start_goes_at_the_chains_rate_and_back_pressure() -> None:
    world = World()
    fleet = world.fleet(0)
    world.limiter.set_rate(900)  # a pace's share an earlier run of this environment took

    assert fleet.check(KEY, at_full_rate=True)[:2] == (StopReason.NONE, False)
    assert world.limiter.rate == SETTINGS.max_redrives_per_second

    world.state.drain = replace(
        new_drain(SETTINGS, 500_000, NOW), rate=3000, stepped_at=NOW - CONTROL_SECONDS
    )
    assert fleet.check(KEY, at_full_rate=False)[:2] == (StopReason.NONE, False)
    assert world.state.drain.rate == 3000  # not stepped: the run's slow start is not over


def test_a_stored_pace_is_kept_within_max_drain_rate() -> None:
    world = World()
    world.state.drain = replace(new_drain(SETTINGS, 500_000, NOW), rate=90_000, workers=10, stepped_at=NOW)
    fleet = world.fleet(0)

    assert fleet.check(KEY, at_full_rate=True)[:2] == (StopReason.NONE, True)
    assert world.limiter.rate == SETTINGS.max_drain_rate / 10
