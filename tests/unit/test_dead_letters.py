"""sqs_redriver.protocol.dead_letters: each AWS dead letter's shape read into a DeadLetter, and
anything else read into one with a problem, never an exception."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqs_redriver.protocol.dead_letters import (
    MAX_CAUSE_CODE_CHARS,
    MAX_CAUSE_MESSAGE_CHARS,
    MAX_DEAD_LETTER_JSON_DEPTH,
    Cause,
    DeadLetter,
    compact_json,
    read_dead_letter,
)
from sqs_redriver.protocol.limits import SQS_MAX_MESSAGE_BYTES
from sqs_redriver.protocol.redact import ELLIPSIS, redact_untrusted
from sqs_redriver.protocol.sources import DeadLetterSource, read_source
from tests.support.dead_letters import (
    FUNCTION_ARN,
    FUNCTION_SOURCE,
    OTHER_FUNCTION_SOURCE,
    OTHER_TOPIC_ARN,
    RAW_SUBSCRIPTION_SOURCE,
    RULE_ARN,
    RULE_TARGET_ARN,
    RULE_TARGET_SOURCE,
    SAMPLE_SOURCES,
    SUBSCRIPTION_SOURCE,
    TOPIC_ARN,
    AwsDeadLetter,
    destination_record,
    function_dlq_message,
    rule_event,
    rule_target_dlq_message,
    subscription_dlq_message,
)

EVENT = {"order_id": "o-17", "items": [{"sku": "café-1", "quantity": 2, "price": 9.5}]}
SUBSCRIPTIONS = (SUBSCRIPTION_SOURCE, RAW_SUBSCRIPTION_SOURCE)
SOURCE_SETS = {
    "one function": (FUNCTION_SOURCE,),
    "two functions": (FUNCTION_SOURCE, OTHER_FUNCTION_SOURCE),
    "a rule target": (RULE_TARGET_SOURCE,),
    "a subscription": (SUBSCRIPTION_SOURCE,),
    "a raw subscription": (RAW_SUBSCRIPTION_SOURCE,),
    "two subscriptions": SUBSCRIPTIONS,
}


def read(letter: AwsDeadLetter, *sources: DeadLetterSource) -> DeadLetter:
    """What the re-driver reads from the message as ReceiveMessage gives it."""
    entry = letter.received()
    return read_dead_letter(entry["Body"], entry.get("MessageAttributes", {}), sources)


def record_with(**fields: Any) -> str:
    """A destination record's body with fields replaced (None: left out)."""
    record = json.loads(destination_record(f"{FUNCTION_ARN}:$LATEST", EVENT).body)
    for name, value in fields.items():
        context, _, key = name.rpartition(".")
        holder = record[context] if context else record
        if value is None:
            holder.pop(key, None)
        else:
            holder[key] = value
    return json.dumps(record)


def problem_field(dead_letter: DeadLetter) -> str:
    assert dead_letter.problem is not None, dead_letter
    assert dead_letter.source is None and dead_letter.payload is None
    return dead_letter.problem.field


# --- a Lambda destination record ------------------------------------------------------------------


@pytest.mark.parametrize("qualifier", [":$LATEST", ":7", ":live", ""])
def test_a_destination_record_goes_back_to_its_function_whatever_the_qualifier(qualifier: str) -> None:
    letter = destination_record(
        FUNCTION_ARN + qualifier, EVENT, request_id="r-1", error_type="ValueError", error_message="no items"
    )

    dead_letter = read(letter, FUNCTION_SOURCE, OTHER_FUNCTION_SOURCE)

    assert dead_letter == DeadLetter(
        source=FUNCTION_SOURCE,
        payload=compact_json(EVENT),
        cause=Cause("ValueError", "no items"),
        request_id="r-1",
        origin=FUNCTION_ARN + qualifier,
    )
    assert dead_letter.replayable


def test_a_destination_records_event_goes_back_compact_with_its_text_and_numbers_as_they_were() -> None:
    dead_letter = read(destination_record(FUNCTION_ARN, EVENT), FUNCTION_SOURCE)

    assert dead_letter.payload == '{"order_id":"o-17","items":[{"sku":"café-1","quantity":2,"price":9.5}]}'


