"""What became of a replay, decided without AWS: every identity one fate, counts that add up, and
nothing called consumed that the evidence does not vouch for: above all, never a message that may
still be waiting in its source queue."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.console.aws import QueueDepth
from sqs_redriver.console.inventory import Where
from sqs_redriver.console.outcomes import BACK, FAILED_AGAIN, Fate, Observation, Seen, Sent, explain, judge
from sqs_redriver.protocol.sources import SourceKind

SENT_AT = 1_800_000_000
SOURCE = "https://sqs.eu-west-1.amazonaws.com/111122223333/orders"
FUNCTION = "arn:aws:lambda:eu-west-1:111122223333:function:orders"
# The fates that call an identity consumed (or taken by its target).
CALLED_CONSUMED = (Fate.CONSUMED, Fate.NOT_BACK, Fate.GONE, Fate.NOT_BACK_INVOKED, Fate.DELIVERED)

identities = st.text("abcdef0123", min_size=1, max_size=4)
fingerprints = st.none() | st.sampled_from(["fp-a", "fp-b"])
sents = st.lists(st.builds(Sent, identities, fingerprints, st.just(SOURCE)), max_size=12)
seens = st.builds(Seen, st.sampled_from(list(Where)), fingerprints, st.just("why"), st.booleans())
counts = st.integers(0, 3)
helds = st.builds(QueueDepth, st.just(SOURCE), counts, counts, counts, st.integers(60, 1_209_600))
EMPTY = QueueDepth(SOURCE, 0, 0, 0, 1_209_600)


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Sent], Observation]:
    sent = draw(sents)
    found = draw(st.lists(st.sampled_from([s.identity for s in sent]), unique=True)) if sent else []
    seen = {identity: draw(seens) for identity in found}
    window = draw(st.none() | st.integers(0, 7_200))
    unseen = [s.identity for s in sent if s.identity not in seen]
    returned = draw(st.lists(st.sampled_from(unseen), unique=True)) if unseen else []
    unread = draw(st.lists(st.sampled_from(unseen), unique=True)) if unseen else []
    observation = Observation(
        seen=seen,
        now=SENT_AT + draw(st.integers(0, 20_000)),
        windows={} if window is None else {SOURCE: window},
        ok_verdicts=draw(st.none() | st.integers(0, 15)),
        complete=draw(st.booleans()),
        held=draw(st.dictionaries(st.just(SOURCE), helds, max_size=1)),
        refused=draw(st.integers(0, 3)),
        back_since={identity: SENT_AT + draw(st.integers(1, 7_200)) for identity in returned},
        unreadable=dict.fromkeys(unread, "corrupt state record 'MSG#x': redrive_count: not a number"),
    )
    return sent, observation


@given(cases())
def test_every_identity_gets_exactly_one_fate_and_the_counts_add_up(
    case: tuple[list[Sent], Observation],
) -> None:
    sent, observation = case

    outcome = judge(sent, SENT_AT, observation)

    assert sorted(j.identity for j in outcome.judged) == sorted({s.identity for s in sent})
    assert sum(outcome.counts.values()) == len({s.identity for s in sent})
    assert outcome.line().startswith(f"{len(outcome.judged)} sent")


@given(cases())
def test_by_fate_groups_every_identity_once_under_the_phrases_of_the_line(
    case: tuple[list[Sent], Observation],
) -> None:
    sent, observation = case

    outcome = judge(sent, SENT_AT, observation)
    grouped = outcome.by_fate()

    assert sorted(j.identity for _, _, members in grouped for j in members) == sorted(
        j.identity for j in outcome.judged
    )
    assert all(members and all(j.fate is fate for j in members) for fate, _, members in grouped)
    assert all(f"{len(members)} {phrase}" in outcome.line() for _, phrase, members in grouped)


@given(cases())
def test_a_message_found_in_the_dlq_is_never_called_consumed(case: tuple[list[Sent], Observation]) -> None:
    sent, observation = case

    outcome = judge(sent, SENT_AT, observation)

    for judged in outcome.judged:
        if judged.identity in observation.seen:
            assert judged.fate not in (Fate.CONSUMED, Fate.NOT_BACK, Fate.GONE, Fate.WAITING, Fate.TOO_EARLY)
        if judged.fate in BACK:
            assert observation.seen[judged.identity].where is Where.DLQ


@given(cases())
def test_before_the_return_window_nothing_is_consumed_without_a_verdict(
    case: tuple[list[Sent], Observation],
) -> None:
    sent, observation = case
    window = observation.windows.get(SOURCE)

    outcome = judge(sent, SENT_AT, observation)

    if observation.ok_verdicts is None:
        assert not outcome.of(Fate.CONSUMED)
    if window is None or observation.now < SENT_AT + window:
        assert not outcome.of(Fate.NOT_BACK) and not outcome.of(Fate.GONE)


@given(cases())
def test_without_a_verdict_a_message_that_may_wait_in_its_source_is_never_consumed(
    case: tuple[list[Sent], Observation],
) -> None:
    sent, observation = case
    held = observation.held.get(SOURCE)

    outcome = judge(sent, SENT_AT, observation)

    inferred = outcome.of(Fate.NOT_BACK) + outcome.of(Fate.GONE)
    if observation.ok_verdicts is None:
        assert not outcome.of(Fate.CONSUMED)
    if held is None or held.total or not observation.complete:
        assert not inferred  # the source holds messages, or cannot be read, or a scan missed some
    if held is not None and held.total and observation.ok_verdicts is None:
        unseen = [j for j in outcome.judged if j.identity not in {*observation.seen, *observation.back_since}]
        assert all(j.fate is Fate.WAITING for j in unseen)
        assert all("may be waiting there" in explain(j, outcome) for j in unseen)


@given(cases())
def test_a_message_that_may_wait_in_its_source_is_never_consumed_even_on_the_kits_count(
    case: tuple[list[Sent], Observation],
) -> None:
    sent, observation = case
    held = observation.held.get(SOURCE)

    outcome = judge(sent, SENT_AT, observation)

    if held is None or held.total:
        assert not outcome.of(Fate.CONSUMED)


@given(cases())
def test_verdicts_vouch_only_for_as_many_as_they_count(case: tuple[list[Sent], Observation]) -> None:
    sent, observation = case

    outcome = judge(sent, SENT_AT, observation)

    assert len(outcome.of(Fate.CONSUMED)) <= (observation.ok_verdicts or 0)


CONSUMED_CLAIMS = (Fate.CONSUMED, Fate.NOT_BACK, Fate.GONE, Fate.NOT_BACK_INVOKED)


@given(cases())
def test_while_a_refusal_of_the_kit_is_not_found_back_nothing_is_called_consumed(
    case: tuple[list[Sent], Observation],
) -> None:
    sent, observation = case

    outcome = judge(sent, SENT_AT, observation)

    found_back = [j for j in outcome.judged if j.fate in (*BACK, Fate.PARKED, Fate.BACK_SINCE)]
    if observation.refused > len(found_back):
        assert not [j for j in outcome.judged if j.fate in CONSUMED_CLAIMS]
    assert outcome.refused == observation.refused
    if observation.refused:
        assert f"the consumer kit refused {observation.refused}" in outcome.line()


@given(cases())
def test_a_message_the_runs_re_drove_or_parked_since_came_back_and_is_never_consumed(
    case: tuple[list[Sent], Observation],
) -> None:
    sent, observation = case

    outcome = judge(sent, SENT_AT, observation)

    for judged in outcome.judged:
        if judged.identity in observation.back_since:
            assert judged.fate is Fate.BACK_SINCE and judged.fate in FAILED_AGAIN
            assert "after it came back to the DLQ" in explain(judged, outcome)


@given(cases())
def test_a_message_whose_state_records_cannot_be_read_is_never_consumed(
    case: tuple[list[Sent], Observation],
) -> None:
    sent, observation = case

    outcome = judge(sent, SENT_AT, observation)

    for judged in outcome.judged:
        if judged.identity in observation.unreadable:
            assert judged.fate not in CALLED_CONSUMED
        if judged.fate is Fate.MAYBE_REFUSED and judged.identity in observation.unreadable:
            assert "state records could not be read whole (corrupt state record" in explain(judged, outcome)


def test_a_function_s_event_with_an_unreadable_record_may_have_been_refused_once_its_retries_are_over() -> (
    None
):
    sent = [Sent("event-1", None, FUNCTION)]
    base = Observation(
        seen={},
        now=SENT_AT + 300,
        windows={FUNCTION: 600},
        dead_letter_kinds={FUNCTION: SourceKind.FUNCTION},
        unreadable={"event-1": "its trips could not be listed"},
    )

    early = judge(sent, SENT_AT, base)
    late = judge(sent, SENT_AT, replace(base, now=SENT_AT + 7_200))

    assert early.judged[0].fate is Fate.TOO_EARLY
    assert late.judged[0].fate is Fate.MAYBE_REFUSED
    assert explain(late.judged[0], late) == (
        "its state records could not be read whole (its trips could not be listed): "
        "one may say it came back since"
    )


def test_a_function_s_event_back_since_on_one_trip_is_back_since_whatever_another_trip_holds() -> None:
    # GIVEN a function's event: one trip of it says the runs re-drove it since, another is unreadable
    sent = [Sent("event-1", None, FUNCTION)]
    observation = Observation(
        seen={},
        now=SENT_AT + 7_200,
        windows={FUNCTION: 600},
        dead_letter_kinds={FUNCTION: SourceKind.FUNCTION},
        back_since={"event-1": SENT_AT + 900},
        unreadable={"event-1": "its trips could not be listed"},
    )

    [judged] = judge(sent, SENT_AT, observation).judged

    # THEN what was read says enough: it came back
    assert judged.fate is Fate.BACK_SINCE


def test_a_refused_message_purged_from_the_parking_lot_is_not_consumed() -> None:
    # GIVEN two sent, one consumed and one the kit refused (parked, then purged): both nowhere
    sent = [Sent("a", None, SOURCE), Sent("b", None, SOURCE)]
    observation = Observation(
        seen={}, now=SENT_AT + 7_200, windows={SOURCE: 600}, held={SOURCE: EMPTY}, ok_verdicts=1, refused=1
    )

    outcome = judge(sent, SENT_AT, observation)

    # THEN neither is called consumed: either may be the refused one
    assert [j.fate for j in outcome.judged] == [Fate.MAYBE_REFUSED] * 2
    assert "refused 1 of the replay's messages and 1 of them are not back" in explain(
        outcome.judged[0], outcome
    )


def test_a_refusal_found_back_leaves_the_rest_consumed() -> None:
    sent = [Sent("a", None, SOURCE), Sent("b", "fp-a", SOURCE)]
    seen = {"b": Seen(Where.PARKING_LOT, "fp-a", "terminal", sent_since=True)}
    observation = Observation(
        seen=seen, now=SENT_AT + 7_200, windows={SOURCE: 600}, held={SOURCE: EMPTY}, ok_verdicts=1, refused=1
    )

    outcome = judge(sent, SENT_AT, observation)

    assert [j.fate for j in outcome.judged] == [Fate.CONSUMED, Fate.PARKED]


def test_a_function_s_event_is_not_consumed_while_a_record_of_it_came_back_without_its_payload() -> None:
    sent = [Sent("event-1", None, FUNCTION)]
    base = Observation(
        seen={},
        now=SENT_AT + 7_200,
        windows={FUNCTION: 600},
        dead_letter_kinds={FUNCTION: SourceKind.FUNCTION},
    )

    clean = judge(sent, SENT_AT, base)
    dropped = judge(sent, SENT_AT, replace(base, unrecognised={FUNCTION: 1}))

    assert clean.judged[0].fate is Fate.NOT_BACK_INVOKED
    assert dropped.judged[0].fate is Fate.MAYBE_REFUSED
    assert "came back since without their payload" in explain(dropped.judged[0], dropped)


def test_back_with_the_same_or_a_new_fingerprint_or_none() -> None:
    sent = [Sent("a", "fp-a", SOURCE), Sent("b", "fp-a", SOURCE), Sent("c", None, SOURCE)]
    seen = {"a": Seen(Where.DLQ, "fp-a"), "b": Seen(Where.DLQ, "fp-b"), "c": Seen(Where.DLQ, None)}

    outcome = judge(sent, SENT_AT, Observation(seen=seen, now=SENT_AT + 60))

    assert [j.fate for j in outcome.judged] == [Fate.BACK_SAME, Fate.BACK_NEW, Fate.BACK_UNCLASSIFIED]


def test_past_the_window_with_an_empty_source_consumed_before_it_too_early_to_tell() -> None:
    sent = [Sent("a", None, SOURCE)]
    empty = {SOURCE: EMPTY}

    early = judge(sent, SENT_AT, Observation(seen={}, now=SENT_AT + 599, windows={SOURCE: 600}, held=empty))
    late = judge(sent, SENT_AT, Observation(seen={}, now=SENT_AT + 900, windows={SOURCE: 600}, held=empty))

    assert early.judged[0].fate is Fate.TOO_EARLY and early.judged[0].back_by == SENT_AT + 600
    assert late.line() == "1 sent: 1 not back after 15m, its source queue empty (consumed)"


def test_a_message_that_may_wait_in_its_source_says_what_the_source_holds() -> None:
    sent = [Sent("a", None, SOURCE)]
    holding = Observation(
        seen={},
        now=SENT_AT + 7_200,
        windows={SOURCE: 600},
        held={SOURCE: QueueDepth(SOURCE, 1, 2, 0, 345_600)},
    )
    unread = Observation(seen={}, now=SENT_AT + 7_200, windows={SOURCE: 600})

    waiting, unknown = judge(sent, SENT_AT, holding), judge(sent, SENT_AT, unread)

    assert waiting.line() == "1 sent: 1 not back after 120m (may still be waiting in its source queue)"
    assert explain(waiting.judged[0], waiting) == (
        "sent to its source queue at 08:00Z, not in the DLQ nor parked since; its source queue still "
        "holds 3 message(s) (1 visible, 2 in flight, 0 delayed), so it may be waiting there"
    )
    assert unknown.judged[0].fate is Fate.WAITING
    assert "what its source queue holds could not be read" in explain(unknown.judged[0], unknown)


def test_an_empty_source_past_its_retention_may_have_expired_there() -> None:
    sent = [Sent("a", None, SOURCE)]
    observation = Observation(
        seen={},
        now=SENT_AT + 90_000,
        windows={SOURCE: 600},
        held={SOURCE: QueueDepth(SOURCE, 0, 0, 0, 86_400)},
    )

    outcome = judge(sent, SENT_AT, observation)

    assert outcome.judged[0].fate is Fate.GONE
    assert "consumed, or deleted there by SQS unconsumed" in explain(outcome.judged[0], outcome)


def test_an_incomplete_scan_past_the_window_is_not_consumed() -> None:
    sent = [Sent("a", None, SOURCE)]
    observation = Observation(
        seen={}, now=SENT_AT + 900, windows={SOURCE: 600}, held={SOURCE: EMPTY}, complete=False
    )

    outcome = judge(sent, SENT_AT, observation)

    assert outcome.judged[0].fate is Fate.TOO_EARLY
    assert "it may be back, in flight" in explain(outcome.judged[0], outcome)


def test_a_copy_that_never_left_is_not_sent_yet_and_keeps_a_verdict_from_vouching() -> None:
    sent = [Sent("a", None, SOURCE), Sent("b", None, SOURCE)]
    seen = {"a": Seen(Where.PARKING_LOT, sent_since=False)}

    outcome = judge(sent, SENT_AT, Observation(seen=seen, now=SENT_AT, ok_verdicts=1))

    # The one "ok" may be a's copy that arrived (its delete failed): b is not vouched for.
    assert [j.fate for j in outcome.judged] == [Fate.NOT_SENT_YET, Fate.WAITING]
