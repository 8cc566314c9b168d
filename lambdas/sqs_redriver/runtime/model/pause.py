"""The operator's kill switch: while a pause is recorded, no run re-drives, probes or scans."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pause:
    """Who paused the re-driver, why, and when (epoch seconds)."""

    reason: str
    by: str
    at: int