@pytest.mark.parametrize("event", ["just text", 0, [], {}, False])
def test_any_json_event_but_null_goes_back(event: Any) -> None:
    assert read(destination_record(FUNCTION_ARN, event), FUNCTION_SOURCE).payload == json.dumps(event)


def test_a_record_whose_payload_lambda_dropped_keeps_what_is_known_and_nothing_to_replay() -> None:
    letter = destination_record(f"{FUNCTION_ARN}:$LATEST", EVENT, request_id="r-2", dropped=True)

    dead_letter = read(letter, FUNCTION_SOURCE)

    assert dead_letter == DeadLetter(
        source=FUNCTION_SOURCE,
        payload=None,
        cause=Cause("RetriesExhausted", "Unhandled"),
        request_id="r-2",
        origin=f"{FUNCTION_ARN}:$LATEST",
    )
    assert not dead_letter.replayable


def test_a_null_request_payload_is_nothing_to_replay() -> None:
    dead_letter = read_dead_letter(record_with(requestPayload=None), {}, [FUNCTION_SOURCE])

    assert dead_letter.payload is None and dead_letter.problem is None


def test_an_event_too_old_to_run_is_caused_by_its_condition() -> None:
    body = record_with(**{"requestContext.condition": "EventAgeExceeded", "responseContext": None})
    body = json.dumps({**json.loads(body), "responsePayload": None})

    dead_letter = read_dead_letter(body, {}, [FUNCTION_SOURCE])

    assert dead_letter.cause == Cause("EventAgeExceeded")
    assert dead_letter.replayable


def test_an_error_message_without_a_type_is_named_by_the_function_error() -> None:
    body = record_with(responsePayload={"errorMessage": "Process exited before completing request"})

    cause = read_dead_letter(body, {}, [FUNCTION_SOURCE]).cause

    assert cause == Cause("Unhandled", "Process exited before completing request")


@pytest.mark.parametrize("response", ["a string", ["a list"], {"errorType": 7, "errorMessage": ["x"]}, {}])
def test_a_response_that_is_no_error_leaves_the_condition_and_the_function_error(response: Any) -> None:
    cause = read_dead_letter(record_with(responsePayload=response), {}, [FUNCTION_SOURCE]).cause

    assert cause == Cause("RetriesExhausted", "Unhandled")


def test_a_huge_or_broken_error_is_kept_short_and_as_valid_text() -> None:
    body = record_with(
        responsePayload={"errorType": "E" * 5000 + "\ud800", "errorMessage": "\ud800" + "m" * 5000}
    )

    cause = read_dead_letter(body, {}, [FUNCTION_SOURCE]).cause

    assert cause is not None
    assert cause.code == "E" * (MAX_CAUSE_CODE_CHARS - 1) + ELLIPSIS
    assert cause.message == "\ufffd" + "m" * (MAX_CAUSE_MESSAGE_CHARS - 2) + ELLIPSIS


def test_a_record_of_a_function_not_configured_names_it_and_has_no_source() -> None:
    other = "arn:aws:lambda:us-east-1:123456789012:function:shipping:live"

    dead_letter = read(destination_record(other, EVENT), FUNCTION_SOURCE)

    assert dead_letter.source is None and dead_letter.problem is None
    assert dead_letter.origin == other
    assert dead_letter.payload == compact_json(EVENT)


def test_a_source_configured_with_the_qualified_arn_takes_its_records_first() -> None:
    alias = replace(FUNCTION_SOURCE, arn=f"{FUNCTION_ARN}:live", target_arn=f"{FUNCTION_ARN}:live")

    assert read(destination_record(f"{FUNCTION_ARN}:live", EVENT), FUNCTION_SOURCE, alias).source == alias
    assert (
        read(destination_record(f"{FUNCTION_ARN}:7", EVENT), FUNCTION_SOURCE, alias).source == FUNCTION_SOURCE
    )


