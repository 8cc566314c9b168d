"""core/source_growth.py: the pure rule that stops a chain's re-drives when its source queue grew
past SOURCE_BACKLOG_LIMIT over the baseline, and the baseline record's codec."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.core.source_growth import (
    MAX_DEPTH,
    Baseline,
    baseline_from_item,
    baseline_item,
    judge_growth,
)

NOW = 1_800_000_000
WINDOW = 900
LIMIT = 1_000

depths = st.integers(min_value=0, max_value=MAX_DEPTH)
limits = st.integers(min_value=1, max_value=100_000)
windows = st.integers(min_value=1, max_value=12 * 3600 * 1000)


@st.composite
def held_baselines(draw: st.DrawFn) -> Baseline:
    since = draw(st.integers(min_value=NOW - 10 * WINDOW, max_value=NOW))
    return Baseline(draw(depths), since, draw(st.integers(min_value=NOW + 1, max_value=NOW + 10 * WINDOW)))


@given(depths, windows, limits, st.booleans())
def test_without_a_baseline_the_depth_now_is_the_baseline_and_nothing_stops(
    depth: int, window: int, limit: int, sent: bool
) -> None:
    growth = judge_growth(None, depth, now=NOW, window_seconds=window, limit=limit, sent=sent)
    assert growth.stop is False
    assert growth.write == Baseline(depth, NOW, NOW + window)


@given(depths, depths, windows, limits, st.booleans(), st.integers(min_value=0, max_value=10 * WINDOW))
def test_a_baseline_past_its_window_is_none(
    old: int, depth: int, window: int, limit: int, sent: bool, past: int
) -> None:
    """By then the re-driver's own messages have left the queue: what grew is live traffic's."""
    stale = Baseline(old, NOW - WINDOW - past, NOW - past)
    growth = judge_growth(stale, depth, now=NOW, window_seconds=window, limit=limit, sent=sent)
    assert growth == judge_growth(None, depth, now=NOW, window_seconds=window, limit=limit, sent=sent)


@given(held_baselines(), depths, limits, st.booleans())
def test_a_held_baseline_stops_exactly_past_the_limit(
    baseline: Baseline, depth: int, limit: int, sent: bool
) -> None:
    growth = judge_growth(baseline, depth, now=NOW, window_seconds=WINDOW, limit=limit, sent=sent)
    assert growth.stop is (depth - baseline.depth > limit)


@given(held_baselines(), depths, limits, st.booleans())
def test_a_held_baseline_never_rises_and_never_shortens(
    baseline: Baseline, depth: int, limit: int, sent: bool
) -> None:
    """Growth is never taken into the baseline (each tick would send another limit's worth)."""
    written = judge_growth(baseline, depth, now=NOW, window_seconds=WINDOW, limit=limit, sent=sent).write
    if written is not None:
        assert written.depth <= baseline.depth
        assert written.since == baseline.since
        assert written.until >= baseline.until


@given(held_baselines(), st.integers(min_value=0, max_value=MAX_DEPTH), limits)
def test_a_stop_after_re_drives_keeps_the_baseline_for_a_window_from_now(
    baseline: Baseline, over: int, limit: int
) -> None:
    depth = min(MAX_DEPTH, baseline.depth + limit + 1 + over)
    if depth - baseline.depth <= limit:
        return
    sent = judge_growth(baseline, depth, now=NOW, window_seconds=WINDOW, limit=limit, sent=True)
    idle = judge_growth(baseline, depth, now=NOW, window_seconds=WINDOW, limit=limit, sent=False)
    assert sent.stop and idle.stop
    assert sent.write is not None and sent.write.until >= NOW + WINDOW
    assert idle.write is None  # a run that sent nothing keeps nothing of its own in the queue


def test_the_figures_of_the_issue() -> None:
    """1,000 over the baseline goes on; 1,001 stops; a queue that drained below lowers it."""
    held = Baseline(5_000, NOW - 60, NOW + WINDOW)
    assert not judge_growth(held, 6_000, now=NOW, window_seconds=WINDOW, limit=LIMIT, sent=True).stop
    assert judge_growth(held, 6_001, now=NOW, window_seconds=WINDOW, limit=LIMIT, sent=True).stop
    lowered = judge_growth(held, 4_000, now=NOW, window_seconds=WINDOW, limit=LIMIT, sent=True)
    assert lowered.write == Baseline(4_000, NOW - 60, NOW + WINDOW)


@given(held_baselines())
def test_the_record_round_trips(baseline: Baseline) -> None:
    item = baseline_item("BACKLOG#https://sqs/q", baseline)
    assert baseline_from_item(item, now=NOW) == baseline
    assert item["expires_at"] == {"N": str(baseline.until)}  # DynamoDB's TTL drops it after
