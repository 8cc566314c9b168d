"""Exceptions a hostile or careless consumer may raise: one that will not print, and a class that
will not tell its name."""

from __future__ import annotations

from typing import Any


class Unprintable(ValueError):
    def __str__(self) -> str:
        raise RuntimeError("will not print")


class Nameless(type):
    """A metaclass whose classes raise when asked their name."""

    def __getattribute__(cls, name: str) -> Any:
        if name in ("__qualname__", "__name__"):
            raise RuntimeError("no name")
        return super().__getattribute__(name)
