"""A line chart as inline SVG, drawn on the server: points in, markup out. Pure, and made of numbers
and fixed words only (no label of a queue or a message reaches it: the page's legend, autoescaped,
names the lines), so the page may include it as markup."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

WIDTH = 720
HEIGHT = 220
# Room for the axis labels: left (depths), bottom (times), and a little on top and right.
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 12, 28
# One colour per line, in order; the legend uses the same order (CSS classes line-0, line-1, ...).
COLOURS = ("#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")

Points = Sequence[tuple[float, float]]


def depth_chart(series: Sequence[Points], start: float, end: float) -> str:
    """An SVG of each series of (epoch seconds, depth) between ``start`` and ``end``: points
    outside the window, or not finite, are left out; an empty chart says so."""
    if not math.isfinite(end - start) or end <= start:
        start, end = 0.0, 1.0
    kept = [[(t, v) for t, v in points if _shown(t, v, start, end)] for points in series]
    top = _scale_top(max((v for points in kept for _t, v in points), default=0.0))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="queue depth over time">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        *_axes(start, end, top),
    ]
    for index, points in enumerate(kept):
        colour = COLOURS[index % len(COLOURS)]
        coordinates = " ".join(f"{_x(t, start, end):.1f},{_y(v, top):.1f}" for t, v in points)
        if len(points) == 1:
            x, y = _x(points[0][0], start, end), _y(points[0][1], top)
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
        elif points:
            parts.append(f'<polyline points="{coordinates}" fill="none" stroke="{colour}" stroke-width="2"/>')
    if not any(kept):
        parts.append(
            f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT / 2:.0f}" text-anchor="middle" '
            'font-size="14" fill="#666666">no datapoints yet</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _shown(t: float, v: float, start: float, end: float) -> bool:
    return math.isfinite(t) and math.isfinite(v) and start <= t <= end and v >= 0


def _scale_top(highest: float) -> float:
    """A round number at or above ``highest`` (at least 1), for the vertical axis."""
    if highest <= 1:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(highest))
    for step in (1, 2, 5, 10):
        top = step * magnitude
        if highest <= top:
            return top if math.isfinite(top) else highest  # near float's limit: no rounder number
    return highest


def _x(t: float, start: float, end: float) -> float:
    return LEFT + (t - start) / (end - start) * (WIDTH - LEFT - RIGHT)


def _y(v: float, top: float) -> float:
    return HEIGHT - BOTTOM - min(v, top) / top * (HEIGHT - TOP - BOTTOM)


def _axes(start: float, end: float, top: float) -> list[str]:
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    parts = [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#999999"/>',
        f'<line x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#999999"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end" font-size="11" fill="#333333">{top:g}</text>',
        f'<text x="{LEFT - 6}" y="{bottom}" text-anchor="end" font-size="11" fill="#333333">0</text>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        t = start + fraction * (end - start)
        anchor = ("start", "middle", "end")[int(fraction * 2)]
        parts.append(
            f'<text x="{_x(t, start, end):.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}" font-size="11" '
            f'fill="#333333">{_clock(t)}</text>'
        )
    return parts


def _clock(epoch: float) -> str:
    """``14:05Z``; a time outside what datetime can show, as a number."""
    try:
        return datetime.fromtimestamp(epoch, UTC).strftime("%H:%MZ")
    except (OverflowError, OSError, ValueError):
        return f"{epoch:.0f}"


def swatch(index: int) -> str:
    """A small square in the colour of line ``index``, for the page's legend."""
    colour = COLOURS[index % len(COLOURS)]
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="12" height="12">'
        f'<rect width="12" height="12" fill="{colour}"/></svg>'
    )