def test_an_on_success_record_is_not_a_dead_letter() -> None:
    letter = destination_record(FUNCTION_ARN, EVENT, condition="Success")

    assert problem_field(read(letter, FUNCTION_SOURCE)) == "requestContext.condition"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"requestContext": None}, "requestContext"),
        ({"requestContext": ["a list"]}, "requestContext"),
        ({"requestContext.functionArn": None}, "requestContext.functionArn"),
        ({"requestContext.functionArn": 7}, "requestContext.functionArn"),
        (
            {"requestContext.functionArn": "arn:aws:sqs:us-east-1:123456789012:orders"},
            "requestContext.functionArn",
        ),
        ({"requestContext.functionArn": FUNCTION_ARN + ":a:b"}, "requestContext.functionArn"),
        ({"requestContext.requestId": None}, "requestContext.requestId"),
        ({"requestContext.requestId": "r" * 5000}, "requestContext.requestId"),
        ({"requestContext.condition": None}, "requestContext.condition"),
        ({"requestContext.condition": "Retries Exhausted; rm -rf"}, "requestContext.condition"),
        ({"requestPayload": {"text": "\ud800"}}, "requestPayload"),
    ],
)
def test_a_record_with_a_field_that_is_not_lambdas_names_it(fields: dict[str, Any], named: str) -> None:
    dead_letter = read_dead_letter(record_with(**fields), {}, [FUNCTION_SOURCE])

    assert problem_field(dead_letter) == named
    assert "a Lambda destination record" in str(dead_letter.problem)


@pytest.mark.parametrize(
    "body",
    [
        "",
        "not json",
        "[1, 2]",
        '"text"',
        '{"requestContext": NaN}',
        '{"requestPayload": 1e400}',
        "[" * (MAX_DEAD_LETTER_JSON_DEPTH + 1) + "]" * (MAX_DEAD_LETTER_JSON_DEPTH + 1),
        '{"n": ' + "9" * 5000 + "}",
    ],
)
def test_a_body_that_is_no_json_object_is_no_record(body: str) -> None:
    assert problem_field(read_dead_letter(body, {}, [FUNCTION_SOURCE])) == "body"


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    event = {"text": "[" * (MAX_DEAD_LETTER_JSON_DEPTH * 2)}

    assert read(destination_record(FUNCTION_ARN, event), FUNCTION_SOURCE).payload == compact_json(event)


# --- a function's dead-letter queue ---------------------------------------------------------------


def test_a_function_dlq_message_goes_back_unchanged_to_the_one_function() -> None:
    letter = function_dlq_message(EVENT, request_id="r-3", error_code=200, error_message="boom")

    dead_letter = read(letter, FUNCTION_SOURCE)

    assert dead_letter == DeadLetter(
        source=FUNCTION_SOURCE, payload=json.dumps(EVENT), cause=Cause("200", "boom"), request_id="r-3"
    )
    assert dead_letter.payload != compact_json(EVENT)  # as Lambda wrote it, not re-serialised


def test_a_function_dlq_message_with_two_functions_configured_has_no_source() -> None:
    dead_letter = read(function_dlq_message(EVENT), FUNCTION_SOURCE, OTHER_FUNCTION_SOURCE)

    assert dead_letter.source is None and dead_letter.problem is None
    assert dead_letter.payload == json.dumps(EVENT)
    assert dead_letter.origin == ""


@pytest.mark.parametrize(
    ("attributes", "named"),
    [
        ({"RequestID": None}, "MessageAttributes.RequestID"),
        ({"RequestID": {"DataType": "Binary", "BinaryValue": b"r"}}, "MessageAttributes.RequestID"),
        ({"ErrorCode": None}, "MessageAttributes.ErrorCode"),
        ({"ErrorCode": "500"}, "MessageAttributes.ErrorCode"),
        ({"ErrorCode": {"DataType": "Number", "StringValue": 500}}, "MessageAttributes.ErrorCode"),
        ({"ErrorMessage": {"DataType": "Binary", "BinaryValue": b"boom"}}, "MessageAttributes.ErrorMessage"),
        ({"ErrorMessage": {"DataType": "String", "StringValue": "\udfff"}}, "MessageAttributes.ErrorMessage"),
    ],
)
def test_a_function_dlq_message_with_an_attribute_not_lambdas_names_it(
    attributes: dict[str, Any], named: str
) -> None:
    letter = function_dlq_message(EVENT)
    changed = {**letter.attributes, **attributes}
    changed = {name: value for name, value in changed.items() if value is not None}

    dead_letter = read_dead_letter(letter.body, changed, [FUNCTION_SOURCE])

    assert problem_field(dead_letter) == named
    assert "a Lambda dead-letter message" in str(dead_letter.problem)


