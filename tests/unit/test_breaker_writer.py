"""sqs_redriver.core.breaker: the workers of one run share its writer, so what one
worker wrote is where the others go on from, and their next write is not lost to their own run."""

from __future__ import annotations

import logging

from sqs_redriver.core.breaker import Breaker, BreakerWriter, Evidence, State
from tests.support.fakes import FakeStateStore

READ = Breaker(version=7)


def test_a_worker_goes_on_from_the_record_another_worker_of_its_run_wrote() -> None:
    store = FakeStateStore(breaker=READ)
    writer = BreakerWriter(store, "BREAKER#q", logging.getLogger("test"))
    silent = READ.with_silent_probes(2)
    assert writer.transition(READ, silent) == (silent, 0)  # worker A

    mine = writer.newest(READ)  # worker B read the breaker before A wrote
    opened, errors = writer.transition(mine, mine.opened(100, Evidence.METRICS))

    assert mine == silent and errors == 0
    assert store.breaker == opened and opened.state is State.OPEN and opened.silent_probes == 2


def test_a_record_no_newer_than_the_workers_own_is_not_taken() -> None:
    writer = BreakerWriter(FakeStateStore(breaker=READ), "BREAKER#q", logging.getLogger("test"))
    assert writer.newest(READ) is READ
    newer = Breaker(version=9)
    writer.transition(READ, READ.with_silent_probes(2))
    assert writer.newest(newer) is newer
