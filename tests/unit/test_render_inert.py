"""Text from messages, consumers and records reaches the terminal inertly: no control character,
escape sequence, bidi override, markup or hyperlink survives, and rendering never fails."""

from __future__ import annotations

import io
import json

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from sqs_redriver.console.cli import render
from sqs_redriver.console.inventory import Where, group, inspect
from sqs_redriver.console.safe_text import inert, inert_str, some
from sqs_redriver.protocol.envelope import MARK_ATTRIBUTE, string_attribute
from sqs_redriver.protocol.failure import Failure, FailureKind
from sqs_redriver.protocol.mark import Mark

NOW = 1_800_000_000
# Every code point, surrogates included (Python strings can hold them; a JSON "\ud800" makes one).
ANY_TEXT = st.text(st.characters(codec=None, categories=None))
HOSTILE = (
    "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 \r over\x08 \x9b2J"
    " \u202eevil\u202c \u200b [/oops] [link=https://evil.example/]x[/link] [bold]b[/bold] :smile:"
)
FORBIDDEN = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))} | {
    "\u061c",
    "\u200e",
    "\u200f",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
}


def rendered(renderable: object, *, width: int = 200) -> str:
    """What a colour terminal would receive."""
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=width)
    console.print(renderable)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(output, str)
    return output


@given(ANY_TEXT)
def test_any_text_made_inert_holds_only_printable_characters(text: str) -> None:
    shown = inert_str(text)

    assert shown.isprintable()
    assert not FORBIDDEN & set(shown)
    assert inert_str(shown) == shown  # once is enough: already inert text is left as it is


@given(ANY_TEXT)
def test_any_text_made_inert_renders_without_a_style_or_a_link_of_its_own(text: str) -> None:
    output = rendered(inert(text, multiline=True))

    assert "\x1b" not in output  # no style, colour or hyperlink: nothing but the text itself
    assert not (FORBIDDEN - {"\n"}) & set(output)


@given(ANY_TEXT)
def test_json_output_is_faithful_and_inert(text: str) -> None:
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=40)

    render.print_json(console, {"body": text})

    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert json.loads(output) == {"body": text}
    assert output.isascii() and not (FORBIDDEN - {"\n"}) & set(output)


def test_escapes_markup_and_hyperlinks_print_as_visible_characters() -> None:
    output = rendered(inert(HOSTILE))

    assert "\x1b" not in output
    assert "\\x1b[31mred\\x1b[0m \\x1b]8;;https://evil.example/\\x07click" in output
    assert "\\r over\\x08 \\x9b2J \\u202eevil\\u202c \\u200b" in output
    assert "[/oops] [link=https://evil.example/]x[/link] [bold]b[/bold] :smile:" in output


def test_a_hostile_group_and_message_render_inertly_in_the_table_and_in_show() -> None:
    # The mark parser refuses a hostile identity or fingerprint (they must match their patterns), so
    # the hostile text travels where a mark may carry any text: the error's class and message.
    failure = Failure(FailureKind.TERMINAL, "Err\x1b[2J[/oops]\u202e", HOSTILE, "fp-1", NOW - 50, 1, "arn")
    raw = {
        "MessageId": "m-\x1b]8;;x\x07",
        "ReceiptHandle": "rh",
        "Body": HOSTILE + "\nsecond line",
        "MessageAttributes": {
            "tenant\x1b[5m": {"DataType": "String", "StringValue": "[link=https://evil.example/]t[/link]"},
            MARK_ATTRIBUTE: string_attribute(Mark("i-1", 1, NOW - 60, failure=failure).to_json()),
        },
        "Attributes": {"SentTimestamp": str(NOW * 1000)},
    }
    item = inspect(raw, Where.PARKING_LOT)

    for view in (render.groups_table(group([item]), NOW, title="t"), render.message_view(item, NOW)):
        output = rendered(view, width=400)
        assert "\x1b]" not in output  # no hyperlink (OSC 8) nor any other OSC
        assert not (FORBIDDEN - {"\n", "\x1b"}) & set(output)
        assert "Err\\x1b[2J[/oops]\\u202e" in output
    shown = rendered(render.message_view(item, NOW), width=400)
    assert "[link=https://evil.example/]t[/link]" in shown and "tenant\\x1b[5m" in shown
    assert "\nsecond line" in shown  # a body keeps its lines


def test_some_names_the_first_few_and_counts_the_rest() -> None:
    assert some(["a", "b"]) == "a, b"
    assert some([str(n) for n in range(12)], shown=3) == "0, 1, 2 and 9 more"
    assert some(["\x1b[1m"]) == "\\x1b[1m"