def test_a_function_dlq_message_whose_body_is_not_json_names_the_body() -> None:
    letter = replace(function_dlq_message(EVENT), body="{not json")

    assert problem_field(read(letter, FUNCTION_SOURCE)) == "body"


def test_a_string_error_code_is_taken_too() -> None:
    letter = function_dlq_message(EVENT)
    attributes = {**letter.attributes, "ErrorCode": {"DataType": "String", "StringValue": "429"}}

    assert read_dead_letter(letter.body, attributes, [FUNCTION_SOURCE]).cause == Cause(
        "429", "RequestId: 5d1f Error: the order has no items"
    )


# --- an EventBridge rule target's dead-letter queue -----------------------------------------------


def test_a_rule_target_dead_letter_goes_back_to_that_target_unchanged() -> None:
    event = rule_event({"order_id": "o-17"})
    letter = rule_target_dlq_message(
        event, error_code="THROTTLING", error_message="Rate exceeded", retry_attempts=185
    )

    dead_letter = read(letter, RULE_TARGET_SOURCE)

    assert dead_letter == DeadLetter(
        source=RULE_TARGET_SOURCE,
        payload=json.dumps(event),
        cause=Cause("THROTTLING", "Rate exceeded"),
        origin=f"{RULE_ARN}|{RULE_TARGET_ARN}",
    )


def test_a_dead_letter_of_another_target_of_the_rule_has_no_source() -> None:
    other_target = "arn:aws:sqs:us-east-1:123456789012:analytics"

    dead_letter = read(rule_target_dlq_message(rule_event({}), target_arn=other_target), RULE_TARGET_SOURCE)

    assert dead_letter.source is None and dead_letter.problem is None
    assert dead_letter.origin == f"{RULE_ARN}|{other_target}"


@pytest.mark.parametrize(
    ("attributes", "named"),
    [
        ({"RULE_ARN": None}, "MessageAttributes.RULE_ARN"),
        ({"RULE_ARN": {"DataType": "String", "StringValue": "orders-placed"}}, "MessageAttributes.RULE_ARN"),
        ({"TARGET_ARN": {"DataType": "Binary", "BinaryValue": b"x"}}, "MessageAttributes.TARGET_ARN"),
        ({"TARGET_ARN": {"DataType": "String"}}, "MessageAttributes.TARGET_ARN"),
        ({"ERROR_CODE": None}, "MessageAttributes.ERROR_CODE"),
        ({"ERROR_MESSAGE": ["a", "list"]}, "MessageAttributes.ERROR_MESSAGE"),
    ],
)
def test_a_rule_target_dead_letter_with_an_attribute_not_eventbridges_names_it(
    attributes: dict[str, Any], named: str
) -> None:
    letter = rule_target_dlq_message(rule_event({}))
    changed = {**letter.attributes, **attributes}
    changed = {name: value for name, value in changed.items() if value is not None}

    assert problem_field(read_dead_letter(letter.body, changed, [RULE_TARGET_SOURCE])) == named


@pytest.mark.parametrize("body", ['"an event?"', "[]", "{"])
def test_a_rule_target_dead_letter_that_is_no_event_names_the_body(body: str) -> None:
    letter = replace(rule_target_dlq_message(rule_event({})), body=body)

    assert problem_field(read(letter, RULE_TARGET_SOURCE)) == "body"


