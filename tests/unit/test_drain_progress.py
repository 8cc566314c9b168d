"""A large drain's progress as the operator's tool shows it (pure): going, interrupted or ended, the
time to empty at the current rate, and the record's text rendered inertly."""

from __future__ import annotations

import io
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from sqs_redriver.console.cli.render import drain_view
from sqs_redriver.console.status import DrainProgress, DrainState
from sqs_redriver.core.table import DrainRecord
from sqs_redriver.protocol.limits import DRAIN_STALE_SECONDS

NOW = 1_800_000_000
GOING = DrainRecord(
    rate=800,
    phase="climb",
    fell_behind_at=0,
    workers=8,
    messages_left=120_000,
    stepped_at=NOW - 4,
    started_at=NOW - 600,
)


def progress(**changes: int | str) -> DrainProgress:
    return DrainProgress(replace(GOING, **changes), NOW)  # type: ignore[arg-type]


def shown(drain: DrainProgress) -> dict[str, str]:
    return dict(drain.rows())


def rendered(drain: DrainProgress) -> str:
    """What a terminal receives (without colours: any escape there would be the record's)."""
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=200)
    console.print(drain_view(drain))
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(output, str)
    return output


def test_a_drain_stepped_within_the_stale_time_is_going() -> None:
    assert progress(stepped_at=NOW - DRAIN_STALE_SECONDS).state is DrainState.GOING


def test_a_drain_no_worker_stepped_for_longer_is_interrupted_and_has_no_time_to_empty() -> None:
    interrupted = progress(stepped_at=NOW - DRAIN_STALE_SECONDS - 1)

    assert interrupted.state is DrainState.INTERRUPTED
    assert interrupted.seconds_to_empty is None
    assert shown(interrupted)["state"].startswith("interrupted: no worker stepped its pace for 1m")
    assert "starts over at the start rate" in shown(interrupted)["state"]
    assert shown(interrupted)["time to empty"] == "- (interrupted)"


def test_an_ended_drain_says_when_whatever_its_last_step() -> None:
    ended = progress(ended_at=NOW - 120, stepped_at=NOW - 3_600, messages_left=0)

    assert ended.state is DrainState.ENDED
    assert shown(ended)["state"].startswith("ended ") and "(2m ago)" in shown(ended)["state"]
    assert ended.seconds_to_empty is None


def test_the_time_to_empty_is_the_messages_left_at_the_current_rate() -> None:
    going = progress()

    assert going.seconds_to_empty == 150
    assert shown(going) == {
        "state": "going",
        "messages left": "120,000 in the DLQ as of 4s ago",
        "rate": "800 msg/s, all workers together (phase climb)",
        "workers wanted": "8",
        "time to empty": "2m at this rate",
        "started": "2027-01-15 07:50:00Z (10m ago)",
    }


def test_a_drain_that_moves_nothing_has_no_time_to_empty() -> None:
    stalled = progress(rate=0)

    assert stalled.seconds_to_empty is None
    assert shown(stalled)["time to empty"] == "nothing moves (rate 0)"


def test_a_worker_clock_ahead_of_the_tool_s_is_a_step_just_now() -> None:
    ahead = progress(stepped_at=NOW + 30)

    assert (ahead.stepped_ago, ahead.state) == (0, DrainState.GOING)


@given(st.integers(0, 10**9), st.integers(1, 100_000))
def test_the_time_to_empty_is_the_least_whole_seconds_that_move_every_message_left(
    left: int, rate: int
) -> None:
    seconds = progress(messages_left=left, rate=rate).seconds_to_empty

    assert seconds is not None
    assert seconds * rate >= left and (seconds == 0 or (seconds - 1) * rate < left)


def test_the_json_says_the_state_and_the_time_to_empty_beside_the_record() -> None:
    data = progress().to_dict()

    assert data == {
        "state": "going",
        "messages_left": 120_000,
        "rate": 800,
        "phase": "climb",
        "fell_behind_at": 0,
        "workers": 8,
        "seconds_to_empty": 150,
        "stepped_at": NOW - 4,
        "stepped_seconds_ago": 4,
        "started_at": NOW - 600,
        "ended_at": None,
    }


@given(st.text(st.characters(codec=None, categories=None), max_size=16))
def test_any_phase_a_record_holds_is_shown_inertly(phase: str) -> None:
    drain = progress(phase=phase)

    assert all(text.isprintable() for _label, text in drain.rows())
    assert "\x1b" not in rendered(drain)


def test_markup_and_escapes_in_a_phase_print_as_typed() -> None:
    output = rendered(progress(phase="[/x]\x1b[2J[bold]"))

    assert "(phase [/x]\\x1b[2J[bold])" in output
    assert "\x1b" not in output
