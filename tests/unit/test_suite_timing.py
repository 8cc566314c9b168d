"""The suite's own settings give no verdict on the machine's speed."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@given(st.integers())
def test_hypothesis_times_no_example_and_no_draw(_: int) -> None:
    # the settings this very test runs with: those of every @given without a deadline of its own
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check