# --- an SNS subscription's dead-letter queue ------------------------------------------------------


def test_a_notification_goes_back_to_its_subscription_as_sns_sent_it() -> None:
    letter = subscription_dlq_message('{"order_id": "o-17"}', attributes={"kind": "order"}, subject="Order")

    dead_letter = read(letter, SUBSCRIPTION_SOURCE)

    assert dead_letter == DeadLetter(source=SUBSCRIPTION_SOURCE, payload=letter.body, origin=TOPIC_ARN)
    assert json.loads(letter.body)["MessageAttributes"] == {"kind": {"Type": "String", "Value": "order"}}


def test_a_raw_delivery_goes_back_with_its_attributes() -> None:
    attributes: dict[str, str | bytes] = {"kind": "order", "signature": b"\x00\xff"}
    letter = subscription_dlq_message("plain text", raw=True, attributes=attributes)

    dead_letter = read(letter, RAW_SUBSCRIPTION_SOURCE)

    assert dead_letter == DeadLetter(
        source=RAW_SUBSCRIPTION_SOURCE,
        payload="plain text",
        attributes={
            "kind": {"DataType": "String", "StringValue": "order"},
            "signature": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
        },
    )


def test_of_several_subscriptions_the_one_of_the_topic_the_envelope_names_is_the_source() -> None:
    refunds = replace(SUBSCRIPTION_SOURCE, arn=f"{OTHER_TOPIC_ARN}:1", topic_arn=OTHER_TOPIC_ARN)
    letter = subscription_dlq_message("refund r-1", topic_arn=OTHER_TOPIC_ARN)

    assert read(letter, SUBSCRIPTION_SOURCE, refunds).source == refunds


def test_of_several_subscriptions_of_one_topic_none_is_the_source() -> None:
    twin = replace(SUBSCRIPTION_SOURCE, arn=f"{TOPIC_ARN}:twin")

    dead_letter = read(subscription_dlq_message("o-17"), SUBSCRIPTION_SOURCE, twin)

    assert dead_letter.source is None and dead_letter.problem is None
    assert dead_letter.origin == TOPIC_ARN


def test_of_several_subscriptions_a_raw_delivery_names_none() -> None:
    dead_letter = read(subscription_dlq_message("o-17", raw=True), *SUBSCRIPTIONS)

    assert dead_letter.source is None and dead_letter.problem is None
    assert dead_letter.payload == "o-17"


def test_a_notification_of_another_topic_is_not_the_subscriptions() -> None:
    letter = subscription_dlq_message("refund r-1", topic_arn=OTHER_TOPIC_ARN)

    assert problem_field(read(letter, SUBSCRIPTION_SOURCE)) == "TopicArn"


@pytest.mark.parametrize(
    "body",
    [
        "plain text",
        json.dumps(
            {"Type": "SubscriptionConfirmation", "TopicArn": TOPIC_ARN, "Message": "m", "MessageId": "1"}
        ),
        json.dumps({"Type": "Notification", "TopicArn": TOPIC_ARN, "MessageId": "1"}),
        json.dumps({"Type": "Notification", "TopicArn": "orders", "Message": "m", "MessageId": "1"}),
    ],
)
def test_without_raw_delivery_a_body_that_is_no_notification_is_named(body: str) -> None:
    dead_letter = read_dead_letter(body, {}, [SUBSCRIPTION_SOURCE])

    assert problem_field(dead_letter) in {"body", "Message", "TopicArn"}
    assert "an SNS dead-letter message" in str(dead_letter.problem)


@pytest.mark.parametrize(
    "attributes",
    [
        {"kind": {"DataType": "Binary", "BinaryValue": "not bytes"}},
        {"kind": {"DataType": "String", "StringValue": b"bytes"}},
        {"kind": {"DataType": "Float", "StringValue": "1.5"}},
        {"kind": {"StringValue": "order"}},
        {"kind": "order"},
        {"bad name!": {"DataType": "String", "StringValue": "x"}},
        {f"a{i}": {"DataType": "String", "StringValue": "x"} for i in range(11)},
    ],
)
def test_a_raw_delivery_with_attributes_sqs_would_not_take_names_them(attributes: dict[str, Any]) -> None:
    dead_letter = read_dead_letter("o-17", attributes, [RAW_SUBSCRIPTION_SOURCE])

    assert problem_field(dead_letter).startswith("MessageAttributes")


