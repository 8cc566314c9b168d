"""sqs_redriver.protocol.transient: the default classification of a failure by its words, shared by
the consumer kit and the re-driver (a source's error with no kit)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.kit.classify import Classifier
from sqs_redriver.protocol.failure import FailureKind
from sqs_redriver.protocol.transient import (
    MAX_NORMALIZED_CHARS,
    TRANSIENT_ERROR_CODES,
    normalize_message,
    transient_code,
    transient_words,
)

TRANSIENT = [
    ("DownstreamUnavailable", "mail provider refused alpha.example: Connection refused"),
    ("ConnectionRefusedError", "[Errno 111] Connection refused"),
    ("ConnectionResetError", "[Errno 104] Connection reset by peer"),
    ("Error", "connect ECONNREFUSED 10.0.0.7:5432"),
    ("TimeoutError", ""),
    ("ReadTimeout", "HTTPSConnectionPool(host='api.example', port=443): Read timed out."),
    ("Sandbox.Timedout", "Task timed out after 30.03 seconds"),
    ("ThrottlingException", "Rate exceeded"),
    ("SDK_CLIENT_ERROR", "TooManyRequestsException: Rate Exceeded."),
    ("THROTTLING", ""),
    ("503", ""),
    ("HTTPError", "upstream answered HTTP 502 Bad Gateway"),
    ("PaymentsError", "status code: 504"),
    ("ServiceUnavailable", ""),
    ("ClientError", "An error occurred (ServiceUnavailableException) when calling the Send operation"),
    ("BrokenPipeError", "[Errno 32] Broken pipe"),
]
NOT_TRANSIENT = [
    ("InvalidOrder", "items[0] has quantity 0 and price 1.00"),
    ("KeyError", "'order_id'"),
    ("ValueError", "invalid literal for int() with base 10: 'x'"),
    ("AccessDeniedException", "User is not authorized to perform: sqs:SendMessage"),
    ("400", ""),
    ("200", ""),
    ("SDK_CLIENT_ERROR", "InvalidRequestContentException: Could not parse request body into json"),
    ("RuntimeError", "the runtime output was empty"),
    ("RetriesExhausted", "Unhandled"),
    ("", ""),
]


@pytest.mark.parametrize(("code", "message"), TRANSIENT)
def test_connection_errors_timeouts_throttling_and_5xx_are_named_transient(code: str, message: str) -> None:
    assert transient_words(code, message)


@pytest.mark.parametrize(("code", "message"), NOT_TRANSIENT)
def test_other_errors_and_no_words_at_all_are_not(code: str, message: str) -> None:
    assert not transient_words(code, message)


@given(st.sampled_from(sorted(TRANSIENT_ERROR_CODES)), st.text(max_size=200))
def test_every_transient_aws_code_is_transient_whatever_the_message(code: str, message: str) -> None:
    assert transient_code(code) and transient_words(code, message)


@given(st.text(max_size=300), st.text(max_size=300), st.sampled_from(["connection refused", "Timed Out"]))
def test_the_words_name_it_transient_anywhere_in_the_message_in_any_case(
    before: str, after: str, words: str
) -> None:
    assert transient_words("SomeError", before + " " + words.swapcase() + " " + after)


@given(
    st.one_of(st.text(), st.none(), st.integers(), st.binary()),
    st.one_of(st.text(), st.none(), st.integers()),
)
def test_any_code_and_message_give_an_answer_and_never_raise(code: object, message: object) -> None:
    assert transient_words(code, message) in (True, False)


@given(st.integers(500, 599))
def test_an_http_5xx_status_as_the_code_is_transient_and_4xx_is_not(status: int) -> None:
    assert transient_code(str(status)) and not transient_code(str(status - 100))


@given(st.text(max_size=2_000))
def test_a_normalized_message_is_bounded_and_normalizing_it_again_changes_nothing(message: str) -> None:
    once = normalize_message(message)
    assert len(once) <= MAX_NORMALIZED_CHARS and normalize_message(once) == once


def test_the_kit_and_the_redriver_share_the_aws_codes() -> None:
    throttled = ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "Send")
    assert Classifier.of().classify(throttled) is FailureKind.TRANSIENT
    assert transient_words("ThrottlingException", "Rate exceeded")
