"""Parallel workers in a fixed order: a thread pool whose workers run one at a time and hand over
at every AWS call, in turn.

The re-driver drains with several threads (``sqs_redriver.runtime.batch_loop``). Which thread reaches
which AWS call first is up to the OS scheduler, so "fail the 35th call" names a different call, or
none, from one run to the next, and more so on a busy machine. With ``Lockstep`` in place of the
pool, exactly one worker runs at any moment: it runs until its next AWS call, hands the turn to the
next worker still working, and waits for the turn to come back before making that call. Every run
of the same case then makes the same calls in the same order, whatever the machine is doing,
while the workers still interleave between every two calls (the finest grain at which they share
AWS).

Use ``Lockstep.installed()`` around a run, and put ``lockstep.client(...)`` outermost around each
client the workers share, so a worker hands over before any lock a wrapper takes for the call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any
from unittest import mock

from local_aws.clients import ClientProxy

POOL = "sqs_redriver.runtime.batch_loop.ThreadPoolExecutor"
# A turn that never comes is a deadlock (a lock held across an AWS call), not a slow machine: fail
# with the threads named instead of hanging the suite. A bound for a hang, far above any run's wait.
DEADLOCK_SECONDS = 600.0


class Lockstep:
    """The turn: which registered worker may run now. Threads outside the pool (the run's own)
    are never held."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._workers: list[int] = []  # thread idents in submission order, while they work
        self._turn: int | None = None

    @contextmanager
    def installed(self) -> Iterator[Lockstep]:
        """Replace the re-driver's thread pool with this lockstep pool while the block runs."""
        with mock.patch(POOL, self.pool):
            yield self

    def pool(self, max_workers: int) -> LockstepPool:
        return LockstepPool(self)

    def client(self, client: Any) -> Any:
        """``client`` with a hand-over before every call a worker makes through it."""
        return _HandsOver(client, self)

    def enrol(self, ident: int) -> None:
        with self._condition:
            self._workers.append(ident)

    def start(self) -> None:
        """Give the first worker the turn, once every worker is enrolled."""
        with self._condition:
            if self._turn is None and self._workers:
                self._turn = self._workers[0]
                self._condition.notify_all()

    def wait_for_turn(self) -> None:
        me = threading.get_ident()
        with self._condition:
            self._wait_until_turn_of(me)

    def _wait_until_turn_of(self, me: int) -> None:
        if not self._condition.wait_for(lambda: self._turn == me, timeout=DEADLOCK_SECONDS):
            raise RuntimeError(
                f"lockstep: {threading.current_thread().name} waited {DEADLOCK_SECONDS:.0f} s for its "
                f"turn, held by thread {self._turn}: a lock held across an AWS call?"
            )

    def hand_over(self) -> None:
        """Before a worker's AWS call: the next worker runs up to its own next call (or its end),
        then this one makes its call."""
        me = threading.get_ident()
        with self._condition:
            if me not in self._workers:
                return
            self._turn = self._after(me)
            self._condition.notify_all()
            self._wait_until_turn_of(me)

    def leave(self) -> None:
        """A worker ended (returned or raised): the turn passes on without it."""
        me = threading.get_ident()
        with self._condition:
            following = self._after(me)
            self._workers.remove(me)
            self._turn = following if following != me else None
            self._condition.notify_all()

    def _after(self, me: int) -> int:
        return self._workers[(self._workers.index(me) + 1) % len(self._workers)]


class LockstepPool:
    """Stands in for ``ThreadPoolExecutor``: ``submit`` enrols a worker, the first ``result()``
    starts them all, leaving the block waits for every one."""

    def __init__(self, lockstep: Lockstep) -> None:
        self._lockstep = lockstep
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> LockstepPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lockstep.start()
        for thread in self._threads:
            thread.join(timeout=DEADLOCK_SECONDS)
            if thread.is_alive():
                raise RuntimeError(f"lockstep: {thread.name} did not end within {DEADLOCK_SECONDS:.0f} s")

    def submit(self, work: Callable[[], Any]) -> Future[Any]:
        future = _StartingFuture(self._lockstep)
        enrolled = threading.Event()

        def run() -> None:
            self._lockstep.enrol(threading.get_ident())
            enrolled.set()
            self._lockstep.wait_for_turn()
            try:
                future.set_result(work())
            except BaseException as exc:  # a worker's death is its future's result, as in the pool
                future.set_exception(exc)
            finally:
                self._lockstep.leave()

        thread = threading.Thread(target=run, name=f"lockstep-{len(self._threads)}", daemon=True)
        self._threads.append(thread)
        thread.start()
        enrolled.wait()  # enrolment order is submission order
        return future


class _StartingFuture(Future[Any]):
    def __init__(self, lockstep: Lockstep) -> None:
        super().__init__()
        self._lockstep = lockstep

    def result(self, timeout: float | None = None) -> Any:
        self._lockstep.start()
        return super().result(timeout)


class _HandsOver(ClientProxy):
    def __init__(self, client: Any, lockstep: Lockstep) -> None:
        super().__init__(client)
        self._lockstep = lockstep

    def __getattr__(self, name: str) -> Any:
        attribute = super().__getattr__(name)
        if name.startswith("_") or name in {"meta", "exceptions"} or not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self._lockstep.hand_over()
            return attribute(*args, **kwargs)

        return call