# --- any message ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "attributes"),
    [
        (None, {}),
        (b"bytes", {}),
        ("\ud800", {}),
        ("x" * (SQS_MAX_MESSAGE_BYTES + 1), {}),
        ("{}", ["not", "a", "map"]),
    ],
)
def test_what_sqs_never_returns_is_named_for_every_kind(body: Any, attributes: Any) -> None:
    for sources in SOURCE_SETS.values():
        assert problem_field(read_dead_letter(body, attributes, sources)) in {"body", "MessageAttributes"}


def test_a_dead_letter_of_no_configured_source_kind_is_named() -> None:
    assert problem_field(read_dead_letter("{}", {}, [])) == "DEAD_LETTER_SOURCES"


def test_a_cause_describes_itself_in_one_line() -> None:
    assert Cause("ValueError", "no items").describe() == "source's error ValueError: no items"
    assert Cause("RetriesExhausted").describe() == "source's error RetriesExhausted"


def test_the_sample_sources_are_valid_settings() -> None:
    for source in SAMPLE_SOURCES:
        assert read_source(json.loads(json.dumps(source.to_json()))) == source


# --- properties -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
events = json_values.filter(lambda value: value is not None)  # a null event reads as dropped
words = st.text(max_size=60)
texts = st.one_of(st.text(), st.sampled_from(["\ud800", "{", "[" * 300, "x" * 3000]))
attribute_names = st.one_of(
    st.sampled_from(
        [
            "RequestID",
            "ErrorCode",
            "ErrorMessage",
            "RULE_ARN",
            "TARGET_ARN",
            "ERROR_CODE",
            "ERROR_MESSAGE",
            "k",
        ]
    ),
    st.text(max_size=6),
)
attribute_values = st.one_of(
    st.builds(
        lambda data_type, value: {"DataType": data_type, "StringValue": value},
        st.sampled_from(["String", "Number", "Binary", "String.x", "", None]),
        st.one_of(texts, st.sampled_from([FUNCTION_ARN, RULE_ARN, RULE_TARGET_ARN]), st.integers()),
    ),
    st.builds(lambda value: {"DataType": "Binary", "BinaryValue": value}, st.binary(max_size=8)),
    st.none(),
    texts,
    st.integers(),
)
attribute_maps = st.dictionaries(attribute_names, attribute_values, max_size=12)


GENUINE = (
    destination_record(f"{FUNCTION_ARN}:$LATEST", EVENT),
    destination_record(FUNCTION_ARN, EVENT, dropped=True),
    function_dlq_message(EVENT),
    rule_target_dlq_message(rule_event({"order_id": "o-17"})),
    subscription_dlq_message("o-17", attributes={"kind": "order"}),
    subscription_dlq_message("o-17", raw=True, attributes={"kind": "order", "sig": b"\x00"}),
)


