"""A token bucket in messages per second, so a recovered consumer is not flooded."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


class TokenBucket:
    """``rate`` tokens a second, holding at most ``burst``; it starts full."""

    def __init__(
        self,
        rate: float,
        *,
        burst: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"rate must be > 0 and burst >= 1, got {rate} and {burst}")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = burst
        self._updated = clock()
        self._lock = threading.Lock()

    def acquire(self, count: int) -> float:
        """Take ``count`` tokens, sleeping until there are enough; return the seconds slept.

        Safe across threads: waiters take their turn, so parallel batches share one rate.
        """
        if count > self.burst:
            raise ValueError(f"cannot take {count} tokens from a bucket of {self.burst}")
        with self._lock:
            self._refill()
            waited = 0.0
            if self._tokens < count:
                waited = (count - self._tokens) / self.rate
                self._sleep(waited)
                self._refill()
            self._tokens -= count
            return waited

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.rate)
        self._updated = now
