"""The audit trail's events: written and read back alike, anything else refused with the field
named (never another exception), and joined into actions: one per id, unfinished without an end."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.console.audit import AuditEvent, AuditLog, Outcome, Phase, actions_from
from sqs_redriver.console.errors import AuditUnavailable

texts = st.text(min_size=1, max_size=40)
events = st.builds(
    AuditEvent,
    action_id=st.sampled_from(["a", "b", "c", "d"]),
    phase=st.sampled_from(Phase),
    action=texts,
    who=texts,
    at=st.integers(min_value=0, max_value=2**40),
    target=texts,
    details=st.dictionaries(texts, st.text(max_size=40), max_size=3),
    count=st.none() | st.integers(min_value=0, max_value=10**6),
    outcome=st.none() | st.sampled_from([Outcome.DONE, Outcome.FAILED, Outcome.INTERRUPTED]),
    error=st.none() | st.text(max_size=40),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=12,
)


@given(events)
def test_an_event_reads_back_as_written(event: AuditEvent) -> None:
    read = AuditEvent.from_json(event.to_json())
    assert (read.action_id, read.phase, read.action, read.who, read.at) == (
        event.action_id,
        event.phase,
        event.action,
        event.who,
        event.at,
    )
    assert read.details == event.details
    if event.phase is Phase.ENDED:
        assert (read.count, read.outcome, read.error) == (event.count, event.outcome, event.error)


@given(st.text() | json_values.map(json.dumps))
def test_anything_else_in_the_log_is_refused_with_a_value_error(text: str) -> None:
    try:
        AuditEvent.from_json(text)
    except ValueError:
        pass


@given(st.lists(events, max_size=12))
def test_each_action_is_listed_once_newest_first_unfinished_without_an_end(
    written: list[AuditEvent],
) -> None:
    actions = actions_from(written)

    assert sorted(a.action_id for a in actions) == sorted({e.action_id for e in written})
    assert [a.at for a in actions] == sorted((a.at for a in actions), reverse=True)
    ended = {e.action_id for e in written if e.phase is Phase.ENDED}
    for action in actions:
        assert (action.outcome is Outcome.UNFINISHED) == (action.action_id not in ended)


@given(st.lists(st.tuples(events, st.integers(min_value=0, max_value=1)), max_size=12))
def test_actions_of_the_same_second_are_listed_the_later_in_the_log_first(
    stamped: list[tuple[AuditEvent, int]],
) -> None:
    written = [replace(event, at=second) for event, second in stamped]
    actions = actions_from(written)

    place = {action_id: i for i, action_id in enumerate(dict.fromkeys(e.action_id for e in written))}
    for newer, older in zip(actions, actions[1:], strict=False):
        assert newer.at > older.at or place[newer.action_id] > place[older.action_id]


class FakeLogs:
    """What AuditLog calls of CloudWatch Logs, kept in a list."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def create_log_stream(self, **_: Any) -> None:
        pass

    def put_log_events(self, *, logEvents: list[dict[str, Any]], **_: Any) -> None:
        self.messages += [json.loads(event["message"]) for event in logEvents]


def test_an_action_that_raises_is_recorded_failed_with_its_error_and_the_error_goes_on() -> None:
    logs = FakeLogs()
    trail = AuditLog(logs, "group", target="orders")

    with pytest.raises(RuntimeError, match="table gone"), trail.action("pause", "me", lambda: 5, reason="r"):
        raise RuntimeError("table gone")

    begun, ended = logs.messages
    assert (begun["phase"], ended["phase"], ended["outcome"]) == ("begun", "ended", "failed")
    assert ended["error"] == "table gone" and ended["details"] == {"reason": "r"}


def test_a_move_that_stopped_at_an_aws_error_is_recorded_failed_with_its_count() -> None:
    logs = FakeLogs()
    with AuditLog(logs, "group", target="orders").action("replay", "me", lambda: 5) as tally:
        tally.count, tally.problem = 7, "SendMessageBatch failed"

    ended = logs.messages[-1]
    assert (ended["outcome"], ended["count"], ended["error"]) == ("failed", 7, "SendMessageBatch failed")


def test_ctrl_c_is_recorded_interrupted() -> None:
    logs = FakeLogs()
    with pytest.raises(KeyboardInterrupt), AuditLog(logs, "g", target="t").action("purge", "me", lambda: 5):
        raise KeyboardInterrupt

    assert logs.messages[-1]["outcome"] == "interrupted"


class EndRefused(FakeLogs):
    """Takes the start of an action, refuses its end."""

    def put_log_events(self, *, logEvents: list[dict[str, Any]], **kwargs: Any) -> None:
        if self.messages:
            raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "down"}}, "PutLogEvents")
        super().put_log_events(logEvents=logEvents, **kwargs)


def test_an_action_done_whose_end_cannot_be_written_still_returns_and_says_so() -> None:
    with AuditLog(EndRefused(), "group", target="orders").action("replay", "me", lambda: 5) as tally:
        tally.count = 3

    assert tally.unrecorded_end is not None
    assert "replay ended (done, 3)" in tally.unrecorded_end and "shows it unfinished" in tally.unrecorded_end


class StreamRefusedOnce(FakeLogs):
    def __init__(self) -> None:
        super().__init__()
        self.streams: list[str] = []

    def create_log_stream(self, *, logStreamName: str, **_: Any) -> None:
        if not self.streams:
            self.streams.append("refused")
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "CreateLogStream"
            )
        self.streams.append(logStreamName)


def test_a_stream_that_could_not_be_made_is_made_on_the_next_action() -> None:
    logs = StreamRefusedOnce()
    trail = AuditLog(logs, "group", target="orders")
    with pytest.raises(AuditUnavailable), trail.action("pause", "me", lambda: 5):
        pass
    with trail.action("pause", "me", lambda: 6):
        pass

    assert len(logs.streams) == 2 and [m["phase"] for m in logs.messages] == ["begun", "ended"]
