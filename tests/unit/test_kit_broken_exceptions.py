"""Exceptions that will not describe themselves: their text, class, fingerprint and kind are still
known (a placeholder where they refuse), so the kit can dead-letter them; and classify, for any
exception and any predicates, answers a kind and never raises."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from sqs_redriver.kit import Classifier, TransientError, fingerprint
from sqs_redriver.kit.classify import TRANSIENT_ERROR_CODES, error_class, exception_text
from sqs_redriver.protocol.failure import FailureKind
from tests.support.broken_exceptions import Nameless

TERMINAL, TRANSIENT = FailureKind.TERMINAL, FailureKind.TRANSIENT


class Unprintable(ValueError):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


class NotAString(Exception):
    def __str__(self) -> Any:
        return 42


class Refuses:
    def __str__(self) -> str:
        raise RuntimeError("the argument will not print")


class Anonymous(Exception, metaclass=Nameless):
    pass


class LyingCause(Exception):
    @property  # type: ignore[override]
    def __cause__(self) -> BaseException | None:
        raise RuntimeError("no cause")


class SneakyText(str):
    def __len__(self) -> int:
        raise RuntimeError("a str subclass that lies")


class SubclassText(Exception):
    def __str__(self) -> str:
        return SneakyText("password=hunter2")


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (Unprintable("x"), "<unprintable Unprintable>"),
        (NotAString(), "<unprintable NotAString>"),
        (ValueError(Refuses()), "<unprintable ValueError>"),
        (Anonymous("plain text"), "plain text"),
        (Anonymous(), "exception"),
        (KeyError(), "KeyError"),
        (SubclassText(), "password=hunter2"),
    ],
)
def test_the_text_of_an_exception_that_will_not_print_is_a_placeholder(exc: Exception, text: str) -> None:
    described = exception_text(raised(exc))

    assert described == text
    assert type(described) is str  # never a str subclass with methods of its own


def test_a_class_that_will_not_give_its_name_is_named_by_a_placeholder() -> None:
    assert error_class(Anonymous()) == f"{__name__}.exception"


@pytest.mark.parametrize(
    "exc", [Unprintable("x"), NotAString(), ValueError(Refuses()), Anonymous(), LyingCause()]
)
def test_an_exception_that_will_not_print_has_a_stable_fingerprint(exc: Exception) -> None:
    first, second = raised(exc), raised(exc)

    assert fingerprint(first) == fingerprint(second)
    assert len(fingerprint(first)) == 16


def test_lone_surrogates_in_exception_text_still_fingerprint() -> None:
    assert len(fingerprint(raised(ValueError("bad \udc80 byte")))) == 16


def test_the_fingerprint_does_not_change_with_the_secret_in_the_text() -> None:
    def fail(token: str) -> BaseException:
        return raised(PermissionError(f"rejected Authorization: Bearer {token}"))

    assert fingerprint(fail("eyJhbGciOi.first")) == fingerprint(fail("eyJzdWIiOi.second"))


@pytest.mark.parametrize("exc", [Unprintable("x"), Anonymous(), LyingCause(), NotAString()])
def test_classify_judges_an_exception_that_will_not_print(exc: Exception) -> None:
    assert Classifier.of().classify(exc) is TERMINAL
    assert Classifier.of(transient=[type(exc)]).classify(exc) is TRANSIENT


# --- classify, for any exception and any predicates ------------------------------------------

responses = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=20), children, max_size=3)
    ),
    max_leaves=8,
) | st.fixed_dictionaries(
    {
        "Error": st.fixed_dictionaries({"Code": st.sampled_from(["Throttling", "AccessDenied", 7, None])}),
        "ResponseMetadata": st.fixed_dictionaries(
            {"HTTPStatusCode": st.sampled_from([503, 400, "500", None])}
        ),
    }
)


def client_error_with(response: Any) -> ClientError:
    error = ClientError({"Error": {"Code": "X"}}, "Operation")
    error.response = response
    return error


def raising(_: BaseException) -> FailureKind | None:
    raise RuntimeError("a broken predicate")


exceptions = st.one_of(
    st.builds(client_error_with, responses),
    st.sampled_from(
        [Unprintable("x"), Anonymous(), LyingCause(), NotAString(), TimeoutError(), KeyError("k")]
    ),
    st.builds(TransientError, st.text(max_size=10)),
)
predicates = st.lists(
    st.sampled_from(
        [
            raising,
            lambda _: "terminal",
            lambda _: "not a kind",
            lambda _: 3,
            lambda _: None,
            lambda _: TRANSIENT,
        ]
    ),
    max_size=3,
)


@given(exc=exceptions, cause=st.none() | exceptions, rules=predicates, builtin=st.booleans())
def test_classify_answers_a_kind_for_any_exception_and_any_predicates(
    exc: BaseException, cause: BaseException | None, rules: list[Any], builtin: bool
) -> None:
    if cause is not None and cause is not exc and not isinstance(exc, LyingCause):
        exc.__cause__ = cause

    kind = Classifier.of(predicates=rules, builtin_transient=builtin).classify(exc)

    assert kind in (TERMINAL, TRANSIENT)


@given(response=responses)
def test_a_client_error_is_transient_only_for_a_throttling_code_or_a_5xx_status(response: Any) -> None:
    kind = Classifier.of().classify(client_error_with(response))

    error = response.get("Error") if isinstance(response, dict) else None
    metadata = response.get("ResponseMetadata") if isinstance(response, dict) else None
    code = error.get("Code") if isinstance(error, dict) else None
    status = metadata.get("HTTPStatusCode") if isinstance(metadata, dict) else None
    expected = code in TRANSIENT_ERROR_CODES or (isinstance(status, int) and 500 <= status <= 599)
    assert (kind is TRANSIENT) == expected


def test_a_predicate_that_raises_or_answers_nonsense_has_no_opinion() -> None:
    classifier = Classifier.of(predicates=[raising, lambda _: "not a kind"], transient=[KeyError])

    assert classifier.classify(KeyError("k")) is TRANSIENT
