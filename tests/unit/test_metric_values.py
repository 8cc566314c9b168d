"""The datapoint parser: any value in, a count (or a minute) or a named rejection out."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.runtime.consumer_health import MAX_MINUTE_COUNT, Rejection, minute_count, minute_start

START = 1_795_000_020  # a minute's start
END = START + 3600

json_like: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary() | st.decimals(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
counts = st.integers(min_value=0, max_value=MAX_MINUTE_COUNT)


@given(json_like)
def test_any_value_is_a_count_within_limits_or_a_named_rejection(value: Any) -> None:
    parsed = minute_count(value)

    assert isinstance(parsed, Rejection) or (type(parsed) is int and 0 <= parsed <= MAX_MINUTE_COUNT)


@given(counts, st.booleans())
def test_a_whole_count_is_read_whether_it_comes_as_an_integer_or_a_float(count: int, as_float: bool) -> None:
    assert minute_count(float(count) if as_float else count) == count


@given(st.floats(min_value=0, max_value=MAX_MINUTE_COUNT).filter(lambda f: not f.is_integer()))
def test_a_fraction_is_not_a_count(value: float) -> None:
    assert minute_count(value) is Rejection.NOT_WHOLE


@given(st.integers(max_value=-1) | st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False))
def test_a_negative_number_is_not_a_count(value: float) -> None:
    assert minute_count(value) is Rejection.NEGATIVE


@given(
    st.integers(min_value=MAX_MINUTE_COUNT + 1)
    | st.floats(min_value=MAX_MINUTE_COUNT + 1, allow_infinity=False)
)
def test_more_than_the_most_a_minute_holds_is_not_a_count(value: float) -> None:
    assert minute_count(value) is Rejection.TOO_LARGE


@given(st.sampled_from([math.nan, math.inf, -math.inf]))
def test_a_number_that_is_not_finite_is_not_a_count(value: float) -> None:
    assert minute_count(value) is Rejection.NOT_FINITE


@given(st.booleans() | st.text() | st.none() | st.decimals(allow_nan=False))
def test_what_is_not_an_int_or_a_float_is_not_a_number(value: Any) -> None:
    assert minute_count(value) is Rejection.NOT_A_NUMBER


@given(json_like | st.datetimes() | st.datetimes(timezones=st.timezones()))
def test_any_timestamp_is_a_minute_inside_the_window_or_a_named_rejection(value: Any) -> None:
    parsed = minute_start(value, start=START, end=END)

    assert isinstance(parsed, Rejection) or (
        type(parsed) is int and START <= parsed < END and parsed % 60 == 0
    )


@given(st.integers(min_value=0, max_value=59), st.sampled_from([UTC, None]))
def test_a_minute_inside_the_window_is_its_epoch_second_with_or_without_a_timezone(
    minute: int, tz: Any
) -> None:
    moment = datetime.fromtimestamp(START + 60 * minute, tz=UTC).replace(tzinfo=tz)

    assert minute_start(moment, start=START, end=END) == START + 60 * minute


@given(st.integers(min_value=1, max_value=59 * 1_000_000 + 999_999))
def test_a_moment_that_is_not_a_minute_start_is_refused(micros: int) -> None:
    moment = datetime.fromtimestamp(START, tz=UTC) + timedelta(microseconds=micros)

    assert minute_start(moment, start=START, end=END) is Rejection.OFF_MINUTE


@given(st.integers(min_value=1, max_value=10_000), st.booleans())
def test_a_minute_outside_the_window_is_refused(minutes: int, before: bool) -> None:
    epoch = START - 60 * minutes if before else END + 60 * (minutes - 1)

    assert minute_start(datetime.fromtimestamp(epoch, tz=UTC), start=START, end=END) is Rejection.OUTSIDE
