"""The settings of how long things are kept: DLQ messages before they expire, message records in
the table (part of the schema: ``schema.SCHEMA`` takes them in)."""

from __future__ import annotations

from typing import Any

from sqs_redriver.protocol.settings.kinds import IntSetting, Setting

RETENTION_SETTINGS: tuple[Setting[Any], ...] = (
    # Parked at least this long before the DLQ's retention ends; the retention sweep of runs that do
    # not scan (breaker OPEN, WATCH) comes every half of it, so it must span several schedule periods.
    IntSetting(
        "expiry_margin_seconds",
        "EXPIRY_MARGIN_SECONDS",
        default=86_400,
        low=60,
        high=7 * 86_400,
        meaning="park a DLQ message this close to the end of the DLQ's retention (reason `expiring`)",
    ),
    IntSetting(
        "state_ttl_days",
        "STATE_TTL_DAYS",
        default=14,
        low=1,
        high=365,
        meaning="lifetime of message records in the table",
        context=False,
    ),
)
