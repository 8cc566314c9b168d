"""``enum.StrEnum`` where Python has it (3.11+), an equivalent on python3.10: the consumer kit runs
on every Lambda Python runtime and imports the protocol modules that use it."""

from __future__ import annotations

try:
    from enum import StrEnum
except ImportError:  # python3.10
    from enum import Enum

    class StrEnum(str, Enum):  # type: ignore[no-redef]  # noqa: UP042
        def __str__(self) -> str:
            return str(self.value)


__all__ = ["StrEnum"]
