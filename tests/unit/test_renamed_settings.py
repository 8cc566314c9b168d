"""A setting renamed in this release (protocol.settings.renamed): the Lambda still reads its old
variable at cold start, with one deprecation line, and refuses both names with different values."""

from __future__ import annotations

import pytest

from sqs_redriver.protocol.settings import BY_NAME, RENAMED, Renamed, with_new_names
from sqs_redriver.runtime.errors import ConfigError
from sqs_redriver.runtime.settings import load_settings
from tests.support.factories import REQUIRED_VARIABLES as REQUIRED


def test_the_old_variable_is_read_with_one_line_naming_both_names_and_its_end() -> None:
    warned: list[str] = []

    settings = load_settings({**REQUIRED, "MAX_REDRIVES": "7"}, warn=warned.append)

    assert settings.max_redrive_count == 7
    [line] = warned
    assert "MAX_REDRIVES" in line and "MAX_REDRIVE_COUNT" in line and "this release only" in line


def test_the_new_variable_alone_warns_of_nothing() -> None:
    warned: list[str] = []

    settings = load_settings({**REQUIRED, "MAX_REDRIVE_COUNT": "7"}, warn=warned.append)

    assert (settings.max_redrive_count, warned) == (7, [])


def test_both_names_with_one_value_are_read_with_the_warning() -> None:
    warned: list[str] = []

    settings = load_settings({**REQUIRED, "MAX_REDRIVES": "7", "MAX_REDRIVE_COUNT": " 7"}, warn=warned.append)

    assert settings.max_redrive_count == 7 and len(warned) == 1


def test_both_names_with_different_values_fail_naming_both() -> None:
    with pytest.raises(ConfigError, match="MAX_REDRIVES and MAX_REDRIVE_COUNT are both set"):
        load_settings({**REQUIRED, "MAX_REDRIVES": "7", "MAX_REDRIVE_COUNT": "5"}, warn=print)


def test_an_old_variable_out_of_range_is_refused_as_the_new_one_would_be() -> None:
    with pytest.raises(ConfigError, match="MAX_REDRIVE_COUNT must be an integer from 1 to 50"):
        load_settings({**REQUIRED, "MAX_REDRIVES": "0"}, warn=print)


def test_with_new_names_leaves_other_values_alone() -> None:
    values, lines = with_new_names({"A": "1", "OLD": "2"}, {"OLD": "NEW", "GONE": "THERE"})

    assert values == {"A": "1", "NEW": "2"} and len(lines) == 1


@pytest.mark.parametrize("renamed", RENAMED, ids=lambda r: r.old_name)
def test_each_rename_points_at_a_setting_of_the_schema_under_its_names(renamed: Renamed) -> None:
    assert BY_NAME[renamed.new_name].env == renamed.new_env
    assert renamed.old_name not in BY_NAME
