"""What the settings schema generates (make readme) is what the repository holds: docs/configuration.md's
settings table, and the fields of the Lambda's and the construct's typed settings."""

from __future__ import annotations

from sqs_redriver.cdk.settings_table import (
    CONFIGURATION_PAGE,
    FIELDS_BEGIN,
    FIELDS_END,
    HOW_TO_REGENERATE,
    PAGE_NAME,
    generated,
    render_fields,
    render_rows,
    render_table,
    table_in,
)
from sqs_redriver.protocol.settings import CONTEXT_SETTINGS, SCHEMA, IntSetting


def test_the_configuration_table_is_generated_from_the_schema() -> None:
    assert table_in(CONFIGURATION_PAGE.read_text(encoding="utf-8")) == render_table(), (
        f"{PAGE_NAME}'s configuration table differs from the settings schema: {HOW_TO_REGENERATE}"
    )


def test_every_setting_has_a_row_with_its_variable_default_and_range() -> None:
    rows = dict(zip((s.name for s in SCHEMA), render_rows(), strict=True))

    assert rows["max_redrive_count"] == (
        "| `max_redrive_count` (formerly `max_redrives`, read until the next release) "
        "| `MAX_REDRIVE_COUNT` (formerly `MAX_REDRIVES`) | 5 | re-drives before a message is parked (1-50) |"
    )
    assert rows["schedule"].startswith("| `schedule` | – | `rate(5 minutes)` |")
    assert rows["record_every_redrive"].startswith(
        "| `record_every_redrive` | `RECORD_EVERY_REDRIVE` | false |"
    )
    assert "at most half of `redriver_timeout_seconds`" in rows["time_margin_seconds"]
    # set by the construct, not a construct setting
    assert rows["state_ttl_days"].startswith("| – | `STATE_TTL_DAYS` | 14 |")
    assert rows["dlq_visibility_timeout_seconds"].startswith(
        "| – | `DLQ_VISIBILITY_TIMEOUT_SECONDS` | timeout + 30 (set by the construct; 960 if unset) |"
    )


def test_the_typed_settings_hold_exactly_the_fields_the_schema_generates() -> None:
    stale = [path.name for path, current, rendered in generated() if current != rendered]

    assert stale == [], f"differ from the settings schema: {HOW_TO_REGENERATE}"


def test_a_new_setting_in_the_schema_becomes_a_typed_field_of_each_view() -> None:
    added = IntSetting("added_seconds", "ADDED_SECONDS", default=7, low=0, high=9, meaning="added")

    fields = render_fields((*CONTEXT_SETTINGS, added)).splitlines()

    assert fields[-2] == '    added_seconds: int = default("added_seconds")'
    assert (fields[0], fields[-1]) == (FIELDS_BEGIN, FIELDS_END)
