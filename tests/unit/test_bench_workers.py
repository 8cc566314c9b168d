"""bench.workers' report: the table of worker counts side by side and one ``million:`` line each."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bench.workers import WorkersFigures, million_line, parse_args, render, speedups

ONE = WorkersFigures(
    workers=1,
    messages=3000,
    latency_ms=20,
    moved=3000,
    left=0,
    runs=1,
    errors=0,
    wall_s=12.5,
    rate=240.0,
    requests_per_message=0.42,
    cpu_s=10.1,
    cpu_per_wall=0.81,
    load_1m=1.5,
)
ROWS = [
    ONE,
    replace(ONE, workers=4, runs=4, rate=600.0),
    replace(ONE, workers=16, runs=16, rate=480.0),
    replace(ONE, latency_ms=200, rate=40.0),
    replace(ONE, workers=4, latency_ms=200, rate=150.0),
]


def pairs(line: str) -> dict[str, str]:
    prefix, _, rest = line.partition(" ")
    assert prefix == "million:"
    found = dict(pair.split("=", 1) for pair in rest.split(" "))
    assert len(found) == len(rest.split(" ")), "a key given twice"
    return found


def test_one_million_line_per_measurement_in_order() -> None:
    lines = [line for line in render(ROWS, as_json=False).splitlines() if line.startswith("million:")]
    measured = [pairs(line) for line in lines]
    assert [(m["workers"], m["latency_ms"]) for m in measured] == [
        ("1", "20"),
        ("4", "20"),
        ("16", "20"),
        ("1", "200"),
        ("4", "200"),
    ]


def test_a_line_starts_with_the_scenario_the_workers_and_carries_every_figure() -> None:
    line = million_line(replace(ONE, workers=4, rate=612.3), speedup=2.55)
    assert line.startswith("million: scenario=workers workers=4 ")
    assert pairs(line) == {
        "scenario": "workers",
        "workers": "4",
        "messages": "3000",
        "latency_ms": "20",
        "moved": "3000",
        "left": "0",
        "runs": "1",
        "errors": "0",
        "wall_s": "12.5",
        "rate": "612.3",
        "requests_per_message": "0.42",
        "cpu_s": "10.1",
        "cpu_per_wall": "0.81",
        "load_1m": "1.5",
        "speedup": "2.55",
    }


def test_the_speedup_is_against_the_fewest_workers_at_the_same_latency() -> None:
    assert speedups(ROWS) == [1.0, 2.5, 2.0, 1.0, 3.75]
    assert speedups([replace(ONE, workers=4, rate=100.0), replace(ONE, workers=16, rate=300.0)]) == [1.0, 3.0]


def test_no_rate_to_compare_with_is_a_speedup_of_zero() -> None:
    assert speedups([replace(ONE, rate=0.0), replace(ONE, workers=4)]) == [0.0, 0.0]


def test_the_table_has_a_row_per_measurement_and_as_many_cells_as_its_header() -> None:
    table = [line for line in render(ROWS, as_json=False).splitlines() if line.startswith("|")]
    header, rule, *rows = table
    assert "rate (/s)" in header and "speedup" in header
    assert len(rows) == len(ROWS)
    assert {row.count("|") for row in [rule, *rows]} == {header.count("|")}
    assert rows[1].split("|")[1].strip() == "4"


def test_json_is_the_figures_with_their_speedup() -> None:
    data = json.loads(render(ROWS, as_json=True))
    assert [row["speedup"] for row in data] == speedups(ROWS)
    assert data[0]["rate"] == 240.0 and data[0]["workers"] == 1


def test_the_defaults_are_1_4_and_16_workers_at_20_ms() -> None:
    args = parse_args([])
    assert (args.workers, args.latency_ms, args.json) == ([1, 4, 16], [20], False)


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--messages", "0"], ["--latency-ms", "-1"]])
def test_a_count_below_its_least_is_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)
