"""The editable document: what it renders parses back the same, any text is a message or a
DocumentError naming the field, and SQS's limits (with room for the mark) are held before a send."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqs_redriver.console.editing import (
    MAX_EDITED_ATTRIBUTES,
    MAX_EDITED_BYTES,
    Edited,
    changed,
    check_limits,
    diff,
    parse,
    render,
)
from sqs_redriver.console.errors import DocumentError, Unchanged
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE

ORIGINAL = Edited('{"order": 7, "items": []}', {"tenant": {"DataType": "String", "StringValue": "acme"}})

sqs_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffe\uffff\x00"), min_size=1
).filter(lambda t: all(c in "\t\n\r" or ord(c) >= 0x20 for c in t))
names = st.from_regex(r"[A-Za-z0-9_-]([A-Za-z0-9_-]|\.[A-Za-z0-9_-]){0,20}", fullmatch=True).filter(
    lambda n: not n.lower().startswith(("aws.", "amazon.")) and n != MARK_ATTRIBUTE
)
values = st.one_of(
    sqs_text.map(lambda t: {"DataType": "String", "StringValue": t}),
    st.integers(-(10**20), 10**20).map(lambda n: {"DataType": "Number", "StringValue": str(n)}),
    st.binary(min_size=1, max_size=20).map(lambda b: {"DataType": "Binary.raw", "BinaryValue": b}),
)
json_objects = st.dictionaries(
    st.text(max_size=8), st.integers() | st.text(max_size=8) | st.lists(st.integers(), max_size=3), max_size=5
)
# JSON bodies as senders write them: compact or indented, characters escaped or not.
json_bodies = st.builds(
    json.dumps, json_objects, indent=st.sampled_from([None, 2]), ensure_ascii=st.booleans()
)
messages = st.builds(
    Edited,
    body=st.one_of(sqs_text, json_bodies),
    attributes=st.dictionaries(names, values, max_size=MAX_EDITED_ATTRIBUTES),
)


@given(messages)
def test_a_rendered_message_parses_back_to_itself(message: Edited) -> None:
    assert parse(render(message), message) == message


@given(st.text())
def test_any_text_is_a_message_or_a_document_error(text: str) -> None:
    try:
        parse(text, ORIGINAL)
    except DocumentError as error:
        assert error.field and error.problem


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=15,
)


@given(json_values)
def test_any_json_as_body_or_attributes_is_a_message_or_a_document_error(value: Any) -> None:
    for document in ({"body": value}, {"body": {"order": 1}, "attributes": value}):
        try:
            parse(json.dumps(document, allow_nan=True), ORIGINAL)
        except DocumentError as error:
            assert error.field.startswith(("document", "body", "attributes"))


@given(st.integers(MAX_EDITED_ATTRIBUTES + 1, 30))
def test_more_attributes_than_leave_room_for_the_mark_are_refused(count: int) -> None:
    attributes = {f"a{n}": {"DataType": "String", "StringValue": "v"} for n in range(count)}
    with pytest.raises(DocumentError) as refused:
        parse(json.dumps({"body": {"order": 7}, "attributes": attributes}), ORIGINAL)
    assert refused.value.field == "attributes" and f"at most {MAX_EDITED_ATTRIBUTES}" in str(refused.value)


@settings(deadline=None, max_examples=50)
@given(st.integers(-20, 20), st.integers(1, 100), st.sampled_from(["x", "é", "\U0001f4a5"]))
def test_a_message_is_refused_exactly_when_it_leaves_no_room_for_the_mark(
    off_by: int, attribute_bytes: int, char: str
) -> None:
    # GIVEN a body of multi-byte characters and an attribute, together near the limit
    attributes = {"big": {"DataType": "String", "StringValue": "y" * attribute_bytes}}
    room = MAX_EDITED_BYTES - len("big") - len("String") - attribute_bytes + off_by
    body = char * (room // len(char.encode("utf-8")))
    message = Edited(body, attributes)
    # WHEN the limits are checked; THEN a message is refused exactly when it is over, naming the field
    try:
        check_limits(message)
        assert message.size <= MAX_EDITED_BYTES
    except DocumentError as refused:
        body_alone_over = len(body.encode("utf-8")) > MAX_EDITED_BYTES
        assert message.size > MAX_EDITED_BYTES
        assert refused.field == ("body" if body_alone_over else "attributes")


def test_a_body_too_large_alone_is_refused_naming_the_body() -> None:
    with pytest.raises(DocumentError) as refused:
        parse(json.dumps({"body": {"note": "x" * MAX_EDITED_BYTES}}), ORIGINAL)
    assert refused.value.field == "body"


def one_attribute(name: str, **entry: str) -> str:
    return json.dumps({"body": {}, "attributes": {name: entry}})


STRING = "String"


@pytest.mark.parametrize(
    ("document", "field", "problem"),
    [
        ("{oops", "document", "not valid JSON"),
        ('{"body": {"a": NaN}}', "document", "NaN is not JSON"),
        ('{"body": {"a": 1e999}}', "document", "too large"),
        ('{"body": {"a": 1}, "body": {"a": 2}}', "document", "given twice"),
        ('{"body": {}, "extra": 1}', "document", '"extra"'),
        ('{"attributes": {}}', "document", "no body"),
        ('{"body": "{not json"}', "body", "must stay one"),
        ('{"body": 7}', "body", "object or array"),
        (one_attribute("a", DataType=STRING, StringValue="\x00"), 'attributes."a".StringValue', "U+0000"),
        ('{"body": {}, "attributes": []}', "attributes", "must be an object"),
        (one_attribute("AWS.x", DataType=STRING, StringValue="v"), 'attributes."AWS.x"', "reserved"),
        (one_attribute("a..b", DataType=STRING, StringValue="v"), 'attributes."a..b"', "period"),
        (one_attribute("a b", DataType=STRING, StringValue="v"), 'attributes."a b"', "a name is"),
        (
            one_attribute(MARK_ATTRIBUTE, DataType=STRING, StringValue="v"),
            f'attributes."{MARK_ATTRIBUTE}"',
            "mark",
        ),
        (one_attribute("a", DataType="Text", StringValue="v"), 'attributes."a".DataType', "String, Number"),
        (
            one_attribute("a", DataType="Number", StringValue="ten"),
            'attributes."a".StringValue',
            "not a number",
        ),
        (one_attribute("a", DataType=STRING, StringValue=""), 'attributes."a".StringValue', "non-empty"),
        (one_attribute("a", DataType="Binary", BinaryValue="%%"), 'attributes."a".BinaryValue', "base64"),
        (one_attribute("a", DataType=STRING, BinaryValue="AA=="), 'attributes."a"', '"StringValue" only'),
    ],
)
def test_a_document_sqs_would_refuse_is_refused_naming_the_field(
    document: str, field: str, problem: str
) -> None:
    with pytest.raises(DocumentError) as refused:
        parse(document, ORIGINAL)
    assert refused.value.field == field and problem in refused.value.problem


def test_a_text_body_may_become_json_and_an_empty_one_is_refused() -> None:
    text = Edited("plain words", {})
    assert parse('{"body": {"now": "json"}}', text).body == '{"now":"json"}'
    with pytest.raises(DocumentError, match="body: is empty"):
        parse('{"body": ""}', text)
    with pytest.raises(DocumentError, match="body: holds U\\+0000"):
        parse('{"body": "a\\u0000"}', text)


def test_an_unchanged_json_body_keeps_its_own_spacing_and_a_changed_one_is_compact() -> None:
    spaced = Edited('{ "a" : 1.50 }', {})
    assert parse('{"body": {"a": 1.5}}', spaced).body == '{ "a" : 1.50 }'
    assert parse('{"body": {"a": 2}}', spaced).body == '{"a":2}'


def test_no_change_is_said_and_nothing_else_is_unchanged() -> None:
    with pytest.raises(Unchanged, match="no change: nothing sent"):
        changed(render(ORIGINAL), ORIGINAL)
    assert (
        changed(render(ORIGINAL).replace("acme", "globex"), ORIGINAL).attributes["tenant"]["StringValue"]
        == "globex"
    )


def test_the_diff_shows_what_changed_line_by_line() -> None:
    after = render(Edited('{"order": 8, "items": []}', ORIGINAL.attributes))
    lines = diff(render(ORIGINAL), after).splitlines()
    assert lines[:2] == ["--- before", "+++ after"]
    assert '-    "order": 7,' in lines and '+    "order": 8,' in lines
    assert not [line for line in lines if "acme" in line and line[:1] in "+-"]
