"""A DLQ of another kind, decided with no AWS: its sources parsed from the setting, each dead letter
routed to the one source it belongs to, counted under the same identity whatever record holds it,
backed off in the DLQ, parked with the source's error, and its target judged by its own metrics."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqs_redriver.core.breaker import Breaker, BreakerPolicy, Mode
from sqs_redriver.core.message import track
from sqs_redriver.core.table import ParkCause
from sqs_redriver.protocol.dead_letters import Cause, DeadLetter
from sqs_redriver.protocol.envelope import DlqMessage, invocation_trip
from sqs_redriver.protocol.mark import Mark
from sqs_redriver.protocol.sources import (
    ConsumerBreaker,
    DeadLetterSource,
    Retries,
    SourceKind,
    TargetKind,
    read_sources,
    sources_json,
)
from sqs_redriver.protocol.wire import Rejection
from sqs_redriver.runtime.consumer_health import Health, QueueActivity, health
from sqs_redriver.runtime.consumer_metrics import source_minute
from sqs_redriver.runtime.errors import ConfigError
from sqs_redriver.runtime.plan import BatchPlan, BatchState, Planner, PlanRules
from sqs_redriver.runtime.report import Tally
from sqs_redriver.runtime.routing import Routes
from sqs_redriver.runtime.settings import load_settings

NOW = 1_800_000_000
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:orders"
OTHER_FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:payments"
RULE = "arn:aws:events:us-east-1:123456789012:rule/orders-placed"
ORDERS = DeadLetterSource(SourceKind.FUNCTION, FUNCTION, TargetKind.FUNCTION, FUNCTION, Retries(3, 960))
PAYMENTS = DeadLetterSource(
    SourceKind.FUNCTION, OTHER_FUNCTION, TargetKind.FUNCTION, OTHER_FUNCTION, Retries(3, 960)
)
RULE_TARGET = DeadLetterSource(
    SourceKind.RULE_TARGET, RULE, TargetKind.FUNCTION, FUNCTION, target_id="orders"
)
POLICY = BreakerPolicy(failure_threshold=3, cooldown_seconds=60, success_threshold=2, failure_ratio=0.5)


def dead_letter_message(
    payload: str | None, source: DeadLetterSource | None = ORDERS, *, body: str = "{}", **fields: object
) -> DlqMessage:
    dead_letter = DeadLetter(source, payload, **fields)  # type: ignore[arg-type]
    sent = str((NOW - 3600) * 1000)
    return DlqMessage(
        f"m-{body}-{payload}", "rh", body, system_attributes={"SentTimestamp": sent}, dead_letter=dead_letter
    )


def plan(batch: list[DlqMessage], recorded: dict[str, Mark] | None = None) -> BatchPlan:
    rules = PlanRules(
        max_redrive_count=3,
        fifo=False,
        canary_size=1,
        base_delay_seconds=60,
        max_delay_seconds=900,
        breaker=POLICY,
        routes=Routes((ORDERS.address, PAYMENTS.address)),
        waits_in_dlq=True,
    )
    state = BatchState(Mode.REDRIVE, Breaker(), Tally(received=len(batch)), NOW)
    return Planner(rules, random.Random(7)).plan(track(batch, recorded or {}, NOW), state)


# -- the setting --------------------------------------------------------------------------------


def test_sources_written_by_the_construct_read_back_the_same() -> None:
    breaker = ConsumerBreaker("circuits", "orders-downstream", recovery_timeout_seconds=45)
    sources = (replace(ORDERS, breaker=breaker), RULE_TARGET)

    assert read_sources(sources_json(sources)) == sources


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ('[{"kind": "sqs"}]', "DEAD_LETTER_SOURCES[0].kind"),
        ('[{"kind": "sns", "target_kind": "states"}]', "DEAD_LETTER_SOURCES[0].target_kind"),
        ('{"kind": "lambda"}', "DEAD_LETTER_SOURCES"),
        (sources_json([replace(ORDERS, target_arn=RULE)]), "DEAD_LETTER_SOURCES[0].target_arn"),
        (
            sources_json([replace(ORDERS, breaker=ConsumerBreaker("circuits", "c", sort_key_attr="sk"))]),
            "DEAD_LETTER_SOURCES[0].breaker.static_pk_value",
        ),
    ],
)
def test_a_source_that_is_not_valid_is_refused_naming_the_field(document: str, field: str) -> None:
    with pytest.raises(Rejection) as refused:
        read_sources(document)

    assert refused.value.field == field


@settings(max_examples=200)
@given(st.text(max_size=200))
def test_any_setting_text_gives_sources_or_a_rejection(text: str) -> None:
    try:
        read_sources(text)
    except Rejection:
        pass


# -- identity, routing, parking -----------------------------------------------------------------


def test_a_function_event_back_in_a_new_record_is_the_same_event_counted_under_its_request_id() -> None:
    first = dead_letter_message('{"order": 7}', body="a", request_id="a")
    again = dead_letter_message('{"order": 7}', body="b", request_id="b")
    other_function = dead_letter_message('{"order": 7}', PAYMENTS, body="c", request_id="a")

    assert first.content_identity == again.content_identity != other_function.content_identity
    # each is counted under its own trip: only the one whose request id a re-drive got continues a count
    assert len({first.record_key, again.record_key, other_function.record_key}) == 3
    assert first.record_key == invocation_trip(first.content_identity, "a")
    assert not first.has_room_for_mark


def test_a_dead_letter_of_a_target_that_answers_in_the_call_is_counted_per_dlq_message() -> None:
    first = dead_letter_message('{"order": 7}', RULE_TARGET, body="a")
    again = dead_letter_message('{"order": 7}', RULE_TARGET, body="b")

    assert first.content_identity == again.content_identity and first.record_key != again.record_key


def test_each_dead_letter_is_routed_to_its_own_source_and_never_to_a_default() -> None:
    routes = Routes((ORDERS.address, PAYMENTS.address))
    tracked = track(
        [
            dead_letter_message("1", PAYMENTS),
            dead_letter_message("2", None),
            dead_letter_message("3", RULE_TARGET),
        ],
        {},
        NOW,
    ).unique

    assert [routes.source_url(t) for t in tracked] == [PAYMENTS.address, None, None]


def test_a_dropped_payload_is_parked_as_unreplayable_with_the_source_s_error() -> None:
    cause = Cause("RetriesExhausted", "the function failed")
    result = plan([dead_letter_message(None, cause=cause, request_id="r-1")])

    [park] = result.park
    assert park.reason.cause is ParkCause.UNREPLAYABLE
    assert park.reason.why == (
        "its source dropped the payload (request r-1): nothing to deliver again; "
        "source's error RetriesExhausted: the function failed"
    )
    assert not result.redrive


def test_a_record_that_cannot_be_read_is_parked_naming_the_field() -> None:
    problem = Rejection("requestContext.functionArn", "is missing")
    result = plan([dead_letter_message(None, None, problem=problem)])

    [park] = result.park
    assert park.reason.cause is ParkCause.UNREPLAYABLE
    assert "requestContext.functionArn is missing" in park.reason.why


def test_a_dead_letter_of_no_configured_source_is_parked_naming_what_it_claimed() -> None:
    claimed = f"{RULE}|{FUNCTION}"
    [park] = plan([dead_letter_message("{}", RULE_TARGET, origin=claimed)]).park

    assert park.reason.cause is ParkCause.UNKNOWN_SOURCE
    assert park.reason.why == f"its dead letter names no configured source (it names {claimed})"


def test_a_dead_letter_that_names_no_source_at_all_is_parked_saying_so() -> None:
    [park] = plan([dead_letter_message("{}", None)]).park

    assert park.reason.why == "its dead letter names no configured source (it names none)"


def test_poison_at_its_limit_is_parked_with_the_function_s_error() -> None:
    message = dead_letter_message('{"order": 1}', cause=Cause("ValueError", "no such product"))
    recorded = {message.record_key: Mark(message.content_identity, count=3, first_failed_at=NOW - 7200)}

    [park] = plan([message], recorded).park

    assert park.reason.cause is ParkCause.OVER_LIMIT
    assert park.reason.why.endswith("source's error ValueError: no such product")
    assert park.reason.source_queue == FUNCTION


# -- backoff ------------------------------------------------------------------------------------


def test_every_backoff_step_is_waited_out_in_the_dlq_and_sent_with_no_delay() -> None:
    due = dead_letter_message('{"order": 1}', body="due")
    waiting = dead_letter_message('{"order": 2}', body="waiting")
    recorded = {
        waiting.record_key: Mark(
            waiting.content_identity, count=2, first_failed_at=NOW - 600, redriven_at=(NOW - 30,)
        )
    }

    result = plan([due, waiting], recorded)

    assert [(r.tracked.message.body, r.delay_seconds) for r in result.redrive] == [("due", 0)]
    [hold] = result.hold
    assert hold.tracked.message.body == "waiting" and 0 < hold.seconds <= 240


# -- the target's health by its own metrics -----------------------------------------------------


def test_a_function_failing_every_invocation_is_down_and_one_succeeding_is_healthy() -> None:
    failing = source_minute(SourceKind.FUNCTION, NOW, {"taken": 30, "failed": 30, "throttles": 0})
    working = source_minute(SourceKind.FUNCTION, NOW + 60, {"taken": 30, "failed": 2})
    start = NOW - NOW % 60

    down = QueueActivity(FUNCTION, start, start + 180, (replace(failing, at=start),))
    up = QueueActivity(
        FUNCTION, start, start + 180, (replace(failing, at=start), replace(working, at=start + 60))
    )

    assert health(down, since=start).health is Health.DOWN
    assert health(up, since=start).health is Health.HEALTHY


@given(taken=st.integers(0, 10_000), failed=st.integers(0, 10_000), delivered=st.integers(0, 10_000))
def test_a_source_minute_never_counts_more_processed_than_taken(
    taken: int, failed: int, delivered: int
) -> None:
    for kind, sums in (
        (SourceKind.FUNCTION, {"taken": taken, "failed": failed}),
        (SourceKind.SUBSCRIPTION, {"delivered": delivered, "failed": failed}),
    ):
        minute = source_minute(kind, NOW, sums)
        assert 0 <= minute.deleted <= minute.received


def test_a_topic_minute_with_failures_alone_is_a_failing_one() -> None:
    minute = source_minute(SourceKind.SUBSCRIPTION, NOW, {"failed": 4})

    assert (minute.received, minute.deleted) == (4, 0)


def test_consumer_verdicts_are_refused_for_a_dlq_of_another_kind() -> None:
    env = {
        "DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq",
        "PARKING_LOT_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/orders-parking-lot",
        "DYNAMODB_TABLE_NAME": "state",
        "DEAD_LETTER_SOURCES": sources_json([ORDERS]),
        "CONSUMER_VERDICTS": "true",
    }

    with pytest.raises(ConfigError, match="CONSUMER_VERDICTS=true"):
        load_settings(env)
    assert load_settings({**env, "CONSUMER_VERDICTS": "false"}).dead_letter_sources == (ORDERS,)


def test_a_raw_message_s_attributes_are_part_of_its_identity() -> None:
    plain = dead_letter_message("order shipped", attributes={})
    tagged = dead_letter_message(
        "order shipped", attributes={"tenant": {"DataType": "String", "StringValue": "a"}}
    )

    assert plain.content_identity != tagged.content_identity
