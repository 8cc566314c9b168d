"""Application code that fails, for the fingerprint's tests: a test and a subprocess that raise the
same bug from the same place get one fingerprint."""

from __future__ import annotations

from collections.abc import Callable


class InvalidOrder(Exception):
    pass


def validate(message: str) -> None:
    raise InvalidOrder(message)


def caught(call: Callable[[str], object], argument: str) -> BaseException:
    """What ``call(argument)`` raised."""
    try:
        call(argument)
    except Exception as exc:
        return exc
    raise AssertionError("expected the call to raise")
