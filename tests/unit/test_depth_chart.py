"""The depth chart: any points in, well-formed SVG out, every coordinate inside its view box."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

from hypothesis import example, given
from hypothesis import strategies as st

from sqs_redriver.console.web.views import HEIGHT, WIDTH, depth_chart

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
COORDINATES = ("x", "y", "x1", "x2", "y1", "y2", "cx", "cy")
anything = st.floats(allow_nan=True, allow_infinity=True)
series = st.lists(st.lists(st.tuples(anything, anything), max_size=20), max_size=5)


def coordinates(svg: str) -> list[float]:
    root = ElementTree.fromstring(svg)
    found: list[float] = []
    for element in root.iter():
        found += [float(element.attrib[name]) for name in COORDINATES if name in element.attrib]
        if "points" in element.attrib:
            found += [float(value) for value in NUMBER.findall(element.attrib["points"])]
    return found


@given(series, anything, anything)
@example([[(0.0, 1e308)]], 0.0, 0.0)  # a depth near float's limit: the axis's round top overflowed
def test_any_points_give_well_formed_svg_with_every_coordinate_in_the_view_box(
    points: list[list[tuple[float, float]]], start: float, end: float
) -> None:
    svg = depth_chart(points, start, end)

    root = ElementTree.fromstring(svg)
    assert root.attrib["viewBox"] == f"0 0 {WIDTH} {HEIGHT}"
    assert all(0 <= value <= max(WIDTH, HEIGHT) for value in coordinates(svg))


@given(
    st.lists(
        st.tuples(st.integers(0, 10_800), st.integers(0, 10**6)),
        min_size=2,
        max_size=30,
        unique_by=lambda p: p[0],
    )
)
def test_points_in_the_window_are_drawn_as_a_line(points: list[tuple[int, int]]) -> None:
    svg = depth_chart([sorted(points)], 0, 10_800)

    assert "<polyline" in svg and "no datapoints yet" not in svg


def test_no_points_say_so() -> None:
    assert "no datapoints yet" in depth_chart([[], []], 0, 10_800)
    assert "no datapoints yet" in depth_chart([[(20_000, 5.0)]], 0, 10_800)  # outside the window
