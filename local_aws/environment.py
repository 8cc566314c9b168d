"""os.environ changed for a while, and restored exactly afterwards."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def environment(values: Mapping[str, str], *, unset: Iterable[str] = ()) -> Iterator[None]:
    """Set ``values`` and remove ``unset`` in os.environ; on exit, put back what was there before."""
    saved = dict(os.environ)
    os.environ.update(values)
    for name in unset:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