@st.composite
def messages(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """AWS's own shapes as they are, with a field of the body or an attribute swapped for
    something else, or any text and attributes at all."""
    genuine = draw(st.sampled_from(GENUINE))
    body, attributes = genuine.body, dict(genuine.attributes)
    change = draw(st.sampled_from(["none", "body field", "nested field", "attribute", "anything"]))
    document = json.loads(body) if body.startswith("{") else {}
    if change == "body field" and document:
        document[draw(st.sampled_from(sorted(document)))] = draw(json_values | texts)
        body = json.dumps(document)
    elif change == "nested field" and "requestContext" in document:
        objects = [
            name for name in ("requestContext", "responseContext", "responsePayload") if name in document
        ]
        nested = document[draw(st.sampled_from(objects))]
        nested[draw(st.sampled_from(sorted(nested)))] = draw(json_values | texts)
        body = json.dumps(document)
    elif change == "attribute":
        attributes[draw(attribute_names)] = draw(attribute_values)
    elif change == "anything":
        body, attributes = draw(texts | json_values.map(json.dumps)), draw(attribute_maps)
    return body, attributes


def assert_well_formed(dead_letter: DeadLetter) -> None:
    """A problem comes alone (no source, no payload); whatever a dead letter holds is valid text
    within its bounds."""
    assert isinstance(dead_letter, DeadLetter)
    if dead_letter.problem is not None:
        assert dead_letter.source is None and dead_letter.payload is None
        str(dead_letter.problem).encode("utf-8")
    if dead_letter.payload is not None:
        dead_letter.payload.encode("utf-8")
    if dead_letter.cause is not None:
        assert len(dead_letter.cause.code) <= MAX_CAUSE_CODE_CHARS
        assert len(dead_letter.cause.message) <= MAX_CAUSE_MESSAGE_CHARS
        dead_letter.cause.describe().encode("utf-8")


@settings(max_examples=200)
@given(message=messages(), sources=st.sampled_from(list(SOURCE_SETS.values())))
def test_any_message_is_read_into_a_dead_letter_never_an_exception(
    message: tuple[str, dict[str, Any]], sources: tuple[DeadLetterSource, ...]
) -> None:
    body, attributes = message
    assert_well_formed(read_dead_letter(body, attributes, sources))


@settings(max_examples=200)
@given(event=events, request_id=st.uuids().map(str), error_type=words, error_message=words)
def test_a_destination_records_event_reads_back_exactly(
    event: Any, request_id: str, error_type: str, error_message: str
) -> None:
    letter = destination_record(
        f"{FUNCTION_ARN}:$LATEST",
        event,
        request_id=request_id,
        error_type=error_type,
        error_message=error_message,
    )

    dead_letter = read(letter, FUNCTION_SOURCE)

    assert dead_letter.payload == compact_json(event)
    assert dead_letter.payload is not None and json.loads(dead_letter.payload) == event
    assert dead_letter.request_id == request_id
    assert dead_letter.replayable


@settings(max_examples=200)
@given(event=json_values, error_code=st.integers(100, 599), error_message=words)
def test_a_function_dlq_messages_event_reads_back_exactly(
    event: Any, error_code: int, error_message: str
) -> None:
    letter = function_dlq_message(event, error_code=error_code, error_message=error_message)

    dead_letter = read(letter, FUNCTION_SOURCE)

    assert dead_letter.payload == json.dumps(event)
    assert dead_letter.cause == Cause(
        str(error_code), redact_untrusted(error_message, MAX_CAUSE_MESSAGE_CHARS)
    )
    assert dead_letter.replayable


@settings(max_examples=200)
@given(
    detail=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    error_code=words,
    retries=st.integers(0, 185),
)
def test_a_rule_target_events_reads_back_exactly(
    detail: dict[str, Any], error_code: str, retries: int
) -> None:
    event = rule_event(detail)

    dead_letter = read(
        rule_target_dlq_message(event, error_code=error_code, retry_attempts=retries), RULE_TARGET_SOURCE
    )

    assert dead_letter.payload == json.dumps(event)
    assert dead_letter.source == RULE_TARGET_SOURCE


@settings(max_examples=200)
@given(
    message=st.text(min_size=1, max_size=200),
    attributes=st.dictionaries(
        st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
        st.text(max_size=20) | st.binary(max_size=20),
        max_size=10,
    ),
    raw=st.booleans(),
)
def test_a_subscriptions_message_reads_back_exactly(
    message: str, attributes: dict[str, str | bytes], raw: bool
) -> None:
    letter = subscription_dlq_message(message, raw=raw, attributes=attributes)

    dead_letter = read(letter, RAW_SUBSCRIPTION_SOURCE if raw else SUBSCRIPTION_SOURCE)

    assert dead_letter.payload == (message if raw else letter.body)
    assert dead_letter.attributes == (letter.attributes if raw else {})
    assert dead_letter.replayable
    if not raw:
        assert json.loads(letter.body)["Message"] == message
