"""sqs_redriver.kit.classify: which failures are terminal, which transient, and which rule wins."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from sqs_redriver.kit import Classifier, TerminalError, TransientError
from sqs_redriver.protocol.failure import FailureKind

TERMINAL, TRANSIENT = FailureKind.TERMINAL, FailureKind.TRANSIENT


class InvalidOrder(Exception):
    pass


class MissingCustomer(InvalidOrder):
    pass


class DownstreamUnavailable(Exception):
    pass


class PaymentDeclined(InvalidOrder):
    pass


def client_error(code: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "x"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op"
    )


def caused(outer: BaseException, cause: BaseException) -> BaseException:
    outer.__cause__ = cause
    return outer


def test_types_the_user_names_are_classified_as_named() -> None:
    rules = Classifier.of(terminal=[InvalidOrder], transient=[DownstreamUnavailable])

    assert rules.classify(InvalidOrder()) is TERMINAL
    assert rules.classify(DownstreamUnavailable()) is TRANSIENT


def test_the_most_specific_class_of_the_mro_wins() -> None:
    rules = Classifier.of(terminal=[InvalidOrder], transient=[PaymentDeclined])

    assert rules.classify(PaymentDeclined()) is TRANSIENT
    assert rules.classify(MissingCustomer()) is TERMINAL  # a subclass inherits its parent's rule


def test_predicates_are_checked_before_types_in_the_order_given() -> None:
    def declined_is_transient(exc: BaseException) -> FailureKind | None:
        return TRANSIENT if "retry" in str(exc) else None

    rules = Classifier.of(terminal=[InvalidOrder], predicates=[declined_is_transient, lambda _: TERMINAL])

    assert rules.classify(InvalidOrder("please retry")) is TRANSIENT
    assert rules.classify(DownstreamUnavailable()) is TERMINAL  # the second predicate


def test_terminal_and_transient_errors_users_raise_are_honoured() -> None:
    rules = Classifier.of(unknown=TRANSIENT)

    assert rules.classify(TerminalError("bad order")) is TERMINAL
    assert rules.classify(TransientError("later")) is TRANSIENT


def test_a_user_subclass_of_the_kit_errors_keeps_their_kind() -> None:
    class OutOfStock(TransientError):
        pass

    assert Classifier.of().classify(OutOfStock()) is TRANSIENT


def test_unknown_errors_are_terminal_by_default_and_transient_when_configured() -> None:
    assert Classifier.of().classify(ValueError()) is TERMINAL
    assert Classifier.of(unknown=TRANSIENT).classify(ValueError()) is TRANSIENT


@pytest.mark.parametrize(
    "exc",
    [
        TimeoutError(),
        ConnectionResetError(),
        ReadTimeoutError(endpoint_url="https://x"),
        ConnectTimeoutError(endpoint_url="https://x"),
        EndpointConnectionError(endpoint_url="https://x"),
        client_error("ThrottlingException"),
        client_error("ProvisionedThroughputExceededException"),
        client_error("SomethingNew", status=503),
    ],
    ids=repr,
)
def test_builtin_rules_make_timeouts_connections_throttling_and_5xx_transient(exc: BaseException) -> None:
    assert Classifier.of().classify(exc) is TRANSIENT


def test_a_client_error_of_the_caller_is_not_transient() -> None:
    assert Classifier.of(unknown=TERMINAL).classify(client_error("ValidationException")) is TERMINAL


def test_builtin_rules_can_be_turned_off() -> None:
    rules = Classifier.of(builtin_transient=False)

    assert rules.classify(TimeoutError()) is TERMINAL
    assert rules.classify(client_error("ThrottlingException")) is TERMINAL


def test_a_user_rule_replaces_the_builtin_rule_for_the_same_class() -> None:
    assert Classifier.of(terminal=[TimeoutError]).classify(TimeoutError()) is TERMINAL


def test_an_unclassified_wrapper_is_classified_by_its_cause() -> None:
    rules = Classifier.of()

    assert rules.classify(caused(ValueError("wrapped"), TimeoutError())) is TRANSIENT
    assert rules.classify(caused(RuntimeError(), caused(KeyError(), TransientError()))) is TRANSIENT


def test_a_classified_wrapper_is_not_overridden_by_its_cause() -> None:
    rules = Classifier.of(terminal=[InvalidOrder])

    assert rules.classify(caused(InvalidOrder(), TimeoutError())) is TERMINAL


def test_an_implicit_context_is_not_a_cause() -> None:
    try:
        try:
            raise TimeoutError
        except TimeoutError:
            raise ValueError("while handling") from None
    except ValueError as exc:
        assert Classifier.of().classify(exc) is TERMINAL


def test_a_cycle_of_causes_ends_in_unknown() -> None:
    first, second = ValueError(), KeyError()
    first.__cause__, second.__cause__ = second, first

    assert Classifier.of(unknown=TRANSIENT).classify(first) is TRANSIENT


def test_a_type_both_terminal_and_transient_is_refused() -> None:
    with pytest.raises(ValueError, match="InvalidOrder"):
        Classifier.of(terminal=[InvalidOrder], transient=[InvalidOrder])


def test_something_other_than_an_exception_class_is_refused() -> None:
    with pytest.raises(TypeError, match="not an exception class"):
        Classifier.of(terminal=[InvalidOrder()])  # type: ignore[list-item]
