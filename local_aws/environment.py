"""os.environ changed for a while, and restored exactly afterwards."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def environment(values: Mapping[str, str], *, unset: Iterable[str] = ()) -> Iterator[None]:
    """Set ``values`` and remove ``unset`` in os.environ; on exit, put back what was there before.

    Only the names that changed are put back: os.environ is never emptied on the way, so another
    thread reading it meanwhile (the kept demo's web console making its clients while a handler
    runs) sees every variable this did not touch."""
    saved = dict(os.environ)
    os.environ.update(values)
    for name in unset:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        for name in set(os.environ) - set(saved):
            os.environ.pop(name, None)
        for name, value in saved.items():
            if os.environ.get(name) != value:
                os.environ[name] = value
